/**
 * Token verification ({@code fence.verify}): is a token genuine before it may raise the fence? The seam is
 * {@link io.stockade.proxy.verify.TokenVerifier}; {@code FencePipeline} asks it between parsing the token and the
 * fence advance. Kinds, one sub-package each: {@code hmac} (signed tokens), {@code etcd} (the lock key's create
 * revision), {@code postgres} (the SDK's lease table), {@code kubernetes} (a held Lease's
 * {@code leaseTransitions}), {@code redis} (the token in the value of the lock key); {@code cache} remembers
 * positive verdicts of the lock-service kinds.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify;

import org.jspecify.annotations.NullMarked;
