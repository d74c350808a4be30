package io.stockade.conformance;

import java.util.ArrayList;
import java.util.List;

import io.stockade.conformance.check.History;
import io.stockade.conformance.run.RunResult;

import org.jspecify.annotations.Nullable;

/**
 * One scenario against one target: the run through the proxy, its paired control, and the verdict.
 *
 * @param scenario the scenario
 * @param backend  the target's name
 * @param proxied  the run through the proxy (null if skipped)
 * @param control  the paired control (null if the target has none, or skipped)
 * @param verdict  the verdict
 * @param reasons  why (every reason that made it fail or inconclusive)
 * @param seconds  wall time of both runs
 */
public record ScenarioResult(Scenario scenario, String backend, @Nullable RunResult proxied,
                             @Nullable RunResult control, Verdict verdict, List<String> reasons, double seconds) {

    /** Decides the verdict of a proxied run and its control. */
    static ScenarioResult judge(Scenario scenario, String backend, RunResult proxied, @Nullable RunResult control,
                                double seconds) {
        List<String> reasons = new ArrayList<>();
        Verdict v;
        if (!proxied.check().ok()) {
            v = Verdict.FAIL;
            reasons.add(proxied.check().details().size() + " violation(s) through the proxy");
            long acked = proxied.history().ops().stream()
                    .filter(o -> o.outcome() == History.Outcome.OK).count();
            if (acked > 0 && proxied.history().reads().stream().allMatch(r -> r.value() == null)) {
                reasons.add("no direct read found any value although " + acked + " write(s) were acknowledged: "
                        + "does 'read' point where the route writes (the same table, key or path, with {id} or "
                        + "{key} as the route uses it)?");
            }
        } else {
            v = Verdict.PASS;
            if (proxied.handoffs() == 0) {
                reasons.add("no handoff happened through the proxy");
            }
            if (proxied.faultsEffective() == 0) {
                reasons.add("no fault exposed a stale write through the proxy (" + proxied.faultsInjected()
                        + " injected)");
            }
            proxied.doubts().forEach(d -> reasons.add("the fault did not take effect through the proxy: " + d));
            if (control == null) {
                reasons.add("no paired control (the target has no 'control')");
            } else if (control.check().ok()) {
                reasons.add("the control saw no stale write land: the scenario did not prove it can fail");
            } else if (!control.doubts().isEmpty()) {
                control.doubts().forEach(d -> reasons.add("the fault did not take effect in the control: " + d));
            } else if (scenario == Scenario.STORE_STOP && control.faultsEffective() == 0) {
                reasons.add("the control's stale write was not sent during the store outage: the scenario did not "
                        + "prove that an outage lets one through");
            }
            if (!reasons.isEmpty()) {
                v = Verdict.INCONCLUSIVE;
            }
        }
        return new ScenarioResult(scenario, backend, proxied, control, v, List.copyOf(reasons), seconds);
    }
}
