package io.stockade.proxy.backend.http;

import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.http.Headers;

/**
 * Which headers a proxy must not pass on (RFC 9110 section 7.6.1): the fixed hop-by-hop set, plus every header
 * the {@code Connection} header names. Framing headers ({@code Content-Length}, {@code Host}, {@code Expect}) are
 * set by the proxy's own client and server, not copied.
 */
final class HopByHop {
    private static final Set<String> FIXED = Set.of(
            "connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
            "te", "trailer", "transfer-encoding", "upgrade",
            "host", "content-length", "expect");

    private HopByHop() {
    }

    /** The lower-case names of the headers of this message that stay on this hop. */
    static Set<String> of(Headers headers) {
        if (!headers.contains(HeaderNames.CONNECTION)) {
            return FIXED; // no copy of the fixed set per message
        }
        Set<String> names = FIXED;
        for (String value : headers.all(HeaderNames.CONNECTION, List::of)) {
            for (String token : value.split(",", -1)) {
                String name = token.trim().toLowerCase(Locale.ROOT);
                if (!name.isEmpty() && !names.contains(name)) {
                    if (names == FIXED) {
                        names = new HashSet<>(FIXED); // copied only for a name beyond the fixed set
                    }
                    names.add(name);
                }
            }
        }
        return names;
    }

    /** The lower-case names of the headers of an upstream's answer that stay on that hop. */
    static Set<String> ofResponse(UpstreamResponse response) {
        Set<String> names = FIXED;
        for (String value : response.all("Connection")) {
            for (String token : value.split(",", -1)) {
                String name = token.trim().toLowerCase(Locale.ROOT);
                if (!name.isEmpty() && !names.contains(name)) {
                    if (names == FIXED) {
                        names = new HashSet<>(FIXED);
                    }
                    names.add(name);
                }
            }
        }
        return names;
    }

    static boolean skip(Set<String> hopByHop, Header header) {
        // HeaderName keeps its lower-case spelling (parsed headers are created with it): no lower-casing per header
        return hopByHop.contains(header.headerName().lowerCase());
    }
}
