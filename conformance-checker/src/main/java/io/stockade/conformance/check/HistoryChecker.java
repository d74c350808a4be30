package io.stockade.conformance.check;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import io.stockade.conformance.check.History.Op;
import io.stockade.conformance.check.History.Outcome;

import org.jspecify.annotations.Nullable;

/**
 * Checks a {@link History} of fenced writes against the contract (DESIGN.md, "The contract"), per scope. A pending
 * operation counts as {@link Outcome#UNKNOWN} that never ended. "A before B" means A ended before B was invoked.
 *
 * <dl>
 *   <dt>{@code STALE_ACK} (rules a and b)</dt>
 *   <dd>If ok op A (token a) ended before op B (token b &lt; a) was invoked, B must not be ok. Rule b, "ok ops that
 *       do not overlap never acknowledge a lower token after a higher one", is the same predicate over pairs of ok
 *       ops (and is also exactly the condition for the ok ops to have a linearization with non-decreasing
 *       tokens), so it is reported once, under this code.</dd>
 *   <dt>{@code STALE_APPLIED} (rule a)</dt>
 *   <dd>With an applied order: in the same situation B's value (whatever B's outcome) must not be applied after
 *       A's value.</dd>
 *   <dt>{@code FINAL_STATE} (rule c)</dt>
 *   <dd>The final value is the value of an ok or unknown op. With an applied order it equals the last applied
 *       value. Without one it belongs to an op whose token is &ge; the highest acknowledged token, and it is not
 *       absent if any write was acknowledged.</dd>
 *   <dt>{@code LOST_ACK} (rule c)</dt>
 *   <dd>With an applied order: every ok op's value appears in it (acknowledged writes are durable).</dd>
 *   <dt>{@code APPLIED_ORDER} (rule d)</dt>
 *   <dd>With an applied order: the tokens of applied values never decrease.</dd>
 *   <dt>{@code DISHONEST_REJECTION} (rule e)</dt>
 *   <dd>A failed op's value is never applied (nor the final value).</dd>
 *   <dt>{@code STALE_READ} (rule a, seen directly)</dt>
 *   <dd>A direct read of the storage ({@link History#read}) that started after ok op A (token a) ended must not
 *       find the value of an op with a token below a: that value took effect after A's did. This catches a stale
 *       write whose writer never heard back (unknown outcome) and that was overwritten before the end.</dd>
 *   <dt>{@code LOST_ACK} without an applied order</dt>
 *   <dd>The final value belongs to writes that all ended (definitely) before an ok op with another value and a
 *       token at least as high was invoked: that acknowledged write is gone.</dd>
 *   <dt>{@code TOKEN_SHARED}</dt>
 *   <dd>Two holders (lease sessions, {@link History.Op#holder()}) wrote with the same token: the lock service gave
 *       one token twice.</dd>
 *   <dt>{@code TOKEN_BACKWARDS}</dt>
 *   <dd>A holder whose first op was invoked after another holder's first op had ended has a lower token: the lock
 *       service handed out a lower token to a later holder.</dd>
 *   <dt>{@code UNKNOWN_VALUE}, {@code BAD_HISTORY}</dt>
 *   <dd>A stored value that no op wrote; a value used by two ops of one scope with different tokens or holders
 *       (the checker cannot map it back; the same holder retrying the same value with the same token is one
 *       write).</dd>
 * </dl>
 *
 * Each rule reports at most {@value #MAX_PER_RULE} violations per scope, then a count of the rest.
 */
public final class HistoryChecker {

    /** Violations reported per rule and scope before the rest are only counted. */
    public static final int MAX_PER_RULE = 20;

    /**
     * One broken rule.
     *
     * @param rule    the rule code, e.g. {@code STALE_ACK}
     * @param scope   the scope
     * @param message what is wrong
     * @param ops     the operations involved
     * @param origin  the clock reading that relative times are measured from
     */
    public record Violation(String rule, String scope, String message, List<Op> ops, long origin) {
        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("[").append(rule).append("] scope=").append(scope).append(": ")
                    .append(message);
            for (Op op : ops) {
                b.append("\n      ").append(op.describe(origin));
            }
            return b.toString();
        }
    }

    /** The outcome of a check. */
    public static final class Result {
        private final List<Violation> details;
        private final int opCount;
        private final int scopeCount;
        private final String summary;

        Result(List<Violation> details, int opCount, int scopeCount, String summary) {
            this.details = List.copyOf(details);
            this.opCount = opCount;
            this.scopeCount = scopeCount;
            this.summary = summary;
        }

        /** True if no rule was broken. */
        public boolean ok() {
            return details.isEmpty();
        }

        /** Each violation as readable text, naming the operations involved. */
        public List<String> violations() {
            return details.stream().map(Violation::toString).toList();
        }

        /** The violations as structured records. */
        public List<Violation> details() {
            return details;
        }

        /** The violations of one rule code. */
        public List<Violation> of(String rule) {
            return details.stream().filter(v -> v.rule().equals(rule)).toList();
        }

        @Override
        public String toString() {
            StringBuilder b = new StringBuilder("history of ").append(opCount).append(" ops in ").append(scopeCount)
                    .append(" scopes (").append(summary).append("): ");
            if (ok()) {
                return b.append("OK").toString();
            }
            b.append(details.size()).append(" violation(s)");
            for (Violation v : details) {
                b.append("\n  - ").append(v);
            }
            return b.toString();
        }
    }

    private HistoryChecker() {
    }

    /**
     * Checks a history.
     *
     * @param history            the client-side operations
     * @param finalValueByScope  the value each scope holds at the end (a null value: the resource is absent); a scope
     *                           missing from the map, or a null map, skips the final-state checks for it
     * @param appliedOrderByScope the values in the order the storage applied them (null entries are deletes), or
     *                           null when the storage cannot report it; a scope missing from the map is treated the
     *                           same way
     */
    public static Result check(History history, @Nullable Map<String, String> finalValueByScope,
                               @Nullable Map<String, List<String>> appliedOrderByScope) {
        List<Op> all = history.ops();
        long origin = history.origin();
        Set<String> scopes = new LinkedHashSet<>(history.scopes());
        if (finalValueByScope != null) {
            scopes.addAll(finalValueByScope.keySet());
        }
        if (appliedOrderByScope != null) {
            scopes.addAll(appliedOrderByScope.keySet());
        }
        history.reads().forEach(r -> scopes.add(r.scope()));
        Map<String, List<Op>> byScope = new HashMap<>();
        for (Op op : all) {
            byScope.computeIfAbsent(op.scope(), k -> new ArrayList<>()).add(op);
        }
        List<Violation> out = new ArrayList<>();
        for (String scope : scopes) {
            List<History.Read> reads = history.reads().stream().filter(r -> r.scope().equals(scope)).toList();
            ScopeCheck c = new ScopeCheck(scope, byScope.getOrDefault(scope, List.of()), reads, origin);
            boolean hasFinal = finalValueByScope != null && finalValueByScope.containsKey(scope);
            String finalValue = finalValueByScope != null && hasFinal ? finalValueByScope.get(scope) : null;
            List<String> applied = appliedOrderByScope == null ? null : appliedOrderByScope.get(scope);
            c.run(hasFinal, finalValue, applied);
            out.addAll(c.violations());
        }
        return new Result(out, all.size(), scopes.size(), history.summary());
    }

    /** The checks of one scope. */
    private static final class ScopeCheck {
        private final String scope;
        private final List<Op> ops;
        private final long origin;
        private final Map<String, Op> byValue = new HashMap<>();
        private final Map<String, List<Op>> attempts = new HashMap<>();
        private final List<History.Read> reads;
        private final Map<String, List<Violation>> found = new LinkedHashMap<>();
        private final Map<String, Integer> suppressed = new LinkedHashMap<>();

        ScopeCheck(String scope, List<Op> ops, List<History.Read> reads, long origin) {
            this.scope = scope;
            this.ops = ops.stream().sorted(History.BY_START).toList();
            this.reads = reads;
            this.origin = origin;
        }

        void run(boolean hasFinal, @Nullable String finalValue, @Nullable List<String> applied) {
            for (Op op : ops) {
                Op previous = byValue.get(op.value());
                if (previous == null) {
                    byValue.put(op.value(), op);
                } else if (previous.token() != op.token() || !Objects.equals(previous.holder(), op.holder())) {
                    report("BAD_HISTORY", "value " + op.value() + " was written by two ops", previous, op);
                    continue;
                } else if (rank(outcome(op)) > rank(outcome(previous))) {
                    byValue.put(op.value(), op);   // a retry: the best-known outcome represents the write
                }
                attempts.computeIfAbsent(op.value(), k -> new ArrayList<>()).add(op);
            }
            holders();
            staleReads();
            Map<String, Integer> firstIdx = new HashMap<>();
            Map<String, Integer> lastIdx = new HashMap<>();
            if (applied != null) {
                for (int i = 0; i < applied.size(); i++) {
                    String v = applied.get(i);
                    if (v != null) {
                        firstIdx.putIfAbsent(v, i);
                        lastIdx.put(v, i);
                    }
                }
            }
            staleAcks(applied, firstIdx, lastIdx);
            if (hasFinal) {
                finalState(finalValue, applied);
            }
            if (applied != null) {
                lostAcks(lastIdx);
                appliedOrder(applied);
            }
        }

        /** Rules a and b. */
        private void staleAcks(@Nullable List<String> applied, Map<String, Integer> firstIdx,
                               Map<String, Integer> lastIdx) {
            List<Op> okByEnd = ops.stream().filter(o -> outcome(o) == Outcome.OK)
                    .sorted(Comparator.comparingLong(Op::endNanos)).toList();
            int done = 0;         // okByEnd[0..done) ended before the current op was invoked
            Op highest = null;    // the highest-token op among them
            for (Op b : ops) {    // by invocation time
                while (done < okByEnd.size() && okByEnd.get(done).endNanos() < b.startNanos()) {
                    Op a = okByEnd.get(done++);
                    if (highest == null || a.token() > highest.token()) {
                        highest = a;
                    }
                }
                if (highest == null || b.token() >= highest.token()) {
                    continue;
                }
                if (outcome(b) == Outcome.OK) {
                    report("STALE_ACK", "token " + b.token() + " acknowledged although token " + highest.token()
                            + " had been acknowledged before it was invoked", highest, b);
                }
                Integer bLast = lastIdx.get(b.value());
                if (applied != null && bLast != null) {
                    for (int i = 0; i < done; i++) {
                        Op a = okByEnd.get(i);
                        Integer aFirst = firstIdx.get(a.value());
                        if (a.token() > b.token() && aFirst != null && aFirst < bLast) {
                            report("STALE_APPLIED", "token " + b.token() + " applied (position " + bLast
                                    + ") after token " + a.token() + " (position " + aFirst
                                    + ") which had been acknowledged before it was invoked", a, b);
                            break;
                        }
                    }
                }
            }
        }

        /** Rule c (final value) and the final half of rule e. */
        private void finalState(@Nullable String finalValue, @Nullable List<String> applied) {
            Op maxOk = ops.stream().filter(o -> outcome(o) == Outcome.OK)
                    .max(Comparator.comparingLong(Op::token)).orElse(null);
            Op fin = finalValue == null ? null : byValue.get(finalValue);
            if (finalValue != null && fin == null) {
                report("UNKNOWN_VALUE", "final value " + finalValue + " was written by no op");
            } else if (fin != null && outcome(fin) == Outcome.FAIL) {   // every attempt of it was refused
                report("DISHONEST_REJECTION", "final value " + finalValue + " belongs to a refused write", fin);
            }
            if (applied != null) {
                String last = applied.isEmpty() ? null : applied.getLast();
                if (!Objects.equals(finalValue, last)) {
                    report("FINAL_STATE", "final value " + finalValue + " is not the last applied value " + last,
                            opsOf(finalValue, last));
                }
                return;
            }
            if (maxOk == null) {
                return;
            }
            // fin is the op of finalValue: every op's value has its attempts
            if (fin != null && Objects.requireNonNull(attempts.get(finalValue)).stream()
                    .allMatch(o -> outcome(o) != Outcome.UNKNOWN)) {
                long lastEnd = attempts.get(finalValue).stream().mapToLong(Op::endNanos).max().orElseThrow();
                ops.stream().filter(o -> outcome(o) == Outcome.OK && o.startNanos() > lastEnd
                                && o.token() >= fin.token() && !o.value().equals(finalValue))
                        .forEach(o -> report("LOST_ACK", "acknowledged value " + o.value()
                                + " was invoked after the final value's write had ended, but is not the final value",
                                fin, o));
            }
            if (finalValue == null) {
                report("FINAL_STATE", "the resource is absent although writes were acknowledged; the highest is",
                        maxOk);
            } else if (fin != null && fin.token() < maxOk.token()) {
                report("FINAL_STATE", "final value has token " + fin.token() + " below the highest acknowledged "
                        + maxOk.token(), fin, maxOk);
            }
        }

        /** Rule c: acknowledged writes are in the lineage. */
        private void lostAcks(Map<String, Integer> lastIdx) {
            for (Op op : ops) {
                if (outcome(op) == Outcome.OK && !lastIdx.containsKey(op.value())) {
                    report("LOST_ACK", "acknowledged value " + op.value() + " was never applied", op);
                }
            }
        }

        /** Rules d and e over the applied order. */
        private void appliedOrder(List<String> applied) {
            Op max = null;
            int maxPos = -1;
            for (int i = 0; i < applied.size(); i++) {
                String v = applied.get(i);
                if (v == null) {
                    continue;
                }
                Op op = byValue.get(v);
                if (op == null) {
                    report("UNKNOWN_VALUE", "applied value " + v + " (position " + i + ") was written by no op");
                    continue;
                }
                if (outcome(op) == Outcome.FAIL) {
                    report("DISHONEST_REJECTION", "refused value " + v + " was applied (position " + i + ")", op);
                }
                if (max != null && op.token() < max.token()) {
                    report("APPLIED_ORDER", "token " + op.token() + " applied (position " + i + ") after token "
                            + max.token() + " (position " + maxPos + ")", max, op);
                }
                if (max == null || op.token() > max.token()) {
                    max = op;
                    maxPos = i;
                }
            }
        }

        /** Reads that saw a value older than a write acknowledged before the read started. */
        private void staleReads() {
            List<Op> okByEnd = ops.stream().filter(o -> outcome(o) == Outcome.OK)
                    .sorted(Comparator.comparingLong(Op::endNanos)).toList();
            for (History.Read r : reads) {
                if (r.value() == null) {
                    continue;
                }
                Op seen = byValue.get(r.value());
                if (seen == null) {
                    report("UNKNOWN_VALUE", "value " + r.value() + " read at "
                            + r.describe(origin) + " was written by no op");
                    continue;
                }
                if (outcome(seen) == Outcome.FAIL) {
                    report("DISHONEST_REJECTION", "refused value " + r.value() + " was found by "
                            + r.describe(origin), seen);
                }
                Op higher = null;
                for (Op a : okByEnd) {
                    if (a.endNanos() >= r.startNanos()) {
                        break;
                    }
                    if (a.token() > seen.token() && (higher == null || a.token() > higher.token())) {
                        higher = a;
                    }
                }
                if (higher != null) {
                    report("STALE_READ", "token " + seen.token() + " found by " + r.describe(origin)
                            + " after token " + higher.token() + " had been acknowledged", higher, seen);
                }
            }
        }

        /** Tokens across holders: never shared, never backwards. */
        private void holders() {
            Map<String, Op> firstOf = new LinkedHashMap<>();   // holder -> its first op (ops are by start)
            Map<Long, Op> tokenOwner = new HashMap<>();
            for (Op op : ops) {
                if (op.holder() == null) {
                    continue;
                }
                firstOf.putIfAbsent(op.holder(), op);
                Op owner = tokenOwner.putIfAbsent(op.token(), op);
                if (owner != null && !op.holder().equals(owner.holder())) {   // an owner has a holder too
                    report("TOKEN_SHARED", "token " + op.token() + " used by holders " + owner.holder() + " and "
                            + op.holder(), owner, op);
                    tokenOwner.put(op.token(), op);   // report each new pair once
                }
            }
            List<Op> firsts = List.copyOf(firstOf.values());
            for (Op y : firsts) {
                for (Op x : firsts) {
                    if (x != y && x.endNanos() < y.startNanos() && y.token() < x.token()) {
                        report("TOKEN_BACKWARDS", "holder " + y.holder() + " started with token " + y.token()
                                + " after holder " + x.holder() + " had written with token " + x.token(), x, y);
                    }
                }
            }
        }

        private static int rank(Outcome o) {
            return switch (o) {
                case OK -> 3;
                case UNKNOWN, PENDING -> 2;
                case FAIL -> 1;
            };
        }

        private Op[] opsOf(@Nullable String... values) {
            return Arrays.stream(values).filter(Objects::nonNull).map(byValue::get)
                    .filter(Objects::nonNull).distinct().toArray(Op[]::new);
        }

        private static Outcome outcome(Op op) {
            Outcome o = op.outcome();
            return o == Outcome.PENDING ? Outcome.UNKNOWN : o;
        }

        private void report(String rule, String message, Op... involved) {
            List<Violation> list = found.computeIfAbsent(rule, k -> new ArrayList<>());
            if (list.size() >= MAX_PER_RULE) {
                suppressed.merge(rule, 1, Integer::sum);
                return;
            }
            list.add(new Violation(rule, scope, message, List.of(involved), origin));
        }

        List<Violation> violations() {
            List<Violation> out = new ArrayList<>();
            found.forEach((rule, list) -> {
                out.addAll(list);
                Integer more = suppressed.get(rule);
                if (more != null) {
                    out.add(new Violation(rule, scope, "... and " + more + " more", List.of(), origin));
                }
            });
            return out;
        }
    }
}
