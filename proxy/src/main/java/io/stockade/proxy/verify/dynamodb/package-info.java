/**
 * The token verifier of {@code fence.verify} kind {@code dynamodb}: a held DynamoDB lock item.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.dynamodb;

import org.jspecify.annotations.NullMarked;
