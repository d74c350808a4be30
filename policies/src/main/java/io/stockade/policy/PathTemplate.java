package io.stockade.policy;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * A path template such as {@code /accounts/{id}/balance} or {@code /files/{path...}}.
 * <p>
 * Segments are literals, a variable {@code {name}} that binds exactly one non-empty segment, or, last only, a
 * greedy variable {@code {name...}} that binds one or more segments joined by {@code /}. Request segments are
 * percent-decoded before they are compared or bound, and so are literals of the template ({@code /a%20b} matches
 * {@code /a b} written either way). Matching takes the segments of a {@link RequestTarget}, the one parsed form
 * of a request's path: a path {@code RequestTarget} refuses (empty, {@code .} or {@code ..} segments, malformed
 * escapes, encoded slashes, control characters, path parameters) matches nothing, so a bound value can never
 * climb out of a directory or hide a segment boundary.
 */
public final class PathTemplate {
    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private final String text;
    private final List<Segment> segments;

    private PathTemplate(String text, List<Segment> segments) {
        this.text = text;
        this.segments = List.copyOf(segments);
    }

    /**
     * Parses a template.
     *
     * @throws IllegalArgumentException with a message naming the offending segment
     */
    public static PathTemplate parse(String text) {
        if (text == null || !text.startsWith("/")) {
            throw new IllegalArgumentException("a path template must start with '/', was '" + text + "'");
        }
        List<Segment> segments = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        String[] parts = text.substring(1).split("/", -1);
        for (int i = 0; i < parts.length; i++) {
            String part = parts[i];
            boolean last = i == parts.length - 1;
            if (part.isEmpty()) {
                if (last && parts.length == 1) {
                    break; // the template "/"
                }
                throw new IllegalArgumentException("empty segment in path template '" + text + "'");
            }
            if (part.startsWith("{") && part.endsWith("}")) {
                String inner = part.substring(1, part.length() - 1);
                boolean greedy = inner.endsWith("...");
                String name = greedy ? inner.substring(0, inner.length() - 3) : inner;
                if (!NAME.matcher(name).matches()) {
                    throw new IllegalArgumentException("bad variable name '" + name + "' in path template '" + text
                            + "': use letters, digits and '_', not starting with a digit");
                }
                if (greedy && !last) {
                    throw new IllegalArgumentException("greedy variable {" + name + "...} must be the last segment of '"
                            + text + "'");
                }
                if (!seen.add(name)) {
                    throw new IllegalArgumentException("variable {" + name + "} appears twice in '" + text + "'");
                }
                segments.add(new Segment(null, name, greedy));
            } else if (part.contains("{") || part.contains("}")) {
                throw new IllegalArgumentException("a variable must be a whole segment, like /{id}/, in '" + text
                        + "'");
            } else {
                // A literal may be written with raw characters a request must encode ("/a b"): encode them first.
                Optional<RequestTarget> parsed = RequestTarget.of("/" + RequestTarget.encodeRaw(part));
                String literal = parsed.isPresent() && parsed.get().segments().size() == 1
                        ? parsed.get().segments().get(0) : null;
                if (literal == null) {
                    throw new IllegalArgumentException("segment '" + part + "' of path template '" + text
                            + "' can never match: " + (RequestTarget.parse("/" + RequestTarget.encodeRaw(part))
                            instanceof RequestTarget.Refused r
                            ? r.reason() : "it is not one segment"));
                }
                segments.add(new Segment(literal, null, false));
            }
        }
        return new PathTemplate(text, segments);
    }

    /** The names of the variables, in order. */
    public List<String> variables() {
        return segments.stream().filter(s -> s.variable != null).map(s -> s.variable).toList();
    }

    /**
     * Matches a still percent-encoded request path (no query string).
     *
     * @return the decoded variables, or empty if the path does not match, is refused by {@link RequestTarget}, or
     *         ends with '/' (which only some backends take, see {@link RequestTarget#trailingSlash()})
     */
    public Optional<Map<String, String>> match(String path) {
        return RequestTarget.of(path).filter(t -> !t.trailingSlash()).flatMap(this::match);
    }

    /** Matches the decoded segments of a parsed request target (matching many templates against one target). */
    public Optional<Map<String, String>> match(RequestTarget target) {
        return match(target.segments());
    }

    /** Matches decoded segments. */
    public Optional<Map<String, String>> match(List<String> decoded) {
        Map<String, String> vars = null;
        int i = 0;
        for (Segment segment : segments) {
            if (i >= decoded.size()) {
                return Optional.empty();
            }
            if (segment.literal != null) {
                if (!segment.literal.equals(decoded.get(i))) {
                    return Optional.empty();
                }
                i++;
                continue;
            }
            if (vars == null) {
                vars = new LinkedHashMap<>();
            }
            if (segment.greedy) {
                vars.put(segment.variable, String.join("/", decoded.subList(i, decoded.size())));
                return Optional.of(vars);
            }
            vars.put(segment.variable, decoded.get(i));
            i++;
        }
        return i == decoded.size() ? Optional.of(vars == null ? Map.of() : vars) : Optional.empty();
    }

    /**
     * How many literal segments the template begins with, before its first variable: {@code /restic/{path...}} 1,
     * {@code /{path...}} 0, {@code /x/y} 2. Where two policies' templates overlap, the one with more serves the
     * requests both match (a longer literal start is the more specific; see {@code StockadeConfig#route}).
     */
    public int literalPrefix() {
        int n = 0;
        while (n < segments.size() && segments.get(n).literal != null) {
            n++;
        }
        return n;
    }

    /** The literal segments the template begins with, as a path ({@code /restic}; {@code /} for none). */
    public String literalPrefixText() {
        return "/" + String.join("/", segments.subList(0, literalPrefix()).stream().map(Segment::literal).toList());
    }

    /** The name of the greedy variable that ends this template ({@code path} of {@code /files/{path...}}), if any. */
    public Optional<String> greedyVariable() {
        Segment last = segments.isEmpty() ? null : segments.getLast();
        return last != null && last.greedy ? Optional.ofNullable(last.variable) : Optional.empty();
    }

    /**
     * Whether some path below a path this template matches (the path, then one or more segments more: a member of
     * the collection it names) may match {@code other}. Conservative for a template that ends with a greedy
     * variable: the paths it matches are taken along.
     */
    public boolean overlapsBelow(PathTemplate other) {
        if (greedyVariable().isPresent()) {
            return overlaps(other);
        }
        List<Segment> below = new ArrayList<>(segments);
        below.add(new Segment(null, "", true));
        return overlaps(below, 0, other.segments, 0);
    }

    /** Whether some path matches both templates. */
    public boolean overlaps(PathTemplate other) {
        return overlaps(segments, 0, other.segments, 0);
    }

    private static boolean overlaps(List<Segment> a, int i, List<Segment> b, int j) {
        if (i == a.size() || j == b.size()) {
            return i == a.size() && j == b.size();
        }
        Segment x = a.get(i);
        Segment y = b.get(j);
        if (x.greedy || y.greedy) {
            // A greedy tail takes any one or more segments, and both sides have at least one segment left here.
            return true;
        }
        if (x.literal != null && y.literal != null && !x.literal.equals(y.literal)) {
            return false;
        }
        return overlaps(a, i + 1, b, j + 1);
    }

    @Override
    public String toString() {
        return text;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof PathTemplate other && other.text.equals(text);
    }

    @Override
    public int hashCode() {
        return text.hashCode();
    }

    private record Segment(@Nullable String literal, @Nullable String variable, boolean greedy) {
    }
}
