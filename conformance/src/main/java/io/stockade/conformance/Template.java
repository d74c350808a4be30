package io.stockade.conformance;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A text with placeholders {@code {name}} (a letter, then letters, digits, {@code -} or {@code _}); every other
 * brace is literal text, so a JSON body template such as {@code {"value": "{value}", "token": {token}}} has two
 * placeholders. Parsed once, at load, with located errors; rendered in one pass (a value that contains
 * {@code {token}} is never expanded again).
 *
 * <p>The placeholders the suite fills: {@code {key}} the run's key {@code conformance/<run>/<scenario>} (several
 * path segments; {@code -control} appended for the paired control), {@code {id}} the same key as one path segment
 * ({@code conformance-<run>-<scenario>}), {@code {value}} the unique value of one write, {@code {token}} its fencing
 * token.
 */
public final class Template {

    /** The placeholders of a key: {@code {key}} and {@code {id}}. */
    public static final Set<String> KEY = Set.of("key", "id");
    /** The placeholders of a body: a write's value and token, and the key's. */
    public static final Set<String> BODY = Set.of("value", "token", "key", "id");

    private static final Pattern PLACEHOLDER = Pattern.compile("\\{([A-Za-z][A-Za-z0-9_-]*)}");

    private final String text;
    private final List<String> parts;   // literal, name, literal, name, ..., literal

    private Template(String text, List<String> parts) {
        this.text = text;
        this.parts = List.copyOf(parts);
    }

    /**
     * Parses {@code text}; {@code where} names it in errors ({@code target.yaml: proxy.body}).
     *
     * @param allowed  the placeholders it may use
     * @param required at least one of these must appear (empty: none required)
     * @throws IllegalArgumentException naming {@code where}, the placeholder, its position and the valid ones
     */
    public static Template parse(String text, String where, Set<String> allowed, Set<String> required) {
        if (text == null) {
            throw new IllegalArgumentException(where + ": is empty");
        }
        List<String> parts = new ArrayList<>();
        Matcher m = PLACEHOLDER.matcher(text);
        int at = 0;
        boolean found = required.isEmpty();
        while (m.find()) {
            String name = m.group(1);
            if (!allowed.contains(name)) {
                throw new IllegalArgumentException(where + ": unknown placeholder {" + name + "} at character "
                        + (m.start() + 1) + " of '" + text + "'; valid here: " + names(allowed));
            }
            found |= required.contains(name);
            parts.add(text.substring(at, m.start()));
            parts.add(name);
            at = m.end();
        }
        parts.add(text.substring(at));
        if (!found) {
            throw new IllegalArgumentException(where + ": '" + text + "' has no " + (required.size() == 1
                    ? names(required) : "placeholder of " + names(required)) + explain(required));
        }
        return new Template(text, parts);
    }

    private static String explain(Set<String> required) {
        if (required.contains("value")) {
            return " (the suite must write a unique value per write to find it in the storage)";
        }
        if (required.contains("key")) {
            return " (each run writes its own resource: {key} = conformance/<run>/<scenario>, {id} = "
                    + "conformance-<run>-<scenario>, -control appended for the paired control)";
        }
        return "";
    }

    private static String names(Set<String> names) {
        return String.join(", ", names.stream().sorted().map(n -> "{" + n + "}").toList());
    }

    /** Replaces every placeholder found in {@code values}; the others stay as they are. */
    public String render(Map<String, String> values) {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < parts.size(); i++) {
            String p = parts.get(i);
            if (i % 2 == 0) {
                b.append(p);
            } else {
                String v = values.get(p);
                b.append(v == null ? "{" + p + "}" : v);
            }
        }
        return b.toString();
    }

    /** {@link #render} with the key's placeholders only ({@code {key}}, {@code {id}}). */
    public String forKey(String key) {
        return render(Map.of("key", key, "id", id(key)));
    }

    /** The key as one path segment: {@code conformance/abc/pause} → {@code conformance-abc-pause}. */
    public static String id(String key) {
        return key.replace('/', '-');
    }

    /** Expands {@code {key}} and {@code {id}} in an already validated template text. */
    public static String expand(String text, String key) {
        return parse(text, "template", BODY, Set.of()).forKey(key);
    }

    public String text() {
        return text;
    }

    @Override
    public String toString() {
        return text;
    }
}
