/**
 * {@code ClientTlsFiles}: a policy's {@code tls: {ca, cert, key}} PEM files, read and checked at start.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.tls;

import org.jspecify.annotations.NullMarked;
