package io.stockade.conformance.check;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.conformance.check.History.Op;
import io.stockade.conformance.check.HistoryChecker.Result;
import io.stockade.conformance.check.HistoryChecker.Violation;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every rule of the checker against a hand-built history that breaks it and one that keeps it. Times are in
 * milliseconds on a fake clock.
 */
class HistoryCheckerTest {

    private static final String S = "doc";

    private final AtomicLong clock = new AtomicLong(1_000_000_000L);
    private final History h = new History(clock::get);

    private Op invoke(long atMs, long token, String value) {
        clock.set(1_000_000_000L + atMs * 1_000_000L);
        return h.invoke(S, token, value);
    }

    private void at(long ms) {
        clock.set(1_000_000_000L + ms * 1_000_000L);
    }

    /** An op invoked at {@code startMs} and completed ok at {@code endMs}. Ops must be built in time order. */
    private Op ok(long startMs, long endMs, long token, String value) {
        Op op = invoke(startMs, token, value);
        at(endMs);
        return op.ok(204);
    }

    private static Map<String, String> fin(String value) {
        Map<String, String> m = new HashMap<>();
        m.put(S, value);
        return m;
    }

    private static Map<String, List<String>> applied(String... values) {
        return Map.of(S, Arrays.asList(values));
    }

    private static void assertViolates(Result r, String rule, String... values) {
        assertFalse(r.ok(), r.toString());
        List<Violation> vs = r.of(rule);
        assertFalse(vs.isEmpty(), "expected " + rule + " in " + r);
        String text = vs.getFirst().toString();
        for (String v : values) {
            assertTrue(text.contains("value=" + v + " "), "violation should name " + v + ": " + text);
        }
        assertTrue(r.toString().contains("[" + rule + "] scope=" + S), r.toString());
    }

    private static void assertOk(Result r) {
        assertTrue(r.ok(), r.toString());
        assertTrue(r.violations().isEmpty());
    }

    // ------------------------------------------------------------------ rule a: no stale ack after a higher ack

    @Test
    void ruleA_staleAckAfterHigherAckIsReported() {
        ok(0, 10, 5, "A");
        ok(20, 30, 3, "B");
        Result r = HistoryChecker.check(h, fin("A"), null);
        assertViolates(r, "STALE_ACK", "A", "B");
        assertEquals(1, r.details().size(), r.toString());
        assertTrue(r.toString().contains("0.000..10.000 ms"), r.toString());
        assertTrue(r.toString().contains("20.000..30.000 ms"), r.toString());
    }

    @Test
    void ruleA_lowerTokenRefusedOrUnknownAfterHigherAckIsFine() {
        ok(0, 10, 5, "A");
        invoke(20, 3, "B").fail(409);
        at(30);
        Op c = invoke(40, 4, "C");
        at(50);
        c.unknown("timeout");
        invoke(60, 2, "D"); // still pending
        assertOk(HistoryChecker.check(h, fin("A"), null));
        assertOk(HistoryChecker.check(h, fin("A"), applied("A")));
    }

    @Test
    void ruleA_staleValueAppliedAfterHigherAckIsReported() {
        ok(0, 10, 5, "A");
        Op b = invoke(20, 3, "B");
        at(30);
        b.unknown("timeout");
        Result r = HistoryChecker.check(h, fin("B"), applied("A", "B"));
        assertViolates(r, "STALE_APPLIED", "A", "B");
    }

    @Test
    void ruleA_overlappingLowerTokenMayBeAckedAndApplied() {
        // B (3) was invoked before A (5) was acknowledged: it may have landed first.
        Op a = invoke(0, 5, "A");
        ok(5, 30, 3, "B");
        at(10);
        a.ok(204);
        assertOk(HistoryChecker.check(h, fin("A"), applied("B", "A")));
        assertOk(HistoryChecker.check(h, fin("A"), null));
    }

    // ------------------------------------------------------------------ rule b: acks never go backwards

    @Test
    void ruleB_ackSequenceGoingBackwardsIsReported() {
        ok(0, 1, 4, "t4");
        ok(2, 3, 6, "t6");
        ok(4, 5, 5, "t5");
        Result r = HistoryChecker.check(h, fin("t5"), null);
        assertViolates(r, "STALE_ACK", "t6", "t5");
        assertEquals(1, r.of("STALE_ACK").size(), "t5 after t4 is fine: " + r);
    }

    @Test
    void ruleB_overlappingAcksMayCompleteOutOfTokenOrder() {
        ok(0, 1, 4, "t4");
        Op t6 = invoke(2, 6, "t6");
        ok(3, 4, 5, "t5");
        at(10);
        t6.ok(204);
        ok(11, 12, 6, "t6b"); // equal token: the same holder keeps writing
        assertOk(HistoryChecker.check(h, fin("t6b"), null));
        assertOk(HistoryChecker.check(h, fin("t6b"), applied("t4", "t5", "t6", "t6b")));
    }

    // ------------------------------------------------------------------ rule c: final state

    @Test
    void ruleC_finalValueBelowHighestAckIsReported() {
        ok(0, 10, 3, "B");
        ok(20, 30, 5, "A");
        assertViolates(HistoryChecker.check(h, fin("B"), null), "FINAL_STATE", "B", "A");
    }

    @Test
    void ruleC_absentFinalValueAfterAckIsReported() {
        ok(0, 10, 5, "A");
        assertViolates(HistoryChecker.check(h, fin(null), null), "FINAL_STATE", "A");
    }

    @Test
    void ruleC_finalValueWrittenByNobodyIsReported() {
        ok(0, 10, 5, "A");
        Result r = HistoryChecker.check(h, fin("ghost"), null);
        assertFalse(r.ok());
        assertTrue(r.toString().contains("final value ghost was written by no op"), r.toString());
    }

    @Test
    void ruleC_finalValueFromUnknownOpWithHigherTokenIsFine() {
        ok(0, 10, 5, "A");
        Op c = invoke(20, 7, "C");
        at(30);
        c.unknown("reset");
        assertOk(HistoryChecker.check(h, fin("C"), null));
        assertOk(HistoryChecker.check(h, fin("A"), null));
        assertOk(HistoryChecker.check(h, Map.of(), null));
    }

    @Test
    void ruleC_finalValueMustBeTheLastApplied() {
        ok(0, 10, 3, "B");
        ok(20, 30, 5, "A");
        assertViolates(HistoryChecker.check(h, fin("B"), applied("B", "A")), "FINAL_STATE", "B", "A");
        assertOk(HistoryChecker.check(h, fin("A"), applied("B", "A")));
    }

    @Test
    void ruleC_acknowledgedWriteMissingFromAppliedOrderIsReported() {
        ok(0, 10, 3, "B");
        ok(20, 30, 5, "A");
        Result r = HistoryChecker.check(h, fin("A"), applied("A"));
        assertViolates(r, "LOST_ACK", "B");
        assertEquals(1, r.details().size(), r.toString());
    }

    // ------------------------------------------------------------------ rule d: applied order respects tokens

    @Test
    void ruleD_appliedTokensGoingDownIsReported() {
        Op a = invoke(0, 5, "A");
        Op b = invoke(1, 3, "B");
        at(10);
        a.unknown("timeout");
        b.unknown("timeout");
        Result r = HistoryChecker.check(h, fin("B"), applied("A", "B"));
        assertViolates(r, "APPLIED_ORDER", "A", "B");
        assertTrue(r.of("STALE_APPLIED").isEmpty(), "no ack involved: " + r);
    }

    @Test
    void ruleD_equalAndRisingTokensAreFine() {
        Op a = invoke(0, 3, "A");
        Op b = invoke(1, 5, "B");
        Op c = invoke(2, 5, "C");
        at(10);
        a.ok(201);
        b.unknown("timeout");
        c.ok(204);
        assertOk(HistoryChecker.check(h, fin("C"), applied("A", "B", "C")));
        assertOk(HistoryChecker.check(h, fin(null), Map.of(S, Arrays.asList("A", "B", "C", null))));
    }

    @Test
    void ruleD_appliedValueWrittenByNobodyIsReported() {
        ok(0, 10, 5, "A");
        Result r = HistoryChecker.check(h, fin("A"), applied("X", "A"));
        assertEquals(1, r.of("UNKNOWN_VALUE").size(), r.toString());
    }

    // ------------------------------------------------------------------ rule e: rejections are honest

    @Test
    void ruleE_refusedValueThatWasAppliedIsReported() {
        ok(0, 10, 5, "A");
        invoke(20, 6, "C").fail(503);
        at(25);
        Result r = HistoryChecker.check(h, fin("C"), applied("A", "C"));
        assertViolates(r, "DISHONEST_REJECTION", "C");
    }

    @Test
    void ruleE_refusedValueAsFinalStateIsReportedWithoutAppliedOrder() {
        ok(0, 10, 5, "A");
        invoke(20, 6, "C").fail(409);
        at(25);
        assertViolates(HistoryChecker.check(h, fin("C"), null), "DISHONEST_REJECTION", "C");
    }

    @Test
    void ruleE_refusedValueLeftNoTraceIsFine() {
        ok(0, 10, 5, "A");
        invoke(20, 3, "C").fail(409);
        at(25);
        assertOk(HistoryChecker.check(h, fin("A"), applied("A")));
    }

    // ------------------------------------------------------------------ direct reads, retries, holders

    private static long ns(long ms) {
        return 1_000_000_000L + ms * 1_000_000L;
    }

    /** An op of {@code holder} with explicit times (as the conformance suite's writer processes record them). */
    private Op op(String holder, long startMs, long endMs, long token, String value, int status) {
        Op op = h.invokeAt(S, holder, token, value, ns(startMs));
        return status == 0 ? op.unknownAt("timeout", ns(endMs)) : op.completeAt(status, ns(endMs));
    }

    private void read(long startMs, long endMs, String value) {
        h.read(S, ns(startMs), ns(endMs), value);
    }

    @Test
    void unknownOutcomeWriteThatLandsAfterAHigherAckIsCaughtByAReadAndByTheFinalState() {
        op("w1", 0, 10, 1, "Z", 0);           // timed out: may land at any time later
        op("w2", 20, 30, 2, "B", 204);
        read(40, 41, "Z");                     // ... and it did, after token 2 was acknowledged
        Result r = HistoryChecker.check(h, fin("Z"), null);
        assertViolates(r, "STALE_READ", "B", "Z");
        assertViolates(r, "FINAL_STATE", "Z", "B");
    }

    @Test
    void unknownOutcomeWriteThatLandsAfterAHigherAckAndIsOverwrittenIsStillCaughtByTheRead() {
        op("w1", 0, 10, 1, "Z", 0);
        op("w2", 20, 30, 2, "B", 204);
        read(40, 41, "Z");
        op("w2", 50, 60, 2, "C", 204);
        Result r = HistoryChecker.check(h, fin("C"), null);
        assertViolates(r, "STALE_READ", "B", "Z");
        assertTrue(r.of("FINAL_STATE").isEmpty(), r.toString());
    }

    @Test
    void unknownOutcomeWriteWithAHigherTokenMayLandLater() {
        op(null, 0, 10, 3, "U", 0);            // delayed in the network ...
        op(null, 20, 30, 2, "B", 204);         // ... so the proxy took token 2 first, then 3: legal
        read(40, 41, "U");
        assertOk(HistoryChecker.check(h, fin("U"), null));
    }

    @Test
    void aReadThatStartedBeforeTheHigherAckMaySeeTheOlderValue() {
        op("w1", 0, 10, 1, "A", 204);
        read(15, 35, "A");
        op("w2", 20, 30, 2, "B", 204);
        assertOk(HistoryChecker.check(h, fin("B"), null));
    }

    @Test
    void aReadOfARefusedValueIsADishonestRejection() {
        op("w1", 0, 10, 2, "A", 204);
        op("w2", 20, 30, 1, "R", 409);
        read(40, 41, "R");
        assertViolates(HistoryChecker.check(h, null, null), "DISHONEST_REJECTION", "R");
    }

    @Test
    void aRetryOfTheSameValueWithTheSameTokenIsOneWrite() {
        op("w1", 0, 10, 1, "A", 0);            // the response was lost ...
        op("w1", 20, 30, 1, "A", 204);         // ... and the retry was acknowledged
        Result r = HistoryChecker.check(h, fin("A"), applied("A", "A"));
        assertOk(r);
    }

    @Test
    void aRetryRefusedAfterItsFirstAttemptLandedIsNotADishonestRejection() {
        op("w1", 0, 10, 1, "A", 0);            // landed, answer lost
        op("w2", 20, 30, 2, "B", 204);
        op("w1", 40, 50, 1, "A", 409);         // the retry is refused: A took effect before B, which is fine
        assertOk(HistoryChecker.check(h, fin("B"), applied("A", "B")));
    }

    @Test
    void theSameValueFromTwoHoldersIsABadHistory() {
        op("w1", 0, 10, 1, "A", 204);
        op("w2", 20, 30, 1, "A", 204);
        assertFalse(HistoryChecker.check(h, null, null).of("BAD_HISTORY").isEmpty());
    }

    @Test
    void aTokenUsedByTwoHoldersIsReported() {
        op("w1", 0, 10, 5, "A", 204);
        op("w2", 20, 30, 5, "B", 204);
        assertViolates(HistoryChecker.check(h, fin("B"), null), "TOKEN_SHARED", "A", "B");
    }

    @Test
    void aLaterHolderWithALowerTokenIsReported() {
        op("w1", 0, 10, 5, "A", 204);
        op("w2", 20, 30, 4, "B", 409);
        assertViolates(HistoryChecker.check(h, fin("A"), null), "TOKEN_BACKWARDS", "A", "B");
    }

    @Test
    void aZombieWritingWithItsOldTokenIsNotATokenGoingBackwards() {
        op("w1", 0, 10, 1, "A", 204);
        op("w2", 20, 30, 2, "B", 204);
        op("w1", 40, 50, 1, "Z", 409);         // the zombie is refused: everything as it should be
        assertOk(HistoryChecker.check(h, fin("B"), null));
    }

    @Test
    void anAcknowledgedWriteOverwrittenByAnOlderOneIsLostWithoutAnAppliedOrder() {
        op("w1", 0, 10, 1, "A", 204);
        op("w1", 20, 30, 1, "B", 204);         // B was invoked after A had ended, yet A is what is stored
        assertViolates(HistoryChecker.check(h, fin("A"), null), "LOST_ACK", "A", "B");
    }

    // ------------------------------------------------------------------ plumbing

    @Test
    void duplicateValuesAreABadHistory() {
        ok(0, 1, 1, "same");
        ok(2, 3, 2, "same");
        assertFalse(HistoryChecker.check(h, null, null).of("BAD_HISTORY").isEmpty());
    }

    @Test
    void completingTwiceThrowsAndCompleteMapsStatuses() {
        Op op = invoke(0, 1, "x").ok(200);
        assertThrows(IllegalStateException.class, () -> op.fail(409));
        assertEquals(History.Outcome.OK, invoke(1, 1, "y").complete(201).outcome());
        assertEquals(History.Outcome.FAIL, invoke(2, 1, "z").complete(409).outcome());
        Op gw = invoke(3, 1, "w").complete(504);
        assertEquals(History.Outcome.UNKNOWN, gw.outcome());
        assertEquals(504, gw.status());
        assertEquals("PENDING=0 OK=2 FAIL=1 UNKNOWN=1", h.summary());
    }

    @Test
    void violationsArePerScopeAndCapped() {
        clock.set(0);
        Op high = h.invoke("other", 100, "high");
        clock.set(1);
        high.ok(204);
        for (int i = 0; i < 30; i++) {
            clock.set(10 + 2L * i);
            Op op = h.invoke("other", i, "v" + i);
            clock.set(11 + 2L * i);
            op.ok(204);
        }
        Result r = HistoryChecker.check(h, null, null);
        assertEquals(HistoryChecker.MAX_PER_RULE + 1, r.of("STALE_ACK").size(), r.toString());
        assertTrue(r.violations().getLast().contains("... and 10 more"), r.toString());
        assertTrue(r.details().stream().allMatch(v -> v.scope().equals("other")));
    }

    // ------------------------------------------------------------------ real concurrency, no false alarms

    /** A linearizable fenced register: check and write under one lock. */
    private static final class FencedRegister {
        private long highest = -1;
        private String value;
        private final List<String> applied = new ArrayList<>();
        private final boolean fenced;

        FencedRegister(boolean fenced) {
            this.fenced = fenced;
        }

        synchronized int write(long token, String v) {
            if (fenced && token < highest) {
                return 409;
            }
            highest = Math.max(highest, token);
            value = v;
            applied.add(v);
            return 204;
        }
    }

    @Test
    void racingWritersOnACorrectRegisterPass() throws Exception {
        History history = new History();
        FencedRegister reg = new FencedRegister(true);
        AtomicLong lockService = new AtomicLong();
        race(history, reg, lockService);
        Result withOrder = HistoryChecker.check(history, Map.of(S, reg.value), Map.of(S, List.copyOf(reg.applied)));
        assertTrue(withOrder.ok(), withOrder.toString());
        assertTrue(HistoryChecker.check(history, Map.of(S, reg.value), null).ok());
        assertTrue(history.ops().stream().anyMatch(o -> o.outcome() == History.Outcome.FAIL), "the race had zombies");
    }

    @Test
    void aNaiveRegisterIsCaught() throws InterruptedException {
        History history = new History();
        FencedRegister reg = new FencedRegister(false);
        Op a = history.invoke(S, 5, "new-holder");
        a.complete(reg.write(5, "new-holder"));
        Thread.sleep(1);
        Op b = history.invoke(S, 3, "zombie");
        b.complete(reg.write(3, "zombie"));
        Result r = HistoryChecker.check(history, Map.of(S, reg.value), Map.of(S, List.copyOf(reg.applied)));
        System.out.println(r); // a sample report, in the surefire output file
        assertFalse(r.of("STALE_ACK").isEmpty(), r.toString());
        assertFalse(r.of("STALE_APPLIED").isEmpty(), r.toString());
        assertFalse(r.of("APPLIED_ORDER").isEmpty(), r.toString());
        assertFalse(HistoryChecker.check(history, Map.of(S, reg.value), null).of("FINAL_STATE").isEmpty());
    }

    private static void race(History history, FencedRegister reg, AtomicLong lockService) throws Exception {
        CyclicBarrier start = new CyclicBarrier(8);
        try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
            List<Future<?>> fs = new ArrayList<>();
            for (int w = 0; w < 8; w++) {
                int writer = w;
                fs.add(pool.submit(() -> {
                    long token = lockService.incrementAndGet();
                    start.await(); // all hold a token before anyone writes: the early holders are zombies
                    ThreadLocalRandom rnd = ThreadLocalRandom.current();
                    for (int n = 0; n < 300; n++) {
                        if (rnd.nextInt(10) == 0) {
                            token = lockService.incrementAndGet(); // re-acquired the lock
                        }
                        String value = "w" + writer + "-t" + token + "-n" + n;
                        Op op = history.invoke(S, token, value);
                        op.complete(reg.write(token, value));
                    }
                    return null;
                }));
            }
            for (Future<?> f : fs) {
                f.get();
            }
        }
        // and one zombie that certainly comes back late, with the first token ever issued
        Op zombie = history.invoke(S, 1, "zombie");
        zombie.complete(reg.write(1, "zombie"));
    }
}
