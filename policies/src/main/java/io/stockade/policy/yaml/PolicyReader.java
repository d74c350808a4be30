package io.stockade.policy.yaml;

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

import io.stockade.policy.BackendConfig;
import io.stockade.policy.PathTemplate;
import io.stockade.policy.Policy;
import io.stockade.policy.ScopeTemplate;
import io.stockade.policy.TokenVerification;

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
            valid = valid && reader.bucketPathsServed();
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
        Optional<Policy.Readiness> readiness = policy.optional("readiness",
                f -> Values.keyword(f, "value", Vocabulary.READINESS), Policy.Readiness.REPORT);
        if (!Values.allPresent(name, path, methods, scope, fence, backend, limits, readiness)) {
            return Optional.empty();
        }
        if (backend.get() instanceof BackendConfig.S3) {
            // S3 writes are operations, most of them not PUT: a list of methods would fence some and not others
            Optional<Field> fenced = policy.get("fence").filter(Field::isMapping)
                    .flatMap(f -> f.mapping().flatMap(m -> m.get("methods")));
            if (fenced.isPresent()) {
                fenced.get().error("is not read for an s3 backend: S3 fences operations, not HTTP methods. Every "
                        + "operation that changes an object is a fenced write of its scope (PutObject, CopyObject, "
                        + "DeleteObject, DeleteObjects, every step of a multipart upload, tagging and ACLs; most are "
                        + "not PUT); remove 'methods'. To forward a bucket's writes unfenced, give it a policy of "
                        + "its own with 'mode: observe' or 'mode: off' (docs/s3.md, 'What is fenced')");
                return Optional.empty();
            }
        }
        Policy result = new Policy(name.get(), new Policy.Match(path.get(), methods.get()), scope.get(), fence.get(),
                backend.get(), limits.get(), readiness.get());
        reportOverlaps(result, item, matchField.get());
        reportCollectionScope(result, policy);
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
                field.error(Values.message(e));
                return Optional.empty();
            }
        });
    }

    private static Optional<ScopeTemplate> scope(Field field, PathTemplate path) {
        return field.text().flatMap(text -> {
            try {
                return Optional.of(ScopeTemplate.parse(text, path.variables()));
            } catch (IllegalArgumentException e) {
                field.error(Values.message(e));
                return Optional.empty();
            }
        });
    }

    /**
     * A list of methods: RFC 9110 method tokens in upper case, each once.
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

    private static boolean addMethod(Field item, String method, Set<String> taken, Set<String> methods) {
        if (!Vocabulary.METHOD_TOKEN.matcher(method).matches()) {
            item.error(notAMethod(method));
        } else if (Vocabulary.BODY_NAMED_METHODS.containsKey(method)) {
            item.error(method + " " + Vocabulary.BODY_NAMED_METHODS.get(method) + ", which the proxy does not read,"
                    + " so that write cannot be fenced on its own scope: no policy takes " + method + "; remove it");
        } else if (!Vocabulary.REGISTERED_METHODS.contains(method)
                && Suggestions.distance(method, closestRegistered(method)) <= 1) {
            item.error("unknown method '" + method + "'; did you mean '" + closestRegistered(method) + "'? (a method"
                    + " outside the IANA HTTP Method Registry is taken as written unless it is one letter away from"
                    + " a registered one)");
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

    /** Why {@code text} is not a method a policy can name, and what to write instead. */
    private static String notAMethod(String text) {
        String upper = text.toUpperCase(Locale.ROOT);
        if (Vocabulary.METHOD_TOKEN.matcher(upper).matches()) {
            return "'" + text + "' is not upper case: methods are case-sensitive (RFC 9110 section 9.1), and the"
                    + " listener takes every request's method upper-cased, so only an upper-case name can match;"
                    + " write '" + upper + "'";
        }
        return "'" + text + "' is not an HTTP method: a method is an RFC 9110 token of upper-case letters, digits"
                + " and !#$%&'*+-.^_`|~ (e.g. PUT, MKCOL, VERSION-CONTROL)";
    }

    /** The registered method nearest to {@code method}. */
    private static String closestRegistered(String method) {
        String best = Vocabulary.REGISTERED_METHODS.getFirst();
        for (String registered : Vocabulary.REGISTERED_METHODS) {
            if (Suggestions.distance(method, registered) < Suggestions.distance(method, best)) {
                best = registered;
            }
        }
        return best;
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
            Optional<Optional<TokenVerification>> verify = fence.optional("verify", VerifyReader::read);
            Optional<Optional<Long>> firstTokenMax = fence.optional("first-token-max",
                    f -> Values.longInteger(f, 0, Long.MAX_VALUE, "whole number"));
            if (!Values.allPresent(header, methods, missing, equal, mode, maxAdvance, verify, firstTokenMax)) {
                return Optional.empty();
            }
            if (maxAdvance.get() != Policy.Fence.UNLIMITED
                    && verify.get().orElse(null) instanceof TokenVerification.ZooKeeper) {
                // a zxid's high 32 bits are the epoch, which every leader election raises: elections add up while
                // a scope is idle, so any bound on the jump refuses the next holder for good
                fence.get("max-advance").orElseThrow().error("cannot be used with verify kind zookeeper: a"
                        + " ZooKeeper token is a zxid, raised by 2^32 at every leader election, so after enough"
                        + " elections while a scope is idle every new holder would be refused (422) for good; the"
                        + " verifier already refuses any token that is not the current holder's, so leave"
                        + " max-advance out");
                return Optional.empty();
            }
            TokenVerification verification = verify.get().orElse(null);
            return Optional.of(new Policy.Fence(header.get(), methods.get(), missing.get(), equal.get(), mode.get(),
                    maxAdvance.get(), verification, firstTokenMax.get().orElse(
                            Policy.Fence.defaultFirstTokenMax(maxAdvance.get(), verification))));
        });
    }

    private static Policy.Fence defaultFence(Optional<Set<String>> taken) {
        Policy.Fence defaults = Policy.Fence.defaults();
        return new Policy.Fence(defaults.header(), defaultFencedMethods(taken.orElse(Set.of())), defaults.missing(),
                defaults.equal(), defaults.mode());
    }

    /**
     * The default fenced methods: PUT, POST, PATCH and DELETE for a policy that takes every method; else every
     * method {@code match.methods} names but the safe ones (GET, HEAD, OPTIONS, TRACE, PROPFIND, REPORT, SEARCH),
     * so a method named there is a write until the policy says otherwise.
     */
    private static Set<String> defaultFencedMethods(Set<String> taken) {
        return taken.isEmpty() ? Policy.Fence.DEFAULT_METHODS : taken.stream()
                .filter(method -> !Vocabulary.SAFE_METHODS.contains(method)).collect(Collectors.toSet());
    }

    /**
     * Reports each earlier policy that can match a request this one matches, and each earlier policy whose
     * resources a COPY or MOVE of the other could write (see {@link #destinationOverlap}).
     */
    private void reportOverlaps(Policy policy, Field item, Field matchField) {
        for (Located earlier : read) {
            Policy.Match a = earlier.policy().match();
            Policy.Match b = policy.match();
            Optional<String> shared = a.path().overlaps(b.path()) ? sharedMethods(a.methods(), b.methods())
                    : Optional.empty();
            // the one whose path begins with more literal segments serves the requests both match (StockadeConfig
            // #route); with beginnings of one length, which would be a guess
            if (shared.isPresent() && a.path().literalPrefix() == b.path().literalPrefix()) {
                matchField.error(item.path() + " '" + policy.name() + "' can match the same requests as "
                        + earlier.item().path() + " '" + earlier.policy().name() + "' (paths " + a.path() + " and "
                        + b.path() + "; " + shared.get() + "), and neither begins with more literal segments, which "
                        + "would make it the one that serves them: give the policies paths that do not overlap, or "
                        + "one a longer literal beginning (/reports/{path...} within /{path...})");
                continue;
            }
            destinationOverlap(earlier.policy(), earlier.item(), policy, item)
                    .or(() -> destinationOverlap(policy, item, earlier.policy(), earlier.item()))
                    .ifPresent(matchField::error);
        }
    }

    /**
     * An s3 policy that begins with a literal bucket ({@code /restic/{path...}}) and serves some of its requests in
     * place of another policy (one with a shorter literal beginning: {@code /{path...}}) must come with a policy for
     * the bucket's own path that begins with the bucket too ({@code /restic}): DeleteObjects and browser-form uploads
     * write the bucket's keys through that path, and the other policy would fence them by its own settings (an
     * observe-mode catch-all would let a DeleteObjects through unfenced). Reported at the s3 policy.
     *
     * @return whether every such bucket path is served so
     */
    private boolean bucketPathsServed() {
        boolean valid = true;
        for (Located keys : read) {
            PathTemplate path = keys.policy().match().path();
            if (!(keys.policy().backend() instanceof BackendConfig.S3) || path.literalPrefix() == 0
                    || read.stream().noneMatch(other -> !other.equals(keys)
                    && other.policy().match().path().overlaps(path)
                    && other.policy().match().path().literalPrefix() < path.literalPrefix())) {
                continue;
            }
            String bucket = path.literalPrefixText().substring(1).split("/", -1)[0];
            Located served = null;
            for (Located candidate : read) {
                PathTemplate p = candidate.policy().match().path();
                if (candidate.policy().match().matchesMethod("POST") && p.match(List.of(bucket)).isPresent()
                        && (served == null || p.literalPrefix() > served.policy().match().path().literalPrefix())) {
                    served = candidate;
                }
            }
            if (served != null && served.policy().match().path().literalPrefix() == 0) {
                keys.item().mapping().flatMap(m -> m.get("match")).orElse(keys.item()).error(keys.item().path()
                        + " '" + keys.policy().name() + "' serves the keys of bucket '" + bucket + "' (" + path
                        + ") in place of " + served.item().path() + " '" + served.policy().name() + "', which still "
                        + "serves the bucket's own path /" + bucket + ", where DeleteObjects and browser-form uploads "
                        + "write its keys: add a policy for the path /" + bucket + " with the same backend and fence "
                        + "(a YAML anchor: docs/s3.md, 'A bucket of its own')");
                valid = false;
            }
        }
        return valid;
    }

    /**
     * A COPY or MOVE writes the resource its {@code Destination} names, and for a collection every resource below
     * the source and the destination. The proxy takes a Destination only when the same policy matches it, so
     * {@code writer}'s COPY or MOVE changes only resources no other policy serves: {@code other}'s paths must not
     * overlap {@code writer}'s, nor lie below them. The problem, if they do.
     */
    private static Optional<String> destinationOverlap(Policy writer, Field writerItem, Policy other,
                                                       Field otherItem) {
        List<String> writes = Policy.DESTINATION_METHODS.stream().filter(writer::names).sorted().toList();
        if (writes.isEmpty()) {
            return Optional.empty();
        }
        PathTemplate w = writer.match().path();
        PathTemplate o = other.match().path();
        boolean same = w.overlaps(o);
        if (!same && !w.overlapsBelow(o)) {
            return Optional.empty();
        }
        return Optional.of(writerItem.path() + " '" + writer.name() + "' takes " + String.join(" and ", writes)
                + (writes.size() == 1 ? ", which writes the resource its" : ", which write the resource their")
                + " Destination header names"
                + (same ? "" : " and, for a collection, every resource below it") + "; " + otherItem.path() + " '"
                + other.name() + "' serves paths " + (same ? "that " + w + " matches too" : "below " + w) + " ("
                + o + "), whose fence such a write would not hold: give the policies paths that do not overlap, or"
                + " take " + String.join(" and ", writes) + " out of '" + writer.name() + "'");
    }

    /**
     * A policy that takes COPY or MOVE over a path template ending in a greedy variable must not use that variable
     * in its scope: a COPY or MOVE of a collection ({@code /dav/c}) changes every member ({@code /dav/c/a}), whose
     * scope would be another one ({@code dav/c/a}) that the write does not hold.
     */
    private static void reportCollectionScope(Policy policy, Mapping mapping) {
        List<String> writes = Policy.DESTINATION_METHODS.stream().filter(policy::names).sorted().toList();
        Optional<String> greedy = policy.match().path().greedyVariable();
        if (writes.isEmpty() || greedy.isEmpty() || !policy.scope().variables().contains(greedy.get())) {
            return;
        }
        mapping.get("scope").ifPresent(field -> field.error("'" + policy.name() + "' takes "
                + String.join(" and ", writes) + (writes.size() == 1 ? ", which on a collection changes"
                : ", which on a collection change") + " every resource below it, but scope '"
                + policy.scope() + "' uses {" + greedy.get() + "}, so a member has another scope than its collection"
                + " and such a write would not hold it; use a scope without {" + greedy.get() + "} (one fence for"
                + " the subtree), a path template without a greedy variable (/dav/{dir}/{name}), or take "
                + String.join(" and ", writes) + " out of the policy"));
    }

    /** The methods two matches both take, as text ("methods PUT, DELETE" or "every method"); empty if none. */
    private static Optional<String> sharedMethods(Set<String> a, Set<String> b) {
        if (a.isEmpty() && b.isEmpty()) {
            return Optional.of("every method");
        }
        Set<String> shared = a.isEmpty() ? b : b.isEmpty() ? a
                : a.stream().filter(b::contains).collect(Collectors.toSet());
        return shared.isEmpty() ? Optional.empty() : Optional.of("methods " + String.join(", ", ordered(shared)));
    }

    /** The methods in the order of {@link Vocabulary#REGISTERED_METHODS}, then the others in text order. */
    private static List<String> ordered(Set<String> methods) {
        List<String> ordered = new ArrayList<>(Vocabulary.REGISTERED_METHODS.stream()
                .filter(methods::contains).toList());
        methods.stream().filter(m -> !Vocabulary.REGISTERED_METHODS.contains(m)).sorted().forEach(ordered::add);
        return ordered;
    }
}
