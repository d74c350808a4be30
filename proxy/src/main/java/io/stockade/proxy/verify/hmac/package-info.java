/**
 * The token verifier of {@code fence.verify} kind {@code hmac}: signed tokens.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.hmac;

import org.jspecify.annotations.NullMarked;
