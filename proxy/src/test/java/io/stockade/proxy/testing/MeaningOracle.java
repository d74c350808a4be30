package io.stockade.proxy.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The judge of the meaning fuzzers ({@link MeaningGrammar}): the sibling of {@link DifferentialOracle} for requests
 * whose method, sub-resources, parameters and headers vary, not only their spelling. Before and after each request
 * it reads what the storage holds (directly, named as the storage names it: s3proxy's blob store, nginx's root
 * directory, the file backend's root), every fence, and the proxy's decision counters, and holds the answer to the
 * promise of the default-deny issue, whatever the request was:
 * <ul>
 *     <li>no fence is ever lowered or dropped, and a fence that moves rises to exactly the request's token;</li>
 *     <li>a request the proxy refused (any decision but a forward or an admitted write) changed nothing in the
 *     storage and moved no fence;</li>
 *     <li>any answer but a 2xx changed nothing in the storage (the storage's own refusal of an admitted write may
 *     have raised the fences it was admitted on: the fence is raised before the write is sent);</li>
 *     <li>every resource the request changed is guarded by a scope the request was admitted on: its token was at
 *     least that scope's highest before (or the scope had none), and the scope holds at least the token after. So
 *     a write of two resources (WebDAV's {@code COPY}, {@code MOVE}) is fenced on both, and a request that changed
 *     a resource the proxy did not fence (an ignored sub-resource run as a PutObject, a {@code Destination}
 *     obeyed behind the proxy's back, two keys the store folds into one) is caught;</li>
 *     <li>no resource is changed by a token below the token of an earlier change of it: no stale write landed.</li>
 * </ul>
 * Resources no policy fences ({@link Storage#scopeOf} null: an area a policy leaves unfenced on purpose) are only
 * held to the first three rules. The judge never parses a request target: what a request names is what the storage
 * shows changed, so it cannot share a parsing mistake with the proxy. It tallies every answer by the features of
 * the request (method, each parameter, each header), for the figures in docs/meaning-fuzz.md.
 */
public final class MeaningOracle {
    /** The storage, read back directly. */
    public interface Storage {
        /** Every resource stored now, named as the storage names it, with a fingerprint of all it holds. */
        Map<String, String> snapshot() throws Exception;

        /** The fence scope that guards a resource, or null for a resource in an area no policy fences. */
        String scopeOf(String resource);
    }

    /** The fences: the highest token of every scope that has one, read where the fence is kept. */
    public interface Fences {
        Map<String, Long> snapshot() throws Exception;
    }

    /** The proxy's decisions so far, by outcome ({@code stockade_decisions_total}, summed over its policies). */
    public interface Decisions {
        Map<String, Double> snapshot() throws Exception;
    }

    /** What one request came to. */
    public record Answer(int status, String body) {
    }

    /**
     * The policy the proxy in front of the storage runs, as far as the judge must hold it to it: the configuration
     * axis of the meaning fuzzers (the one-decider issue). Whatever the policy, no fence is lowered, a refusal
     * changes nothing, and a fence that moves rises to the request's token; then:
     *
     * @param maxAdvance            {@code fence.max-advance}: no fence that had a token rises by more than this
     * @param missingAllowed        {@code missing: allow}: a write the proxy let through without a token
     *                              ({@code allowed_without_token}) may change what it names, unfenced
     * @param observe               {@code mode: observe}: every request is forwarded ({@code observed},
     *                              {@code would_reject}) and may change what it names; the fences still move only
     *                              as enforce would move them
     * @param acceptEqual           {@code equal: accept}; with {@code reject} a write is admitted only above the
     *                              highest, but for the later steps of an S3 upload (they continue its creation's
     *                              write)
     * @param unfencedDropsFences   a write forwarded unfenced may replace what holds the fence (the atomic S3
     *                              class keeps it in the object's metadata, which a forwarded PutObject or
     *                              CopyObject replaces: docs/s3.md, *Limits*)
     */
    public record Policy(long maxAdvance, boolean missingAllowed, boolean observe, boolean acceptEqual,
                         boolean unfencedDropsFences) {
        /** The default: enforce, any jump, a token required, an equal token accepted. */
        public static final Policy ENFORCE = new Policy(Long.MAX_VALUE, false, false, true, false);

        /** The outcomes under which this policy lets a request change storage without an admitted token. */
        boolean unfenced(String outcome) {
            return (missingAllowed && outcome.equals("allowed_without_token"))
                    || (observe && (outcome.equals("observed") || outcome.equals("would_reject")));
        }
    }

    /** Sends the request with the token the judge drew for it (null: none). */
    @FunctionalInterface
    public interface Sender {
        Answer send(MeaningGrammar.Request request, Long token) throws Exception;
    }

    /**
     * The outcomes under which the proxy let the request reach the storage. An unknown outcome (504) is one: the
     * write left, admitted with its token (the fence may have risen to it), and may or may not have landed.
     */
    private static final Set<String> REACHED = Set.of("accepted", "unfenced", "allowed_without_token", "observed",
            "would_reject", "unknown_outcome");
    private static final Pattern S3_CODE = Pattern.compile("<Code>([^<]*)</Code>");
    private static final Pattern PROBLEM_TYPE = Pattern.compile("\"type\"\\s*:\\s*\"[^\"]*?([a-z-]+)\"");

    private final String name;
    private final Policy policy;
    private final Storage storage;
    private final Fences fences;
    private final Decisions decisions;
    private final Map<String, Long> lastChanged = new HashMap<>();
    /** feature -> verdict -> count. */
    private final Map<String, Map<String, Integer>> tally = new TreeMap<>();
    private final Map<String, Integer> verdicts = new TreeMap<>();
    private int requests;
    private int writes;
    private int resourcesChanged;
    private int twoResourceWrites;
    private int violations;
    /** Nanoseconds spent reading the storage and fences, sending, and waiting for the proxy's count. */
    private long readNanos;
    private long sendNanos;
    private long countNanos;

    public MeaningOracle(String name, Storage storage, Fences fences, Decisions decisions) {
        this(name, Policy.ENFORCE, storage, fences, decisions);
    }

    /** A judge of a proxy whose policy is {@code policy} (the configuration axis). */
    public MeaningOracle(String name, Policy policy, Storage storage, Fences fences, Decisions decisions) {
        this.name = name;
        this.policy = policy;
        this.storage = storage;
        this.fences = fences;
        this.decisions = decisions;
    }

    /** Sends one request through {@code send} and judges what it came to. */
    public void judge(MeaningGrammar.Request request, Sender send) throws Exception {
        long t0 = System.nanoTime();
        Map<String, String> before = storage.snapshot();
        Map<String, Long> fencesBefore = fences.snapshot();
        Map<String, Double> decided = decisions.snapshot();
        Long token = token(request, fencesBefore);
        long t1 = System.nanoTime();
        Answer answer;
        try {
            answer = send.send(request, token);
        } catch (Exception e) {
            violations++;
            throw new AssertionError(name + ": no answer (" + e + ") to " + request.describe(token), e);
        }
        long t2 = System.nanoTime();
        String outcome = outcome(decided);
        long t3 = System.nanoTime();
        Map<String, String> after = storage.snapshot();
        Map<String, Long> fencesAfter = fences.snapshot();
        readNanos += t1 - t0 + System.nanoTime() - t3;
        sendNanos += t2 - t1;
        countNanos += t3 - t2;
        Set<String> changed = changed(before, after);
        Set<String> moved = changed(fencesBefore, fencesAfter);
        String what = name + ": " + request.describe(token) + "\n  -> " + answer.status() + " (" + outcome + ") "
                + shorten(answer.body()) + "\n  changed " + changed + ", fences moved " + moved(moved, fencesBefore,
                fencesAfter);
        int status = answer.status();
        boolean unfenced = policy.unfenced(outcome);
        for (String scope : moved) {
            Long was = fencesBefore.get(scope);
            Long now = fencesAfter.get(scope);
            if (unfenced && policy.unfencedDropsFences()) {
                if (now == null) { // even with the same content: a lower token may land next, as documented
                    lastChanged.keySet().removeIf(resource -> scope.equals(storage.scopeOf(resource)));
                }
                continue; // the documented limit: an unfenced write replaced the object that held the fence
            }
            check(now != null, "the fence of " + scope + " was dropped: " + what);
            check(was == null || now > was, "the fence of " + scope + " was lowered: " + what);
            check(Objects.equals(now, token), "the fence of " + scope + " moved to another token than the "
                    + "request's: " + what);
            check(was == null || now - was <= policy.maxAdvance(), "the fence of " + scope + " jumped further than"
                    + " max-advance " + policy.maxAdvance() + ": " + what);
        }
        if (!REACHED.contains(outcome)) {
            check(changed.isEmpty(), "a request the proxy refused (" + outcome + ") changed the storage: " + what);
            // The file backend is the storage too: its 404 to an admitted DELETE of nothing is the storage's answer
            // (counted as bad_request), after the fence rose to the token as it does for an upstream's 404.
            boolean deletedNothing = status == 404 && token != null && request.method().equalsIgnoreCase("DELETE");
            check(moved.isEmpty() || deletedNothing, "a request the proxy refused (" + outcome + ") moved a fence: "
                    + what);
        }
        if (status / 100 != 2 && !outcome.equals("unknown_outcome")) {
            check(changed.isEmpty(), "a refusal (" + status + ") changed the storage: " + what);
        }
        int guarded = 0;
        for (String resource : changed) {
            String scope = storage.scopeOf(resource);
            if (scope == null || unfenced) {
                if (unfenced && policy.unfencedDropsFences()) {
                    // the object that held the fence was replaced: a lower token may land next, as documented
                    lastChanged.remove(resource);
                }
                continue; // an area no policy fences, or a write the policy lets through unfenced
            }
            guarded++;
            check(token != null, "a request without a token changed " + resource + ": " + what);
            Long was = fencesBefore.get(scope);
            Long now = fencesAfter.get(scope);
            check(was == null || was <= token, "a change of " + resource + " was not admitted on its scope " + scope
                    + " (the fence held " + was + "): " + what);
            boolean continuesUpload = request.query().stream().anyMatch(p -> p.name().equals("uploadId"));
            check(was == null || was < token || policy.acceptEqual() || continuesUpload, "a change of " + resource
                    + " was admitted with the token its scope already held under equal: reject: " + what);
            check(now != null && now >= token, "a change of " + resource + " was not fenced in its scope " + scope
                    + " (the fence holds " + now + "): " + what);
            Long last = lastChanged.get(resource);
            check(last == null || token >= last, "STALE WRITE LANDED: " + resource + " was changed with token "
                    + last + " and then with " + token + ": " + what);
            lastChanged.put(resource, token);
        }
        check(guarded == 0 || !outcome.equals("unfenced"), "a request the proxy forwarded without its fence changed "
                + "a fenced resource: " + what);
        if (status / 100 == 2 && !changed.isEmpty()) {
            writes++;
            resourcesChanged += changed.size();
            if (guarded > 1) {
                twoResourceWrites++;
            }
        }
        record(request, verdict(answer, outcome, !changed.isEmpty()));
    }

    private Long token(MeaningGrammar.Request request, Map<String, Long> fencesNow) {
        long highest = 0;
        for (String resource : request.about()) {
            String scope = storage.scopeOf(resource);
            Long fence = scope == null ? null : fencesNow.get(scope);
            highest = Math.max(highest, fence == null ? 0 : fence);
        }
        return request.token().resolve(highest, request.jitter());
    }

    /** The outcome the proxy counted for the request (it counts just after it answered: waits up to 2 s). */
    private String outcome(Map<String, Double> decided) throws Exception {
        double total = decided.values().stream().mapToDouble(Double::doubleValue).sum();
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (true) {
            Map<String, Double> now = decisions.snapshot();
            if (now.values().stream().mapToDouble(Double::doubleValue).sum() > total) {
                for (Map.Entry<String, Double> e : now.entrySet()) {
                    if (e.getValue() > decided.getOrDefault(e.getKey(), 0.0)) {
                        return e.getKey();
                    }
                }
            }
            if (System.nanoTime() > deadline) {
                return "none";
            }
            Thread.sleep(1);
        }
    }

    private static String verdict(Answer answer, String outcome, boolean changed) {
        String kind = "";
        Matcher code = S3_CODE.matcher(answer.body() == null ? "" : answer.body());
        Matcher type = PROBLEM_TYPE.matcher(answer.body() == null ? "" : answer.body());
        if (code.find()) {
            kind = " " + code.group(1);
        } else if (type.find()) {
            kind = " " + type.group(1);
        }
        return answer.status() + kind + " (" + outcome + (changed ? ", changed" : "") + ")";
    }

    private void record(MeaningGrammar.Request request, String verdict) {
        requests++;
        verdicts.merge(verdict, 1, Integer::sum);
        for (String feature : request.features()) {
            tally.computeIfAbsent(feature, f -> new TreeMap<>()).merge(verdict, 1, Integer::sum);
        }
    }

    private void check(boolean ok, String message) {
        if (!ok) {
            violations++;
            throw new AssertionError(message);
        }
    }

    private static <V> Set<String> changed(Map<String, V> before, Map<String, V> after) {
        Set<String> keys = new HashSet<>(before.keySet());
        keys.addAll(after.keySet());
        keys.removeIf(k -> Objects.equals(before.get(k), after.get(k)));
        return new TreeSet<>(keys);
    }

    private static String moved(Set<String> moved, Map<String, Long> before, Map<String, Long> after) {
        List<String> out = new ArrayList<>();
        for (String scope : moved) {
            out.add(scope + ": " + before.get(scope) + " -> " + after.get(scope));
        }
        return out.toString();
    }

    private static String shorten(String text) {
        String flat = text == null ? "" : text.replace('\n', ' ');
        return flat.length() <= 400 ? flat : flat.substring(0, 400) + "...";
    }

    /** One line: requests, writes that changed the storage, of them of two resources at once. */
    public String summary() {
        return name + ": " + requests + " requests, " + writes + " acknowledged writes changed " + resourcesChanged
                + " resources (" + twoResourceWrites + " of them two fenced resources at once), " + violations
                + " violations";
    }

    /** The answers by verdict, and by each feature of the requests. */
    public String report() {
        StringBuilder out = new StringBuilder(summary()).append(String.format("%ntime: %d ms reading the storage "
                + "and the fences, %d ms sending, %d ms waiting for the proxy's count%n", readNanos / 1_000_000,
                sendNanos / 1_000_000, countNanos / 1_000_000)).append("\nanswers:\n");
        verdicts.forEach((v, n) -> out.append(String.format("  %6d  %s%n", n, v)));
        out.append("\nby feature:\n");
        tally.forEach((feature, byVerdict) -> {
            out.append("  ").append(feature).append(":");
            byVerdict.forEach((v, n) -> out.append("  ").append(n).append(" x ").append(v).append(';'));
            out.append('\n');
        });
        return out.toString();
    }

    /** Prints the summary and writes the report under {@code target/} (the long run's figures come from it). */
    public void writeReport(Path file) {
        System.out.println(summary());
        try {
            Files.createDirectories(file.getParent());
            Files.writeString(file, report(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            System.err.println("could not write " + file + ": " + e);
        }
    }
}
