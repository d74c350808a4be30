package io.stockade.conformance;

import java.util.List;
import java.util.Map;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.conformance.run.RunResult;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The honesty gates: a run proves nothing unless a handoff and an effective fault happened and the control failed. */
class VerdictTest {

    /** A clean history: one holder, token 1, acknowledged and read back. */
    private static RunResult clean(Scenario s, int handoffs, int effective) {
        History h = new History();
        h.invokeAt("k", "a", 1, "a1", 1).completeAt(200, 2);
        h.read("k", 3, 4, "a1");
        HistoryChecker.Result check = HistoryChecker.check(h, Map.of("k", "a1"), null);
        assertTrue(check.ok(), check.toString());
        return new RunResult(s, false, "k", h, "a1", check, handoffs, 1, effective, effective, List.of());
    }

    /** The control: token 2 acknowledged, then the zombie's token 1 landed (final value a1). */
    private static RunResult caught(Scenario s, int effective) {
        History h = new History();
        h.invokeAt("k", "b", 2, "b1", 1).completeAt(200, 2);
        h.invokeAt("k", "a", 1, "a1", 3).completeAt(200, 4);
        h.read("k", 5, 6, "a1");
        HistoryChecker.Result check = HistoryChecker.check(h, Map.of("k", "a1"), null);
        assertFalse(check.ok());
        return new RunResult(s, true, "k", h, "a1", check, 1, 1, effective, effective, List.of());
    }

    @Test
    void aRunWithoutHandoffOrEffectiveFaultIsInconclusive() {
        assertEquals(Verdict.PASS, ScenarioResult.judge(Scenario.PAUSE, "t", clean(Scenario.PAUSE, 1, 1),
                caught(Scenario.PAUSE, 1), 1).verdict());
        assertEquals(Verdict.INCONCLUSIVE, ScenarioResult.judge(Scenario.PAUSE, "t", clean(Scenario.PAUSE, 0, 1),
                caught(Scenario.PAUSE, 1), 1).verdict());
        assertEquals(Verdict.INCONCLUSIVE, ScenarioResult.judge(Scenario.PAUSE, "t", clean(Scenario.PAUSE, 1, 0),
                caught(Scenario.PAUSE, 1), 1).verdict());
        assertEquals(Verdict.INCONCLUSIVE, ScenarioResult.judge(Scenario.PAUSE, "t", clean(Scenario.PAUSE, 1, 1),
                null, 1).verdict());
        assertEquals(Verdict.INCONCLUSIVE, ScenarioResult.judge(Scenario.PAUSE, "t", clean(Scenario.PAUSE, 1, 1),
                clean(Scenario.PAUSE, 1, 1), 1).verdict());
    }

    @Test
    void aStoreStopControlWhoseStaleWriteMissedTheOutageProvesNothing() {
        assertEquals(Verdict.PASS, ScenarioResult.judge(Scenario.STORE_STOP, "t",
                clean(Scenario.STORE_STOP, 1, 1), caught(Scenario.STORE_STOP, 1), 1).verdict());
        ScenarioResult r = ScenarioResult.judge(Scenario.STORE_STOP, "t", clean(Scenario.STORE_STOP, 1, 1),
                caught(Scenario.STORE_STOP, 0), 1);
        assertEquals(Verdict.INCONCLUSIVE, r.verdict());
        assertTrue(r.reasons().get(0).contains("store outage"), r.reasons().toString());
    }

    @Test
    void aFaultThatDidNotTakeEffectMakesTheVerdictInconclusiveAndSaysWhy() {
        RunResult ok = clean(Scenario.STORE_STOP, 1, 1);
        RunResult doubted = new RunResult(ok.scenario(), false, ok.key(), ok.history(), ok.finalValue(), ok.check(),
                1, 1, 1, 1, List.of(), List.of("cycle 1: the fence store still answered on its ready port"));
        ScenarioResult r = ScenarioResult.judge(Scenario.STORE_STOP, "t", doubted, caught(Scenario.STORE_STOP, 1), 1);
        assertEquals(Verdict.INCONCLUSIVE, r.verdict());
        assertTrue(r.reasons().stream().anyMatch(x -> x.contains("did not take effect through the proxy")
                && x.contains("still answered")), r.reasons().toString());
        RunResult c = caught(Scenario.STORE_STOP, 1);
        RunResult controlDoubted = new RunResult(c.scenario(), true, c.key(), c.history(), c.finalValue(), c.check(),
                1, 1, 1, 1, List.of(), List.of("cycle 1: the fence store still answered on its ready port"));
        r = ScenarioResult.judge(Scenario.STORE_STOP, "t", ok, controlDoubted, 1);
        assertEquals(Verdict.INCONCLUSIVE, r.verdict());
        assertTrue(r.reasons().get(0).contains("in the control"), r.reasons().toString());
    }

    @Test
    void aViolationThroughTheProxyFails() {
        assertEquals(Verdict.FAIL, ScenarioResult.judge(Scenario.PAUSE, "t", caught(Scenario.PAUSE, 1),
                caught(Scenario.PAUSE, 1), 1).verdict());
    }
}
