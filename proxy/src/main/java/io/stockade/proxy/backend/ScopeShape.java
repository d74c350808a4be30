package io.stockade.proxy.backend;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;

import io.stockade.policy.ScopeTemplate;

/**
 * The scopes a policy can make: literals with a wildcard for each variable (any text, a superset of what a path can
 * bind), for routing a fence-state operation by its scope or prefix to the policy that makes it.
 *
 * @param literals    the literal parts, in order (one: no variable)
 * @param pattern     every scope the policy can make matches it
 * @param described   how an answer names the shape ({@code jobs/{id}}, {@code s3/<bucket>/<key>})
 * @param sharePrefix the prefix all its scopes in the proxy's store start with, for the memory store's per-policy
 *                    shares of its bound ({@code max-scopes}); empty when none is common to them
 */
public record ScopeShape(List<String> literals, Pattern pattern, String described, String sharePrefix) {

    /** The scopes of a scope template: its literals, a wildcard for each variable. */
    public static ScopeShape of(ScopeTemplate template) {
        return of(template.toString());
    }

    /** The scopes of a scope template's text. */
    public static ScopeShape of(String template) {
        List<String> literals = new ArrayList<>();
        StringBuilder regex = new StringBuilder();
        int i = 0;
        while (true) {
            int open = template.indexOf('{', i);
            String literal = template.substring(i, open < 0 ? template.length() : open);
            literals.add(literal);
            regex.append(Pattern.quote(literal));
            if (open < 0) {
                break;
            }
            regex.append(".*");
            i = template.indexOf('}', open) + 1; // the loader refused an unclosed '{'
        }
        return new ScopeShape(List.copyOf(literals), Pattern.compile(regex.toString(), Pattern.DOTALL), template,
                literals.getFirst());
    }

    /**
     * The scopes {@code prefix} itself and {@code prefix/<anything>}, named {@code prefix + described}: a backend
     * that makes its scopes below one literal (s3: {@code <scope>/<bucket>/<key>}).
     */
    public static ScopeShape below(String prefix, String described) {
        return new ScopeShape(List.of(prefix, ""), Pattern.compile(Pattern.quote(prefix) + "(?:/.*)?",
                Pattern.DOTALL), prefix + described, prefix + "/");
    }

    /** Whether the policy can make {@code scope}. */
    public boolean matches(String scope) {
        return pattern.matcher(scope).matches();
    }

    /** Whether some scope of this shape starts with {@code prefix}. */
    public boolean overlaps(String prefix) {
        String first = literals.getFirst();
        if (literals.size() == 1) {
            return first.startsWith(prefix);
        }
        return first.startsWith(prefix) || prefix.startsWith(first);
    }
}
