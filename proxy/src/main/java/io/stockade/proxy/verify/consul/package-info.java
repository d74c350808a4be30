/**
 * The token verifier of {@code fence.verify} kind {@code consul}: a Consul KV key held by a session.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.consul;

import org.jspecify.annotations.NullMarked;
