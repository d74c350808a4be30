/**
 * {@code UpstreamClient}: the proxy's HTTP/1.1 client for its upstreams (the http backend, the s3 backend's store),
 * with {@code UpstreamResponse}, {@code UpstreamFailure} and the send watchdog.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.upstream;

import org.jspecify.annotations.NullMarked;
