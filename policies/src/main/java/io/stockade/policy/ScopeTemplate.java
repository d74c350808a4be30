package io.stockade.policy;

import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;

/**
 * The fence scope of a policy, such as {@code files/{path}} or {@code accounts/{id}}: literal text with
 * {@code {name}} placeholders filled from the path variables of the matched request.
 * <p>
 * The fence scope must equal the lock scope: if one lease guards a whole prefix, write a template that names
 * only the prefix, or a zombie can still write a key the new holder has not touched yet.
 */
public final class ScopeTemplate {
    private final String text;
    private final List<String> parts;      // even index: literal, odd index: variable name
    private final List<String> variables;

    private ScopeTemplate(String text, List<String> parts) {
        this.text = text;
        this.parts = List.copyOf(parts);
        List<String> vars = new ArrayList<>();
        for (int i = 1; i < parts.size(); i += 2) {
            vars.add(parts.get(i));
        }
        this.variables = List.copyOf(vars);
    }

    /**
     * Parses a template and checks that every placeholder is one of {@code known}.
     *
     * @throws IllegalArgumentException naming the unknown or malformed placeholder
     */
    public static ScopeTemplate parse(String text, Collection<String> known) {
        if (text == null || text.isBlank()) {
            throw new IllegalArgumentException("a scope template must not be empty");
        }
        List<String> parts = new ArrayList<>();
        StringBuilder literal = new StringBuilder();
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            if (c == '{') {
                int end = text.indexOf('}', i);
                if (end < 0) {
                    throw new IllegalArgumentException("unclosed '{' in scope template '" + text + "'");
                }
                String name = text.substring(i + 1, end);
                if (!known.contains(name)) {
                    throw new IllegalArgumentException("scope template '" + text + "' uses {" + name
                            + "}, which the path template does not bind; known: " + known);
                }
                parts.add(literal.toString());
                parts.add(name);
                literal.setLength(0);
                i = end + 1;
            } else if (c == '}') {
                throw new IllegalArgumentException("unopened '}' in scope template '" + text + "'");
            } else {
                literal.append(c);
                i++;
            }
        }
        parts.add(literal.toString());
        return new ScopeTemplate(text, parts);
    }

    /** The literal text before the first variable: the whole template without one, empty when one comes first. */
    public String literalPrefix() {
        return parts.getFirst();
    }

    /** The variable names used, in order. */
    public List<String> variables() {
        return variables;
    }

    /** Fills the template. Every variable it uses must be present. */
    public String render(Map<String, String> values) {
        StringBuilder out = new StringBuilder(text.length() + 32);
        for (int i = 0; i < parts.size(); i++) {
            if (i % 2 == 0) {
                out.append(parts.get(i));
            } else {
                String value = values.get(parts.get(i));
                if (value == null) {
                    throw new IllegalStateException("no value for {" + parts.get(i) + "} in scope '" + text + "'");
                }
                out.append(value);
            }
        }
        return out.toString();
    }

    @Override
    public String toString() {
        return text;
    }
}
