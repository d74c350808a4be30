package io.stockade.policy.yaml;

import java.util.Map;
import java.util.regex.Pattern;

/**
 * Replaces {@code ${NAME}} and {@code ${NAME:-default}} in a scalar value with environment variables, and
 * {@code $$} with a literal {@code $}. A default is used when the variable is unset or empty, as in a POSIX shell.
 * A {@code $} followed by anything else stays as it is. The result is not scanned again.
 */
final class EnvSubstitution {
    private static final Pattern NAME = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*");

    private final Map<String, String> env;

    EnvSubstitution(Map<String, String> env) {
        this.env = Map.copyOf(env);
    }

    /**
     * The text with every reference replaced.
     *
     * @throws IllegalArgumentException naming an unset variable without default, a malformed reference or name
     */
    String apply(String text) {
        if (text.indexOf('$') < 0) {
            return text;
        }
        StringBuilder out = new StringBuilder(text.length());
        int i = 0;
        while (i < text.length()) {
            char c = text.charAt(i);
            char next = i + 1 < text.length() ? text.charAt(i + 1) : 0;
            if (c == '$' && next == '$') {
                out.append('$');
                i += 2;
            } else if (c == '$' && next == '{') {
                int end = text.indexOf('}', i);
                if (end < 0) {
                    throw new IllegalArgumentException("unclosed '${' in '" + text + "'; write $$ for a literal '$'");
                }
                out.append(resolve(text.substring(i + 2, end)));
                i = end + 1;
            } else {
                out.append(c);
                i++;
            }
        }
        return out.toString();
    }

    private String resolve(String reference) {
        int separator = reference.indexOf(":-");
        String name = separator < 0 ? reference : reference.substring(0, separator);
        if (!NAME.matcher(name).matches()) {
            throw new IllegalArgumentException("bad environment variable name '" + name + "' in '${" + reference
                    + "}': use letters, digits and '_', not starting with a digit");
        }
        String value = env.get(name);
        if (separator >= 0 && (value == null || value.isEmpty())) {
            return reference.substring(separator + 2);
        }
        if (value == null) {
            throw new IllegalArgumentException("environment variable " + name + " is not set and '${" + name
                    + "}' has no default; set it or write ${" + name + ":-default}");
        }
        return value;
    }
}
