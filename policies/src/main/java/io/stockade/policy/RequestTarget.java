package io.stockade.policy;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * The one parsed, canonical form of a request target: everything Stockade derives from a request's path (the
 * policy match, the fence scope, the upstream request target, the file path, the S3 key) is derived from this,
 * and from nothing else.
 * <p>
 * <b>The path</b> is a list of segments, each percent-decoded once into text. A raw path is accepted only if that
 * decoding is unambiguous:
 * <ul>
 *     <li>it starts with {@code /} (origin form; an absolute-form or asterisk-form target is refused);</li>
 *     <li>no segment is empty ({@code //}) or decodes to {@code .} or {@code ..}; a trailing {@code /} is kept as
 *     {@link #trailingSlash()}, which only backends that name resources by exact bytes take;</li>
 *     <li>every raw character is an RFC 3986 {@code pchar} (unreserved, sub-delims, {@code :} or {@code @}) or
 *     part of a {@code %HH} escape, except {@code ;}: servers such as Tomcat, Jetty and Helidon strip
 *     {@code ;parameters} from a segment, so {@code /a;x/b} and {@code /a/b} could be one resource with two
 *     scopes; a literal semicolon is sent as {@code %3B};</li>
 *     <li>the decoded bytes are valid UTF-8 and hold no {@code /} or {@code \} (which a server might take for a
 *     segment boundary) and no control character.</li>
 * </ul>
 * A {@code +} is a literal plus (paths have no form encoding).
 * <p>
 * <b>The upstream target</b> is not the client's spelling but the canonical one, {@link #path()}: each decoded
 * segment encoded again by one rule (unreserved characters and {@code !$&'()*,=:@} as they are, every other
 * byte of UTF-8 as {@code %HH}, upper-case). Two spellings of a resource ({@code /a:b} and {@code /a%3Ab},
 * {@code /a+b} and {@code /a%2Bb}) therefore have one scope and reach the storage as one byte sequence, so
 * the storage cannot tell them apart either; decoding the canonical path gives back exactly the segments the
 * scope was built from.
 * <p>
 * <b>The query</b> is opaque: it is checked only for characters that could not travel in a request line (it
 * must be visible ASCII without {@code #}) and is forwarded byte for byte after the canonical path. It is never
 * decoded, normalised or joined to the path, so nothing in it can move a write to another resource. A fragment
 * ({@code #...}) is refused: clients never send one.
 */
public final class RequestTarget {
    /** Bytes kept as they are in a canonical path segment: RFC 3986 unreserved, and sub-delims but ';' and '+'. */
    private static final boolean[] CANONICAL = new boolean[128];
    /** Characters a client may write unencoded in a path segment (RFC 3986 pchar, without ';'). */
    private static final boolean[] RAW_ALLOWED = new boolean[128];
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    static {
        for (char c = 'a'; c <= 'z'; c++) {
            CANONICAL[c] = true;
            CANONICAL[c - 'a' + 'A'] = true;
        }
        for (char c = '0'; c <= '9'; c++) {
            CANONICAL[c] = true;
        }
        for (char c : "-._~!$&'()*,=:@".toCharArray()) {
            CANONICAL[c] = true;
        }
        System.arraycopy(CANONICAL, 0, RAW_ALLOWED, 0, CANONICAL.length);
        RAW_ALLOWED['+'] = true;
    }

    private final String rawPath;
    private final List<String> segments;
    private final boolean trailingSlash;
    private final String path;
    private final @Nullable String query;

    private RequestTarget(String rawPath, List<String> segments, boolean trailingSlash, String path,
                          @Nullable String query) {
        this.rawPath = rawPath;
        this.segments = segments;
        this.trailingSlash = trailingSlash;
        this.path = path;
        this.query = query;
    }

    /** A request target, or why it was refused. */
    public sealed interface Parsed permits RequestTarget.Accepted, RequestTarget.Refused {
    }

    /** An accepted target. */
    public record Accepted(RequestTarget target) implements Parsed {
    }

    /**
     * A refused target (the proxy answers 400 before any other stage).
     *
     * @param reason what is wrong and where, for the client
     */
    public record Refused(String reason) implements Parsed {
    }

    /**
     * Parses a request target as the listener split it.
     *
     * @param rawPath     the path as the client sent it, still percent-encoded, without query or fragment
     * @param rawQuery    the query after {@code ?} as sent, or null when the target has no {@code ?}
     * @param hasFragment whether the target had a {@code #fragment}
     */
    public static Parsed parse(@Nullable String rawPath, @Nullable String rawQuery, boolean hasFragment) {
        if (hasFragment) {
            return new Refused("the request target has a fragment ('#'); clients do not send one: percent-encode"
                    + " a literal '#' as %23");
        }
        if (rawPath == null || rawPath.isEmpty() || rawPath.charAt(0) != '/') {
            return new Refused(rawPath != null && rawPath.startsWith("*") ? "the asterisk-form target is refused"
                    : "the request target must be a path starting with '/' (origin form); absolute URLs "
                    + "(absolute form) are refused");
        }
        if (rawQuery != null) {
            for (int i = 0; i < rawQuery.length(); i++) {
                char c = rawQuery.charAt(i);
                if (c <= 0x20 || c >= 0x7f || c == '#') {
                    return new Refused("the query has " + describe(c) + " at position " + (i + 1)
                            + "; percent-encode it");
                }
            }
        }
        if (rawPath.length() == 1) {
            return new Accepted(new RequestTarget(rawPath, List.of(), false, "/", rawQuery));
        }
        boolean trailingSlash = rawPath.length() > 1 && rawPath.charAt(rawPath.length() - 1) == '/';
        String body = trailingSlash ? rawPath.substring(0, rawPath.length() - 1) : rawPath;
        List<String> segments = new ArrayList<>();
        boolean canonical = true; // whether the raw spelling is already the canonical one (the common case)
        int start = 1;
        while (true) {
            int end = body.indexOf('/', start);
            if (end < 0) {
                end = body.length();
            }
            int number = segments.size() + 1;
            if (end == start) {
                return new Refused("segment " + number + " is empty ('//'); send the path without empty segments");
            }
            String raw = body.substring(start, end);
            Object decoded = decode(raw, number);
            if (decoded instanceof Refused refused) {
                return refused;
            }
            String segment = (String) decoded;
            if (segment.equals(".") || segment.equals("..")) {
                return new Refused("segment " + number + " is '" + segment + "'" + (raw.equals(segment) ? ""
                        : " (spelled '" + raw + "')") + "; send the normalised path");
            }
            canonical &= raw.equals(segment) && isCanonical(segment);
            segments.add(segment);
            if (end == body.length()) {
                break;
            }
            start = end + 1;
        }
        List<String> list = List.copyOf(segments);
        String path = canonical ? rawPath : encodePath(list) + (trailingSlash ? "/" : "");
        return new Accepted(new RequestTarget(rawPath, list, trailingSlash, path, rawQuery));
    }

    /** Parses a path with no query and no fragment (tests, tools). */
    public static Parsed parse(String rawPath) {
        return parse(rawPath, null, false);
    }

    /** The accepted target of a path with no query, or empty when it is refused. */
    public static Optional<RequestTarget> of(String rawPath) {
        return parse(rawPath) instanceof Accepted accepted ? Optional.of(accepted.target()) : Optional.empty();
    }

    /** The path as the client spelled it (logs and answers only; never used to reach the storage). */
    public String rawPath() {
        return rawPath;
    }

    /** The decoded segments; {@code /} alone has none. */
    public List<String> segments() {
        return segments;
    }

    /**
     * Whether the path ends with {@code /} after its last segment ({@code /a/b/}). Most servers take {@code /a/b/}
     * and {@code /a/b} for one resource (or redirect one to the other), so the pipeline refuses such a target
     * unless the policy's backend names resources by exact bytes (S3 keys such as {@code folder/}).
     */
    public boolean trailingSlash() {
        return trailingSlash;
    }

    /** The canonical path: the segments encoded by the one rule, starting with {@code /}; the trailing slash kept. */
    public String path() {
        return path;
    }

    /** The query exactly as the client sent it, or null when the target had no {@code ?}. */
    public @Nullable String query() {
        return query;
    }

    /**
     * The request target to send to an upstream whose URL has the path {@code basePath}: the base path (as written
     * in the URL, without a trailing slash), the canonical path, and the query as it came.
     */
    public String upstreamTarget(String basePath) {
        String target = basePath.isEmpty() ? path : basePath + path;
        return query == null ? target : target + "?" + query;
    }

    /** Encodes one decoded segment by the canonical rule. */
    public static String encodeSegment(String segment) {
        if (isCanonical(segment)) {
            return segment;
        }
        StringBuilder out = new StringBuilder(segment.length() + 16);
        appendEncoded(out, segment);
        return out.toString();
    }

    /**
     * Percent-encodes the characters of {@code text} that a request may not send raw (space, non-ASCII, ';' and
     * the like), leaving escapes that are already there as they are: for path template literals written by hand.
     */
    public static String encodeRaw(String text) {
        StringBuilder out = new StringBuilder(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '%' || (c < 128 && RAW_ALLOWED[c])) {
                out.append(c);
                continue;
            }
            int cp = text.codePointAt(i);
            if (Character.charCount(cp) == 2) {
                i++;
            }
            for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
                out.append('%').append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
            }
        }
        return out.toString();
    }

    private static String encodePath(List<String> segments) {
        StringBuilder out = new StringBuilder();
        for (String segment : segments) {
            out.append('/');
            appendEncoded(out, segment);
        }
        return out.toString();
    }

    private static void appendEncoded(StringBuilder out, String segment) {
        for (int i = 0; i < segment.length(); i++) {
            char c = segment.charAt(i);
            if (c < 128 && CANONICAL[c]) {
                out.append(c);
                continue;
            }
            int cp = segment.codePointAt(i);
            if (Character.charCount(cp) == 2) {
                i++;
            }
            for (byte b : new String(Character.toChars(cp)).getBytes(StandardCharsets.UTF_8)) {
                out.append('%').append(HEX[(b >> 4) & 0xf]).append(HEX[b & 0xf]);
            }
        }
    }

    private static boolean isCanonical(String segment) {
        for (int i = 0; i < segment.length(); i++) {
            char c = segment.charAt(i);
            if (c >= 128 || !CANONICAL[c]) {
                return false;
            }
        }
        return true;
    }

    /**
     * Decodes one raw segment strictly.
     *
     * @return the decoded text, or a {@link Refused}
     */
    private static Object decode(String raw, int number) {
        boolean escaped = false;
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%') {
                escaped = true;
            } else if (c == ';') {
                return new Refused("segment " + number + " has a ';': path parameters are refused, because upstreams"
                        + " differ on whether they name another resource; percent-encode a literal ';' as %3B");
            } else if (c >= 128 || !RAW_ALLOWED[c]) {
                return new Refused("segment " + number + " has " + describe(c) + " at position " + (i + 1)
                        + "; percent-encode it");
            }
        }
        if (!escaped) {
            return controlOrSlash(raw, number, raw);
        }
        ByteBuffer bytes = ByteBuffer.allocate(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c != '%') {
                bytes.put((byte) c);
                continue;
            }
            int hi = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
            int lo = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 2), 16) : -1;
            if (hi < 0 || lo < 0) {
                return new Refused("segment " + number + " has a broken percent-escape at position " + (i + 1)
                        + ": '%' must be followed by two hex digits");
            }
            bytes.put((byte) (hi << 4 | lo));
            i += 2;
        }
        bytes.flip();
        CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        CharBuffer text;
        try {
            text = utf8.decode(bytes);
        } catch (CharacterCodingException e) {
            return new Refused("segment " + number + " is not valid UTF-8 once percent-decoded");
        }
        return controlOrSlash(text.toString(), number, raw);
    }

    private static Object controlOrSlash(String decoded, int number, String raw) {
        for (int i = 0; i < decoded.length(); i++) {
            char c = decoded.charAt(i);
            if (c == '/' || c == '\\') {
                return new Refused("segment " + number + " ('" + raw + "') holds an encoded "
                        + (c == '/' ? "slash" : "backslash") + "; a server may take it for a segment boundary");
            }
            if (c < 0x20 || c == 0x7f || (c >= 0x80 && c < 0xa0)) {
                return new Refused("segment " + number + " holds a control character (U+"
                        + String.format("%04X", (int) c) + ") once percent-decoded");
            }
        }
        return decoded;
    }

    private static String describe(char c) {
        if (c < 0x20 || c == 0x7f) {
            return "a control character (0x" + Integer.toHexString(c) + ")";
        }
        if (c == ' ') {
            return "a space";
        }
        if (c >= 0x80) {
            return "a non-ASCII character (U+" + String.format("%04X", (int) c) + ")";
        }
        return "'" + c + "'";
    }

    @Override
    public String toString() {
        return query == null ? path : path + "?" + query;
    }
}
