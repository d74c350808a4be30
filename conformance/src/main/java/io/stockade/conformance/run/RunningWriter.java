package io.stockade.conformance.run;

import java.util.HashMap;
import java.util.Map;

import io.stockade.conformance.check.History.Op;
import io.stockade.conformance.fault.FaultProxy;

import org.jspecify.annotations.Nullable;

/**
 * One writer of a run and what it reported so far. Its fields change under {@link Writers#lock()} (the pump that
 * reads the writer's lines), and are read under it by the fault cycle.
 */
final class RunningWriter {
    final String name;
    /** The writer's own fault proxy, in front of the endpoint. */
    final FaultProxy faults;
    /** Where it runs (null until started). */
    @Nullable WriterHost host;   // set by Writers when it starts the writer
    @Nullable String session;    // the current lease session; null before the first lease
    long token;
    /** True from LEASE until the writer reports FENCED or LOST for that session (or exits). */
    boolean holding;
    /** Why each of the writer's sessions ended: the reason its LOST line gave ("expired", ...), or "fenced". */
    final Map<String, String> ended = new HashMap<>();
    long checks;
    /** The writer's clock (System.nanoTime, one monotonic clock on the machine) at its latest CHECK. */
    long lastCheckNanos;
    /** The writer's clock at its latest INVOKE. */
    long lastInvokeNanos;
    long completions;
    boolean exited;
    final Map<String, Op> ops = new HashMap<>();
    final Map<String, Integer> acks = new HashMap<>();

    RunningWriter(String name, FaultProxy faults) {
        this.name = name;
        this.faults = faults;
    }

    /** Writes acknowledged in the writer's current session (0 before its first lease). */
    int currentAcks() {
        return session == null ? 0 : acks.getOrDefault(session, 0);
    }
}
