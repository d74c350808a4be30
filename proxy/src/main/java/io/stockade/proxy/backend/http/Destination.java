package io.stockade.proxy.backend.http;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;

/**
 * The second resource of a WebDAV {@code COPY} or {@code MOVE}: its {@code Destination} header (RFC 4918 section
 * 10.3), read through the one canonical target ({@link RequestTarget#parse}) like the request's own path, so the
 * scope it is fenced on and the resource the upstream writes are one.
 * <p>
 * Taken: one value, an absolute path ({@code /dav/t1/b.txt}) or an absolute {@code http}/{@code https} URI on the
 * request's own authority (its {@code Host}, a default port written or not), whose path {@code RequestTarget}
 * accepts without a trailing {@code /}, with no query or fragment, and which the request's own policy matches.
 * Everything else is refused: a destination on another host is another server's business, a query or fragment is
 * read differently by upstreams (nginx drops the query, others keep it in the name), and a destination another
 * policy serves would be written under a fence that policy does not know.
 */
final class Destination {

    private Destination() {
    }

    /** What a Destination header came to. */
    sealed interface Read {
    }

    /**
     * A destination the policy serves.
     *
     * @param target the canonical target (its {@link RequestTarget#path()} is what the upstream gets)
     * @param scope  the policy's scope of it
     */
    record Found(RequestTarget target, String scope) implements Read {
    }

    /**
     * A refused destination.
     *
     * @param reason what is wrong, for the client
     */
    record Refused(String reason) implements Read {
    }

    /**
     * Reads the Destination of a request.
     *
     * @param values    the request's Destination header values
     * @param authority the request's {@code Host} (null when it has none)
     * @param secure    whether the request came over TLS (the default port of its {@code Host})
     * @param policy    the policy that took the request
     */
    static Read read(List<String> values, String authority, boolean secure, Policy policy) {
        if (values.isEmpty()) {
            return new Refused("a COPY or MOVE needs a Destination header naming the resource it writes (RFC 4918"
                    + " section 10.3)");
        }
        if (values.size() > 1) {
            return new Refused("the request has " + values.size() + " Destination headers; send exactly one");
        }
        String value = values.getFirst();
        String rawPath;
        if (value.startsWith("/")) {
            rawPath = value;
        } else {
            Optional<String> path = pathOfAbsoluteUri(value, authority, secure);
            if (path.isEmpty()) {
                return new Refused("Destination '" + value + "' is neither an absolute path (/...) nor an http or"
                        + " https URI on this request's own host (" + (authority == null ? "the request has no Host"
                        : authority) + "): the proxy writes a destination only through the policy's own upstream");
            }
            rawPath = path.get();
        }
        int cut = firstOf(rawPath, '?', '#');
        if (cut >= 0) {
            String part = rawPath.charAt(cut) == '?' ? "query" : "fragment";
            return new Refused("Destination '" + value + "' has a " + part + "; upstreams differ on whether it is"
                    + " part of the name: percent-encode a literal '?' as %3F and '#' as %23");
        }
        RequestTarget target;
        switch (RequestTarget.parse(rawPath)) {
            case RequestTarget.Refused refused -> {
                return new Refused("Destination '" + value + "': " + refused.reason());
            }
            case RequestTarget.Accepted accepted -> target = accepted.target();
        }
        if (target.trailingSlash()) {
            return new Refused("Destination '" + value + "' ends with '/'; the http backend takes paths without a"
                    + " trailing slash");
        }
        Optional<Map<String, String>> variables = policy.match().path().match(target);
        if (variables.isEmpty()) {
            return new Refused("Destination '" + value + "' is not a path of policy '" + policy.name() + "' ("
                    + policy.match().path() + "): a " + "COPY or MOVE writes its destination, which must be fenced by"
                    + " the same policy as its source");
        }
        return new Found(target, policy.scope().render(variables.get()));
    }

    /**
     * The raw path of {@code http[s]://authority/path}, when the authority is the request's; empty when the value
     * is not such a URI (another scheme, user info, another host or port, no path).
     */
    private static Optional<String> pathOfAbsoluteUri(String value, String requestAuthority, boolean secure) {
        String lower = value.toLowerCase(Locale.ROOT);
        String scheme = lower.startsWith("http://") ? "http" : lower.startsWith("https://") ? "https" : null;
        if (scheme == null || requestAuthority == null) {
            return Optional.empty();
        }
        int start = scheme.length() + 3;
        int slash = value.indexOf('/', start);
        int end = slash < 0 ? value.length() : slash;
        int other = firstOf(value.substring(start, end), '?', '#');
        if (slash < 0 || other >= 0) {
            return Optional.empty();
        }
        String authority = value.substring(start, end);
        if (authority.isEmpty() || authority.contains("@")) {
            return Optional.empty();
        }
        if (!withoutDefaultPort(authority, scheme).equals(withoutDefaultPort(requestAuthority,
                secure ? "https" : "http"))) {
            return Optional.empty();
        }
        return Optional.of(value.substring(slash));
    }

    /** An authority in lower case, without the port when it is the scheme's default one. */
    private static String withoutDefaultPort(String authority, String scheme) {
        String lower = authority.toLowerCase(Locale.ROOT);
        String suffix = scheme.equals("https") ? ":443" : ":80";
        return lower.endsWith(suffix) ? lower.substring(0, lower.length() - suffix.length()) : lower;
    }

    private static int firstOf(String text, char a, char b) {
        int i = text.indexOf(a);
        int j = text.indexOf(b);
        return i < 0 ? j : j < 0 ? i : Math.min(i, j);
    }
}
