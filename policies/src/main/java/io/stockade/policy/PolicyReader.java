package io.stockade.policy;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;

/**
 * Reads the {@code policies} list: each policy, and the rules between policies (unique names; no two policies
 * can match the same request). One instance reads one list.
 */
final class PolicyReader {
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-_]*");

    /** The owner ({@code policies[i]}) of each name read so far. */
    private final Map<String, String> owners = new HashMap<>();
    /** The policies read so far, each with its item in the list. */
    private final List<Located> read = new ArrayList<>();

    private record Located(Policy policy, Field item) {
    }

    private PolicyReader() {
    }

    static Optional<List<Policy>> readAll(Field field) {
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("must list at least one policy");
                return Optional.empty();
            }
            PolicyReader reader = new PolicyReader();
            List<Policy> policies = new ArrayList<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<Policy> policy = reader.read(item);
                policy.ifPresent(policies::add);
                valid &= policy.isPresent();
            }
            return valid ? Optional.of(policies) : Optional.empty();
        });
    }

    private Optional<Policy> read(Field item) {
        return item.mapping().flatMap(policy -> read(item, policy.allowOnly(Vocabulary.POLICY_KEYS)));
    }

    private Optional<Policy> read(Field item, Mapping policy) {
        Optional<String> name = policy.required("name", field -> uniqueName(field, item));
        Optional<Field> matchField = policy.required("match");
        Optional<Mapping> match = matchField.flatMap(Field::mapping).map(m -> m.allowOnly(Vocabulary.MATCH_KEYS));
        Optional<PathTemplate> path = match.flatMap(m -> m.required("path", PolicyReader::pathTemplate));
        Optional<Set<String>> methods = match.flatMap(m -> m.optional("methods",
                field -> methods(field, Set.of(), "leave 'methods' out to take every method"), Set.of()));
        Optional<ScopeTemplate> scope = policy.required("scope", field -> path.flatMap(p -> scope(field, p)));
        Optional<Policy.Fence> fence = policy.optional("fence", field -> fence(field, methods), defaultFence(methods));
        Optional<BackendConfig> backend = policy.required("backend", field -> BackendReader.read(field, path, scope,
                methods, fence));
        Optional<Policy.Limits> limits = policy.optional("limits", LimitsReader::policy, Policy.Limits.defaults());
        if (!Values.allPresent(name, path, methods, scope, fence, backend, limits)) {
            return Optional.empty();
        }
        Policy result = new Policy(name.get(), new Policy.Match(path.get(), methods.get()), scope.get(), fence.get(),
                backend.get(), limits.get());
        reportOverlaps(result, item, matchField.get());
        read.add(new Located(result, item));
        return Optional.of(result);
    }

    private Optional<String> uniqueName(Field field, Field item) {
        return Values.matching(field, NAME, "is not a valid policy name: use lower-case letters, digits, '-' and"
                + " '_', starting with a letter or digit").flatMap(name -> {
                    String owner = owners.putIfAbsent(name, item.path());
                    if (owner != null) {
                        field.error("policy name '" + name + "' is already used by " + owner);
                        return Optional.empty();
                    }
                    return Optional.of(name);
                });
    }

    private static Optional<PathTemplate> pathTemplate(Field field) {
        return field.text().flatMap(text -> {
            try {
                return Optional.of(PathTemplate.parse(text));
            } catch (IllegalArgumentException e) {
                field.error(e.getMessage());
                return Optional.empty();
            }
        });
    }

    private static Optional<ScopeTemplate> scope(Field field, PathTemplate path) {
        return field.text().flatMap(text -> {
            try {
                return Optional.of(ScopeTemplate.parse(text, path.variables()));
            } catch (IllegalArgumentException e) {
                field.error(e.getMessage());
                return Optional.empty();
            }
        });
    }

    /**
     * A list of methods, upper-cased.
     *
     * @param taken     the methods each must be among (those of match.methods); empty when any will do
     * @param whenEmpty the advice given for an empty list
     */
    private static Optional<Set<String>> methods(Field field, Set<String> taken, String whenEmpty) {
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("must list at least one method; " + whenEmpty);
                return Optional.empty();
            }
            Set<String> methods = new LinkedHashSet<>();
            boolean valid = true;
            for (Field item : items) {
                valid &= item.text().map(text -> addMethod(item, text, taken, methods)).orElse(false);
            }
            return valid ? Optional.of(methods) : Optional.empty();
        });
    }

    private static boolean addMethod(Field item, String text, Set<String> taken, Set<String> methods) {
        String method = text.toUpperCase(Locale.ROOT);
        if (!Vocabulary.METHODS.contains(method)) {
            item.error(Suggestions.unknown("method", text, Vocabulary.METHODS));
        } else if (!taken.isEmpty() && !taken.contains(method)) {
            item.error(method + " is not in match.methods (" + String.join(", ", ordered(taken))
                    + "): this policy never sees " + method + " requests; add it there or remove it here");
        } else if (!methods.add(method)) {
            item.error(method + " is listed twice");
        } else {
            return true;
        }
        return false;
    }

    /**
     * The fence block.
     *
     * @param taken match.methods, if they were valid (empty set: every method)
     */
    private static Optional<Policy.Fence> fence(Field field, Optional<Set<String>> taken) {
        return field.mapping().flatMap(fence -> {
            fence.allowOnly(Vocabulary.FENCE_KEYS);
            Set<String> matched = taken.orElse(Set.of());
            Optional<String> header = fence.optional("header", Values::headerName, Policy.Fence.DEFAULT_HEADER);
            Optional<Set<String>> methods = fence.optional("methods", f -> methods(f, matched,
                    "leave 'methods' out for the default, or use 'mode: off' to fence nothing"),
                    defaultFencedMethods(matched));
            Optional<Policy.MissingToken> missing = fence.optional("missing",
                    f -> Values.keyword(f, "value", Vocabulary.MISSING), Policy.MissingToken.REJECT);
            Optional<Policy.EqualToken> equal = fence.optional("equal",
                    f -> Values.keyword(f, "value", Vocabulary.EQUAL), Policy.EqualToken.ACCEPT);
            Optional<Policy.Mode> mode = fence.optional("mode",
                    f -> Values.keyword(f, "mode", Vocabulary.MODES), Policy.Mode.ENFORCE);
            Optional<Long> maxAdvance = fence.optional("max-advance",
                    f -> Values.longInteger(f, 1, Long.MAX_VALUE, "whole number"), Policy.Fence.UNLIMITED);
            Optional<Optional<TokenVerification>> verify = fence.optional("verify",
                    f -> VerifyReader.read(f).map(Optional::of), Optional.empty());
            if (!Values.allPresent(header, methods, missing, equal, mode, maxAdvance, verify)) {
                return Optional.empty();
            }
            return Optional.of(new Policy.Fence(header.get(), methods.get(), missing.get(), equal.get(), mode.get(),
                    maxAdvance.get(), verify.get().orElse(null)));
        });
    }

    private static Policy.Fence defaultFence(Optional<Set<String>> taken) {
        Policy.Fence defaults = Policy.Fence.defaults();
        return new Policy.Fence(defaults.header(), defaultFencedMethods(taken.orElse(Set.of())), defaults.missing(),
                defaults.equal(), defaults.mode());
    }

    /** The default fenced methods that the policy takes at all. */
    private static Set<String> defaultFencedMethods(Set<String> taken) {
        return taken.isEmpty() ? Policy.Fence.DEFAULT_METHODS : Policy.Fence.DEFAULT_METHODS.stream()
                .filter(taken::contains).collect(Collectors.toSet());
    }

    /** Reports each earlier policy that can match a request this one matches. */
    private void reportOverlaps(Policy policy, Field item, Field matchField) {
        for (Located earlier : read) {
            Policy.Match a = earlier.policy().match();
            Policy.Match b = policy.match();
            if (!a.path().overlaps(b.path())) {
                continue;
            }
            sharedMethods(a.methods(), b.methods()).ifPresent(methods -> matchField.error(
                    item.path() + " '" + policy.name() + "' can match the same requests as " + earlier.item().path()
                            + " '" + earlier.policy().name() + "' (paths " + a.path() + " and " + b.path() + "; "
                            + methods + ")"));
        }
    }

    /** The methods two matches both take, as text ("methods PUT, DELETE" or "every method"); empty if none. */
    private static Optional<String> sharedMethods(Set<String> a, Set<String> b) {
        if (a.isEmpty() && b.isEmpty()) {
            return Optional.of("every method");
        }
        List<String> shared = Vocabulary.METHODS.stream()
                .filter(m -> (a.isEmpty() || a.contains(m)) && (b.isEmpty() || b.contains(m)))
                .toList();
        return shared.isEmpty() ? Optional.empty() : Optional.of("methods " + String.join(", ", shared));
    }

    /** The methods in the order of {@link Vocabulary#METHODS}. */
    private static List<String> ordered(Set<String> methods) {
        return Vocabulary.METHODS.stream().filter(methods::contains).toList();
    }
}
