package io.stockade.proxy.pipeline;

import java.util.Locale;
import java.util.Optional;

/**
 * Refuses request paths that have more than one spelling. A scope is derived from the path, so two spellings
 * of one resource ({@code /a/b} and {@code /a/./b}, {@code /a%2Fb}) must never reach the fence as two scopes.
 * Rather than guess which resource a strange path meant, the proxy refuses it (400).
 */
final class RequestPath {
    private RequestPath() {
    }

    /** Why the raw (still percent-encoded) path is refused, or empty if it is a plain, normal path. */
    static Optional<String> problem(String rawPath) {
        if (rawPath == null || !rawPath.startsWith("/")) {
            return Optional.of("the path must start with '/'");
        }
        if (rawPath.length() == 1) {
            return Optional.empty();
        }
        String[] segments = rawPath.substring(1).split("/", -1);
        for (int i = 0; i < segments.length; i++) {
            String segment = segments[i];
            if (segment.isEmpty()) {
                return Optional.of(i == segments.length - 1
                        ? "the path ends with '/'; name the resource without a trailing slash"
                        : "the path has an empty segment ('//')");
            }
            String decoded;
            try {
                decoded = decode(segment);
            } catch (IllegalArgumentException e) {
                return Optional.of("segment " + (i + 1) + " has a broken percent-encoding: " + e.getMessage());
            }
            if (decoded.equals(".") || decoded.equals("..")) {
                return Optional.of("the path has a '" + decoded + "' segment; send the normalised path");
            }
            if (decoded.indexOf('/') >= 0 || decoded.indexOf('\\') >= 0) {
                return Optional.of("segment " + (i + 1) + " contains an encoded slash or a backslash");
            }
            if (decoded.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
                return Optional.of("segment " + (i + 1) + " contains a control character");
            }
        }
        return Optional.empty();
    }

    private static String decode(String segment) {
        if (segment.indexOf('%') < 0) {
            return segment;
        }
        byte[] out = new byte[segment.length()];
        int n = 0;
        for (int i = 0; i < segment.length(); i++) {
            char c = segment.charAt(i);
            if (c == '%') {
                if (i + 2 >= segment.length()) {
                    throw new IllegalArgumentException("'%' must be followed by two hex digits");
                }
                int hi = Character.digit(segment.charAt(i + 1), 16);
                int lo = Character.digit(segment.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("'%" + segment.substring(i + 1, i + 3).toUpperCase(Locale.ROOT)
                            + "' is not a hex escape");
                }
                out[n++] = (byte) (hi << 4 | lo);
                i += 2;
            } else {
                out[n++] = (byte) c;
            }
        }
        return new String(out, 0, n, java.nio.charset.StandardCharsets.UTF_8);
    }
}
