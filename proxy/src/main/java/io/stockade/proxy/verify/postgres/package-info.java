/**
 * The token verifier of {@code fence.verify} kind {@code postgres}: the SDK's lease table.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.postgres;

import org.jspecify.annotations.NullMarked;
