package io.stockade.proxy.testing;

import java.util.List;
import java.util.Map;

/**
 * One write that a {@link TestUpstream} applied to its store, in the order it applied them.
 *
 * @param path     the raw request path (the store key)
 * @param method   {@code PUT} or {@code DELETE}
 * @param body     the stored body; {@code null} for a DELETE, and for a PUT received in
 *                 {@link TestUpstream#discardBodies(boolean) discard mode}. Do not mutate.
 * @param headers  the request headers, names lower-cased
 * @param seq      1-based position in the upstream's global apply order (across all paths)
 * @param nanoTime {@link System#nanoTime()} when the write was applied
 */
public record AppliedWrite(String path, String method, byte[] body, Map<String, List<String>> headers, long seq,
                           long nanoTime) {

    /** The body as UTF-8 text, or {@code null} when there is none. */
    public String bodyText() {
        return body == null ? null : new String(body, java.nio.charset.StandardCharsets.UTF_8);
    }

    /** The first value of a request header (any case), or {@code null}. */
    public String header(String name) {
        List<String> values = headers.get(name.toLowerCase(java.util.Locale.ROOT));
        return values == null || values.isEmpty() ? null : values.get(0);
    }

    @Override
    public String toString() {
        return "AppliedWrite[#" + seq + " " + method + " " + path
                + (body == null ? "" : " body=" + (body.length <= 64 ? bodyText() : body.length + " bytes")) + "]";
    }
}
