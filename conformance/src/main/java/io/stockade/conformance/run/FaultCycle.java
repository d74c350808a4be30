package io.stockade.conformance.run;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.stockade.conformance.Scenario;
import io.stockade.conformance.check.History;
import io.stockade.conformance.storage.StorageReader;

import org.jspecify.annotations.Nullable;

/**
 * The fault cycles of one run. A cycle: wait until the writer holding the lease now has two acknowledged writes,
 * fault it right after its next lease check (the window between check and write: SIGSTOP, latency, a dropped
 * answer), wait until another writer holds a higher token and has had writes acknowledged, then the scenario's
 * extra fault ({@code kill -9} of the proxy, SIGSTOP of the fence store, a hold of the other writers around a
 * delayed write), heal, and wait for the faulted writer's next write to end. Each fault is kept, with its
 * window, for the run's result.
 */
final class FaultCycle {

    /**
     * A fault on {@code session}; for STORE_STOP, the store's outage {@code [outageStart, outageEnd]};
     * {@code tookEffect} false when the suite saw that the fault did not happen (the store still answered, the proxy
     * survived).
     */
    record Fault(String session, long startNanos, long outageStart, long outageEnd, boolean tookEffect,
                 long healedNanos) {
        Fault(String session, long startNanos, long outageStart, long outageEnd, boolean tookEffect) {
            this(session, startNanos, outageStart, outageEnd, tookEffect, 0);
        }

        Fault healed(long nanos) {
            return new Fault(session, startNanos, outageStart, outageEnd, tookEffect, nanos);
        }

        Fault(String session, long startNanos) {
            this(session, startNanos, 0, 0, true);
        }

        Fault failed() {
            return new Fault(session, startNanos, outageStart, outageEnd, false);
        }
    }

    private final Scenario scenario;
    private final String key;
    private final Endpoint endpoint;
    private final StorageReader reader;
    private final ScenarioRunner.Options options;
    private final Writers writers;
    private final History history;
    private final List<String> notes;
    private final List<String> doubts;
    private final List<Fault> faults = new ArrayList<>();

    FaultCycle(Scenario scenario, String key, Endpoint endpoint, StorageReader reader, ScenarioRunner.Options options,
               Writers writers, History history, List<String> notes, List<String> doubts) {
        this.scenario = scenario;
        this.key = key;
        this.endpoint = endpoint;
        this.reader = reader;
        this.options = options;
        this.writers = writers;
        this.history = history;
        this.notes = notes;
        this.doubts = doubts;
    }

    /** The faults injected so far. */
    List<Fault> faults() {
        synchronized (writers.lock()) {
            return List.copyOf(faults);
        }
    }

    private long ttlMs() {
        return options.ttl().toMillis();
    }

    /** How often a cycle stops its victim again when the stop landed after the victim's write had gone out. */
    private static final int STOP_ATTEMPTS = 4;
    /** How long the pump is given to deliver a line the victim printed before it was stopped. */
    private static final Duration INVOKE_SEEN = Duration.ofMillis(300);

    /** The scenarios whose fault is a SIGSTOP of the victim. */
    private static boolean stops(Scenario scenario) {
        return switch (scenario) {
            case PAUSE, PROXY_RESTART, STORE_STOP -> true;
            case DELAY, TIMEOUT, LOST_RESPONSE -> false;
        };
    }

    /**
     * Runs fault cycle {@code n}.
     *
     * @return false when no holder had two acknowledged writes in time (the run ends), else true
     */
    boolean cycle(int n) throws Exception {
        Duration wait = Duration.ofMillis(4 * ttlMs() + 15_000);
        RunningWriter[] victim = new RunningWriter[1];
        // The victim is the current holder: the writer holding the highest token granted (a writer fenced or
        // lost in an earlier cycle keeps its old session, and must not be picked: it makes no lease check).
        if (!writers.await(wait, () -> {
            RunningWriter holder = null;
            for (RunningWriter w : writers.all()) {
                if (w.session != null && w.holding && !w.exited && (holder == null || w.token > holder.token)) {
                    holder = w;
                }
            }
            if (holder != null && holder.acks.getOrDefault(holder.session, 0) >= 2) {
                victim[0] = holder;
                return true;
            }
            return false;
        })) {
            notes.add("cycle " + n + ": no holder had two acknowledged writes within " + wait.toSeconds() + "s");
            return false;
        }
        RunningWriter v = victim[0];
        String session;
        long token;
        long checks;
        synchronized (writers.lock()) {
            session = Objects.requireNonNull(v.session, "the victim was picked with a session, never cleared");
            token = v.token;
            checks = v.checks;
        }
        Armed armed = faultAfterNextCheck(n, v, session, checks);
        if (armed == null) {
            return true;
        }
        long completionsBefore = armed.completionsBefore();
        long faultStart = armed.startNanos();
        switch (scenario) {
            case PAUSE, PROXY_RESTART, STORE_STOP -> {
                // stopped above
            }
            case DELAY -> v.faults.latency(options.lateBy());
            case TIMEOUT -> v.faults.latency(options.lateBy());
            case LOST_RESPONSE -> {
                v.faults.dropNextResponse();
                int dropped = v.faults.droppedResponses();
                if (writers.await(Duration.ofSeconds(5), () -> v.faults.droppedResponses() > dropped)) {
                    v.faults.latency(options.lateBy());   // the retry arrives after the next holder's writes
                } else {
                    notes.add("cycle " + n + ": no answer was dropped");
                }
            }
        }
        Fault fault = new Fault(session, faultStart);
        // Wait for a handoff: a higher token acknowledged twice.
        boolean handoff = writers.await(wait, () -> writers.all().stream().anyMatch(w -> w != v && w.session != null
                && w.token > token && w.acks.getOrDefault(w.session, 0) >= 2));
        if (!handoff) {
            notes.add("cycle " + n + ": no handoff while " + session + " was faulted");
        }
        if (scenario == Scenario.PROXY_RESTART) {
            Endpoint.Restarter r = endpoint.restarter();
            if (r == null) {
                notes.add("cycle " + n + ": the proxy is not launched by the suite: no kill -9 (a plain pause)");
            } else if (handoff) {
                Endpoint.Restarted restarted = r.restart();
                InetSocketAddress moved = restarted.address();
                writers.all().forEach(w -> w.faults.target(moved));
                restarted.notes().forEach(x -> notes.add("cycle " + n + ": " + x));
                notes.add("cycle " + n + ": proxy killed (-9) and restarted on " + moved);
                if (restarted.doubt() != null) {
                    doubts.add("cycle " + n + ": the kill -9 of the proxy did not take effect: " + restarted.doubt());
                    fault = fault.failed();
                }
                Map<String, Integer> before = new HashMap<>();
                synchronized (writers.lock()) {
                    writers.all().forEach(w -> before.put(w.name, w.currentAcks()));
                }
                if (!writers.await(wait, () -> writers.all().stream().anyMatch(w -> w != v && w.session != null
                        && w.acks.getOrDefault(w.session, 0)
                        > Objects.requireNonNull(before.get(w.name), "every writer counted before the restart")))) {
                    notes.add("cycle " + n + ": no write was acknowledged after the restart");
                }
            }
        }
        if (scenario == Scenario.STORE_STOP) {
            fault = storeOutage(n, v, fault, handoff, completionsBefore);
        }
        if (scenario == Scenario.DELAY && handoff) {
            readAcrossDelayedWrite(n, v, completionsBefore);
        }
        // Heal, and wait for the victim's next write to end (or for the delayed write to have arrived).
        switch (scenario) {
            case PAUSE, PROXY_RESTART -> writers.signal("CONT", v);
            default -> {
            }
        }
        long healed = System.nanoTime();
        writers.await(options.lateBy().plusSeconds(5), () -> v.completions > completionsBefore || v.exited);
        if (scenario == Scenario.TIMEOUT || scenario == Scenario.DELAY || scenario == Scenario.LOST_RESPONSE) {
            Thread.sleep(100);
            v.faults.heal();
            healed = System.nanoTime();
        }
        synchronized (writers.lock()) {
            faults.add(fault.healed(healed));
        }
        return true;
    }

    /** A fault about to start: the victim's completed writes then, and the fault's start. */
    private record Armed(long completionsBefore, long startNanos) {
    }

    /**
     * Waits for the victim's next lease check, and in a stop scenario stops it there, in the window between its check
     * and its write; a stop that landed after the write had gone out is undone and tried again at the next check.
     *
     * @return the fault's start, or null when the victim made no lease check in time (the cycle is skipped)
     */
    private @Nullable Armed faultAfterNextCheck(int n, RunningWriter v, String session, long checks) throws IOException,
            InterruptedException {
        long checksBefore = checks;
        for (int attempt = 1; ; attempt++) {
            // Fault right after the victim's next lease check: between its check and its write.
            long since = checksBefore;
            boolean timedOut = !writers.await(Duration.ofMillis(ttlMs() + 5000),
                    () -> v.checks > since || !v.holding || v.exited || !session.equals(v.session));
            long completionsBefore;
            long checkedAt;
            synchronized (writers.lock()) {
                if (v.checks == since) {
                    // No check, so no window to fault in: skip this cycle (the next one faults the new holder) rather
                    // than end the run early (a long run once ended after two cycles). Either the victim lost its
                    // lease first (a slow write on a loaded machine ran past its TTL, or a renewal was refused: it
                    // makes no check until it holds the lease again, which the next holder keeps), or a loaded
                    // machine starved it past the wait.
                    notes.add("cycle " + n + ": " + session + (timedOut ? " made no lease check"
                            : " lost its lease before its next lease check (" + v.ended.getOrDefault(session, "exited")
                                    + ")") + "; cycle skipped");
                    return null;
                }
                completionsBefore = v.completions;
                checkedAt = v.lastCheckNanos;
            }
            long faultStart = System.nanoTime();
            if (!stops(scenario)) {
                return new Armed(completionsBefore, faultStart);
            }
            writers.signal("STOP", v);
            // Did the stop land in the window? A write the victim began after its check went out before it: the
            // victim, resumed after the handoff, would check its lease before its next write, and no stale write
            // could follow. Its INVOKE line, printed before the stop, reaches the pump within the wait.
            if (attempt == STOP_ATTEMPTS || !writers.await(INVOKE_SEEN, () -> v.lastInvokeNanos > checkedAt)) {
                return new Armed(completionsBefore, faultStart);
            }
            notes.add("cycle " + n + ": the stop landed after " + v.name + "'s write had gone out; again at its next"
                    + " lease check");
            synchronized (writers.lock()) {
                checksBefore = v.checks;
            }
            writers.signal("CONT", v);
        }
    }

    /**
     * STORE_STOP, after the handoff: {@code kill -STOP} the fence store, wake the zombie so its write goes out while
     * the store hangs, wait for that write to end (through the proxy: refused, 503), let its retries run into the
     * outage too, then {@code kill -9} the stopped store and start it again (same data), and wait until a write is
     * acknowledged once more. Without the proxy (the control) the store is stopped all the same, and nothing
     * stands between the zombie and the storage. Returns the fault with its outage window.
     */
    private Fault storeOutage(int n, RunningWriter v, Fault fault, boolean handoff, long completionsBefore)
            throws Exception {
        StoreProcess store = options.store();
        if (store == null) {
            notes.add("cycle " + n + ": the fence store is not launched by the suite: no outage (a plain pause)");
            writers.signal("CONT", v);
            return fault;
        }
        if (!handoff) {
            writers.signal("CONT", v);
            return fault;
        }
        // The store must answer a probe now and hang once stopped, or the outage is not proven (a store outside the
        // launched process tree keeps serving).
        StoreProcess.Probe up = store.probe(PROBE);
        List<Long> stopped = store.pause();
        long outageStart = System.nanoTime();
        notes.add("cycle " + n + ": fence store stopped (SIGSTOP, pids " + stopped + ")");
        CompletableFuture<StoreProcess.Probe> during = new CompletableFuture<>();
        Thread.ofVirtual().start(() -> during.complete(store.probe(PROBE)));
        writers.signal("CONT", v);
        if (!writers.await(options.lateBy().plusSeconds(10), () -> v.completions > completionsBefore || v.exited)) {
            notes.add("cycle " + n + ": the zombie's write did not end during the store outage");
        }
        Thread.sleep(500);   // its first retry (200 ms back-off) and the others' writes meet the outage as well
        long outageEnd = System.nanoTime();
        StoreProcess.Probe hung = during.get(PROBE.toMillis() + 5000, TimeUnit.MILLISECONDS);
        String doubt = up != StoreProcess.Probe.ANSWERED
                ? "the fence store did not answer a probe on its ready port before the SIGSTOP (" + up
                + "), so the outage cannot be confirmed"
                : hung == StoreProcess.Probe.ANSWERED
                ? "the fence store still answered on its ready port after SIGSTOP of " + stopped
                + " (does store.launch start it outside its own process tree, e.g. a daemon?)"
                : null;
        if (doubt != null) {
            doubts.add("cycle " + n + ": " + doubt);
        } else {
            notes.add("cycle " + n + ": the store's port " + hung.name().toLowerCase(Locale.ROOT)
                    + " during the outage");
        }
        store.restart(Duration.ofSeconds(30));
        notes.add("cycle " + n + ": fence store killed (-9) and restarted after " + (outageEnd - outageStart)
                / 1_000_000 + " ms");
        Map<String, Integer> before = new HashMap<>();
        synchronized (writers.lock()) {
            writers.all().forEach(w -> before.put(w.name, w.currentAcks()));
        }
        if (!writers.await(Duration.ofMillis(4 * ttlMs() + 15_000), () -> writers.all().stream()
                .anyMatch(w -> w.currentAcks() > before.getOrDefault(w.name, 0)))) {
            notes.add("cycle " + n + ": no write was acknowledged after the store came back");
        }
        Fault outage = new Fault(fault.session(), fault.startNanos(), outageStart, outageEnd, true);
        return doubt == null ? outage : outage.failed();
    }

    /**
     * DELAY, after the handoff: the victim's write is held back by its fault proxy and lands after
     * the new holder's writes. Without an applied order (S3, an HTTP upstream) a stale write that lands is visible
     * only until the next holder's write replaces it, a window of one writer's pace that the sampler's reads could
     * miss several runs in a row on a loaded machine (an inconclusive control). So the other writers are held
     * ({@code kill -STOP}) from {@link #HOLD_BEFORE_DUE} before the delayed bytes are due until the victim's write
     * has been answered (it landed, or was refused) and a direct read after that answer has completed; then they go
     * on. Both sides of the pair are held alike; the hold is shorter than a lease's TTL in every shipped target, and a
     * holder whose lease lapsed meanwhile finds out at its next check as after any pause.
     */
    private void readAcrossDelayedWrite(int n, RunningWriter v, long completionsBefore) throws Exception {
        long due = v.faults.delayedUntilNanos();
        if (due == Long.MIN_VALUE) {
            notes.add("cycle " + n + ": no bytes of " + v.name + " were held back");
            return;
        }
        long holdAt = due - HOLD_BEFORE_DUE.toNanos();
        long sleepMs = (holdAt - System.nanoTime()) / 1_000_000L;
        if (sleepMs > 0) {
            Thread.sleep(sleepMs);
        }
        List<RunningWriter> held = new ArrayList<>();
        synchronized (writers.lock()) {
            for (RunningWriter w : writers.all()) {
                if (w != v && !w.exited && w.host != null && w.host.isAlive()) {
                    held.add(w);
                }
            }
        }
        long heldAt = System.nanoTime();
        try {
            for (RunningWriter w : held) {
                writers.signal("STOP", w);
            }
            if (writers.await(options.lateBy().plusSeconds(5), () -> v.completions > completionsBefore || v.exited)) {
                long start = System.nanoTime();
                try {
                    String value = reader.read(key);
                    history.read(key, start, System.nanoTime(), value);
                } catch (IOException e) {
                    notes.add("cycle " + n + ": the read after the delayed write failed: " + e.getMessage());
                }
            } else {
                notes.add("cycle " + n + ": the delayed write of " + v.name + " was not answered");
            }
        } finally {
            writers.resumeAll(held);
        }
        notes.add("cycle " + n + ": " + held.size() + " other writer(s) held for "
                + (System.nanoTime() - heldAt) / 1_000_000L + " ms around the delayed write"
                + (sleepMs < 0 ? " (held " + -sleepMs + " ms late)" : ""));
    }

    /** How long before a held-back write is due the other writers are held (their writes in flight land first). */
    private static final Duration HOLD_BEFORE_DUE = Duration.ofMillis(250);

    /** How long a probe of the fence store waits for an answer (a live store answers in milliseconds). */
    private static final Duration PROBE = Duration.ofSeconds(1);
}
