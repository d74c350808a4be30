package io.stockade.conformance.run;

import java.util.List;

import io.stockade.conformance.Scenario;
import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;

import org.jspecify.annotations.Nullable;

/**
 * One run of one scenario, through the proxy or as the control.
 *
 * @param scenario        the scenario
 * @param control         true for the paired control (straight to the storage)
 * @param key             the resource key written
 * @param history         every write and every direct read
 * @param finalValue      the value read from the storage at the end (null: absent)
 * @param check           the checker's verdict on the history and the final value
 * @param handoffs        leases granted after the first one
 * @param faultsInjected  faults injected
 * @param faultsEffective faults after which the faulted holder really sent a write that could land after a
 *                        higher-token acknowledgement (an exposed write)
 * @param exposedOps      writes that could have landed after a higher-token acknowledgement
 * @param notes           what happened, for the report (timeouts, restarts...)
 * @param doubts          why an injected fault did not take effect (a store still answering after its SIGSTOP, a
 *                        proxy still up after its kill -9): each one makes the verdict INCONCLUSIVE
 * @param faultWindows    when each fault was injected and healed, on the history's clock (for the HTML report)
 */
public record RunResult(Scenario scenario, boolean control, String key, History history, @Nullable String finalValue,
                        HistoryChecker.Result check, int handoffs, int faultsInjected, int faultsEffective,
                        int exposedOps, List<String> notes, List<String> doubts, List<FaultWindow> faultWindows) {

    /** One fault: on whose lease session, from injection to healing (System.nanoTime, as the history's ops). */
    public record FaultWindow(String holder, long startNanos, long endNanos) {
    }

    public RunResult {
        notes = List.copyOf(notes);
        doubts = List.copyOf(doubts);
        faultWindows = List.copyOf(faultWindows);
    }

    /** A run with its doubts, without fault windows. */
    public RunResult(Scenario scenario, boolean control, String key, History history, @Nullable String finalValue,
                     HistoryChecker.Result check, int handoffs, int faultsInjected, int faultsEffective,
                     int exposedOps, List<String> notes, List<String> doubts) {
        this(scenario, control, key, history, finalValue, check, handoffs, faultsInjected, faultsEffective,
                exposedOps, notes, doubts, List.of());
    }

    /** A run without doubts. */
    public RunResult(Scenario scenario, boolean control, String key, History history, @Nullable String finalValue,
                     HistoryChecker.Result check, int handoffs, int faultsInjected, int faultsEffective,
                     int exposedOps, List<String> notes) {
        this(scenario, control, key, history, finalValue, check, handoffs, faultsInjected, faultsEffective,
                exposedOps, notes, List.of());
    }
}
