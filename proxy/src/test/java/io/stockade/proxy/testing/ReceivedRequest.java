package io.stockade.proxy.testing;

import java.util.List;
import java.util.Map;

/**
 * One request as a {@link TestUpstream} received it, before any delay, fault or precondition.
 *
 * @param method   the request method
 * @param path     the raw request path
 * @param query    the raw query, or {@code null}
 * @param headers  the request headers, names lower-cased
 * @param nanoTime {@link System#nanoTime()} at receipt
 */
public record ReceivedRequest(String method, String path, String query, Map<String, List<String>> headers,
                              long nanoTime) {

    /** The first value of a request header (any case), or {@code null}. */
    public String header(String name) {
        List<String> values = headers.get(name.toLowerCase(java.util.Locale.ROOT));
        return values == null || values.isEmpty() ? null : values.get(0);
    }
}
