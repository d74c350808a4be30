/**
 * The token verifier of {@code fence.verify} kind {@code redis}: the Redis lock key the SDK's Redis provider writes.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.redis;

import org.jspecify.annotations.NullMarked;
