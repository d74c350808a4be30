/**
 * The HTTP listener's own parts around Helidon's: limits, request framing, body bounds, unread bodies, TLS, the
 * {@code Date} header and pass-through content encodings.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.listener;

import org.jspecify.annotations.NullMarked;
