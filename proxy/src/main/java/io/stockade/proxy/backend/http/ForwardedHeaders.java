package io.stockade.proxy.backend.http;

import java.net.URI;
import java.net.URISyntaxException;
import java.util.Locale;
import java.util.Set;

import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.upstream.UpstreamClient;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.Header;
import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * Which headers cross the proxy, each way: the client's on the upstream request (with the proxy's condition, a
 * COPY's or MOVE's destination and the {@code Forwarded} family added), and the upstream's on the answer (with a
 * {@code Location} into the upstream rewritten to the proxy's path). Hop-by-hop headers stay on their hop
 * ({@link HopByHop}).
 */
final class ForwardedHeaders {
    private static final HeaderName X_FORWARDED_FOR = HeaderNames.create("X-Forwarded-For");
    private static final HeaderName FORWARDED = HeaderNames.create("Forwarded");
    static final HeaderName DESTINATION = HeaderNames.create("Destination");

    /** The upstream's URL. */
    private final URI url;
    /** The path of the upstream URL without a trailing slash (empty for none). */
    private final String basePath;

    ForwardedHeaders(URI url, String basePath) {
        this.url = url;
        this.basePath = basePath;
    }

    /**
     * The client's headers on the upstream request: all but the hop-by-hop ones ({@link HopByHop}), the client's
     * {@code Destination} (replaced by {@code destination}) and, on a conditional write, its {@code If-Match} and
     * {@code If-None-Match} (replaced by the proxy's condition); then {@code X-Forwarded-For},
     * {@code X-Forwarded-Host}, {@code X-Forwarded-Proto} and {@code Forwarded} (RFC 7239) naming the client.
     *
     * @param condition   null for a plain forward, else the version the write is conditional on
     * @param destination the upstream's URL of a COPY's or MOVE's destination, else null
     */
    void toUpstream(ServerRequest req, UpstreamClient.Request upstream, @Nullable String condition,
            @Nullable String destination) {
        Set<String> hop = HopByHop.of(req.headers());
        for (Header header : req.headers()) {
            if (HopByHop.skip(hop, header)) {
                continue;
            }
            if (header.headerName().equals(DESTINATION)) {
                continue; // HttpBackend.plan refused it on any other method; a COPY's or MOVE's is replaced below
            }
            if (condition != null && (header.headerName().equals(HeaderNames.IF_MATCH)
                    || header.headerName().equals(HeaderNames.IF_NONE_MATCH))) {
                continue; // the proxy's condition replaces the client's
            }
            String name = header.name();
            for (String value : header.allValues()) {
                upstream.header(name, value);
            }
        }
        if (destination != null) {
            upstream.header("Destination", destination);
        }
        if (condition != null) {
            if (condition.equals(FenceState.ABSENT)) {
                upstream.header("If-None-Match", "*");
            } else {
                upstream.header("If-Match", condition);
            }
        }
        String peer = req.remotePeer().host();
        String prior = req.headers().first(X_FORWARDED_FOR).orElse(null);
        upstream.header("X-Forwarded-For", prior == null ? peer : prior + ", " + peer);
        String clientHost = req.authority();
        String proto = req.isSecure() ? "https" : "http";
        if (clientHost != null) {
            upstream.header("X-Forwarded-Host", clientHost);
        }
        upstream.header("X-Forwarded-Proto", proto);
        String forwarded = "for=" + quoteForwarded(peer)
                + (clientHost == null ? "" : ";host=" + quoteForwarded(clientHost)) + ";proto=" + proto;
        upstream.header("Forwarded", req.headers().first(FORWARDED).map(f -> f + ", " + forwarded).orElse(forwarded));
    }

    private static String quoteForwarded(String value) {
        // IPv6 addresses and host:port need quoting (RFC 7239 section 6).
        if (value.contains(":")) {
            return "\"" + (value.indexOf(':') != value.lastIndexOf(':') && !value.startsWith("[")
                    ? "[" + value + "]" : value) + "\"";
        }
        return value;
    }

    /** The upstream answer's headers on the client's: all but the hop-by-hop ones, a {@code Location} proxied. */
    void toClient(UpstreamResponse response, ServerResponse res) {
        Set<String> hop = HopByHop.ofResponse(response);
        for (int i = 0; i < response.headerCount(); i++) {
            String name = response.name(i);
            if (!hop.contains(name.toLowerCase(Locale.ROOT))) {
                String value = name.equalsIgnoreCase("Location") ? proxiedLocation(response.value(i))
                        : response.value(i);
                res.header(HeaderNames.create(name), value);
            }
        }
    }

    /**
     * A {@code Location} that points into the upstream (its scheme, host and port, under the URL's path) as the
     * path the client reaches it by through the proxy, as nginx's {@code proxy_redirect default} does: {@code
     * http://127.0.0.1:18901/store/docs/a} behind {@code url: http://127.0.0.1:18901/store} becomes {@code
     * /docs/a}. A path-absolute reference is resolved by the client against the proxy's own address, whatever
     * name and port the client used. Any other value (elsewhere, relative, not a URI) is relayed as it is.
     */
    String proxiedLocation(String location) {
        URI uri;
        try {
            uri = new URI(location);
        } catch (URISyntaxException e) {
            return location;
        }
        String scheme = url.getScheme();
        if (!uri.isAbsolute() || uri.getRawAuthority() == null || !scheme.equalsIgnoreCase(uri.getScheme())
                || uri.getHost() == null || !uri.getHost().equalsIgnoreCase(url.getHost())
                || uri.getRawUserInfo() != null) {
            return location;
        }
        int defaultPort = scheme.equalsIgnoreCase("https") ? 443 : 80;
        int port = uri.getPort() < 0 ? defaultPort : uri.getPort();
        int upstreamPort = url.getPort() < 0 ? defaultPort : url.getPort();
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        if (port != upstreamPort || !(path.equals(basePath) || path.startsWith(basePath + "/"))) {
            return location;
        }
        String rest = path.substring(basePath.length());
        if (rest.startsWith("//") || hasDotSegment(rest)) {
            // "//host/x" would read as another host, "/../x" as another resource: relayed as the upstream sent it
            return location;
        }
        return (rest.isEmpty() ? "/" : rest) + (uri.getRawQuery() == null ? "" : "?" + uri.getRawQuery())
                + (uri.getRawFragment() == null ? "" : "#" + uri.getRawFragment());
    }

    /** Whether a path has a "." or ".." segment, spelled plainly or percent-encoded. */
    private static boolean hasDotSegment(String path) {
        for (String segment : path.split("/", -1)) {
            String s = segment.toLowerCase(Locale.ROOT).replace("%2e", ".");
            if (s.equals(".") || s.equals("..")) {
                return true;
            }
        }
        return false;
    }
}
