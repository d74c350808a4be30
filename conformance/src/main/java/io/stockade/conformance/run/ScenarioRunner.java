package io.stockade.conformance.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.stockade.conformance.Scenario;
import io.stockade.conformance.Target;
import io.stockade.conformance.check.History;
import io.stockade.conformance.check.History.Op;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.conformance.fault.FaultProxy;
import io.stockade.conformance.lease.CounterLeaseServer;
import io.stockade.conformance.storage.StorageReader;

import org.jspecify.annotations.Nullable;

/**
 * Runs one scenario once: starts the lease counter, the {@link Writers} (one {@link FaultProxy} each in front of the
 * {@link Endpoint}: the proxy, or the storage itself for the control) and a reader that samples the storage
 * directly; then injects the scenario's fault in cycles ({@link FaultCycle}) until the duration is spent, stops
 * everything, reads the final state and checks the history.
 */
public final class ScenarioRunner {

    /**
     * Knobs of one run.
     *
     * @param leaseSpec null for the built-in counter, else a {@link io.stockade.conformance.lease.LeaseProviders}
     *                  spec in which {@code {lock}} is replaced by the run's lock name
     * @param store     the fence store the suite launched (for {@link Scenario#STORE_STOP}), or null
     */
    public record Options(Duration duration, Duration ttl, int writers, @Nullable String leaseSpec, String header,
                          Duration readEvery, Path workDir, @Nullable StoreProcess store, Target.Request request) {
        /** Options with the default request (a plain-text PUT of the value). */
        public Options(Duration duration, Duration ttl, int writers, @Nullable String leaseSpec, String header,
                       Duration readEvery, Path workDir, @Nullable StoreProcess store) {
            this(duration, ttl, writers, leaseSpec, header, readEvery, workDir, store, Target.Request.DEFAULT);
        }

        /** The latency that makes a write arrive after the next holder's writes. */
        Duration lateBy() {
            return Duration.ofMillis(2 * ttl.toMillis() + 1500);
        }
    }

    private final Scenario scenario;
    private final boolean control;
    private final String key;
    private final Endpoint endpoint;
    private final StorageReader reader;
    private final Options options;
    private final History history = new History();
    private final List<String> notes = new ArrayList<>();
    private final List<String> doubts = new ArrayList<>();

    public ScenarioRunner(Scenario scenario, boolean control, String key, Endpoint endpoint, StorageReader reader,
                          Options options) {
        this.scenario = scenario;
        this.control = control;
        this.key = key;
        this.endpoint = endpoint;
        this.reader = reader;
        this.options = options;
    }

    /** Adds a note for the report before the run (null: none); returns this runner. */
    public ScenarioRunner note(@Nullable String note) {
        if (note != null) {
            notes.add(note);
        }
        return this;
    }

    public RunResult run() throws Exception {
        long end = System.nanoTime() + options.duration.toNanos();
        String spec = options.leaseSpec;
        CounterLeaseServer leases = spec == null ? CounterLeaseServer.start(options.ttl, 1) : null;
        String leaseSpec = leases != null ? leases.spec()
                : Objects.requireNonNull(spec, "no counter server: a spec").replace("{lock}", key);   // a lock per run
        Writers writers = new Writers(scenario, key, endpoint, options, history, notes);
        FaultCycle cycles = new FaultCycle(scenario, key, endpoint, reader, options, writers, history, notes, doubts);
        Thread sampler = null;
        writers.openSignals();
        try {
            for (int i = 1; i <= options.writers; i++) {
                writers.start("w" + i, leaseSpec);
            }
            sampler = Thread.ofPlatform().daemon().name("storage-sampler").start(() -> sample(writers.lock()));
            int cycle = 0;
            do {
                cycle++;
                if (!cycles.cycle(cycle)) {
                    break;
                }
            } while (System.nanoTime() < end);
        } finally {
            writers.stop();
            // Let delayed bytes arrive before the final read: wait until the last chunk a fault proxy held back is
            // due, plus 500 ms for the target to apply it (300 ms at least). A delayed write whose answer the
            // cycle already waited for is long delivered; a timed-out one may still be on its way.
            long due = writers.all().stream().mapToLong(w -> w.faults.delayedUntilNanos()).max()
                    .orElse(Long.MIN_VALUE);
            long settleMs = due == Long.MIN_VALUE ? 300
                    : Math.max(300, (due - System.nanoTime()) / 1_000_000L + 500);
            Thread.sleep(settleMs);
            if (sampler != null) {
                sampler.interrupt();
                sampler.join(2000);
            }
            writers.all().forEach(w -> w.faults.close());
            if (leases != null) {
                leases.close();
            }
            writers.closeSignals();
        }
        String finalValue = finalRead();
        long now = System.nanoTime();
        history.read(key, now, now, finalValue);
        Map<String, String> fin = new HashMap<>();
        fin.put(key, finalValue);
        HistoryChecker.Result check = HistoryChecker.check(history, fin, null);
        int exposed = 0;
        int effective = 0;
        List<Op> all = history.ops();
        for (Op o : all) {
            if (exposed(o, all)) {
                exposed++;
            }
        }
        List<FaultCycle.Fault> faults = cycles.faults();
        for (FaultCycle.Fault f : faults) {
            if (f.tookEffect() && all.stream().anyMatch(o -> f.session().equals(o.holder())
                    && o.endNanos() >= f.startNanos() && exposed(o, all)
                    && (f.outageStart() == 0   // store-stop: sent while the store was down
                    || (o.startNanos() >= f.outageStart() && o.startNanos() <= f.outageEnd())))) {
                effective++;
            }
        }
        List<RunResult.FaultWindow> windows = faults.stream()
                .map(f -> new RunResult.FaultWindow(f.session(), f.startNanos(), f.healedNanos())).toList();
        return new RunResult(scenario, control, key, history, finalValue, check, Math.max(0, writers.grants() - 1),
                faults.size(), effective, exposed, List.copyOf(notes), List.copyOf(doubts), windows);
    }

    /**
     * The final state, read three times at most (200 ms apart) if the read fails. A read-back that keeps failing (a
     * document with nothing at {@code read.json}, a query error) leaves the run without a final state: it is never
     * taken for "absent", which would look like a lost write.
     *
     * @throws java.io.UncheckedIOException naming the reader and the last failure
     */
    private @Nullable String finalRead() throws InterruptedException {
        IOException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            try {
                return reader.read(key);
            } catch (IOException e) {
                last = e;
                Thread.sleep(200);
            }
        }
        throw new UncheckedIOException("the final read of the storage (" + reader.describe() + ") failed: "
                + Objects.requireNonNull(last, "each of the three attempts failed").getMessage(), last);
    }

    /** Could {@code o} have landed after a higher token was acknowledged? (An unknown outcome may land any time.) */
    private static boolean exposed(Op o, List<Op> all) {
        long oEnd = o.outcome() == History.Outcome.OK || o.outcome() == History.Outcome.FAIL
                ? o.endNanos() : Long.MAX_VALUE;
        return all.stream().anyMatch(a -> a.outcome() == History.Outcome.OK && a.token() > o.token()
                && a.endNanos() < oEnd);
    }

    // ------------------------------------------------------------------ direct reads

    private void sample(Object lock) {
        long every = Math.max(1, options.readEvery.toMillis());
        int errors = 0;
        while (!Thread.currentThread().isInterrupted()) {
            long start = System.nanoTime();
            try {
                String value = reader.read(key);
                history.read(key, start, System.nanoTime(), value);
            } catch (IOException e) {
                if (errors++ == 0) {
                    synchronized (lock) {
                        notes.add("direct read failed: " + e.getMessage());
                    }
                }
            }
            try {
                Thread.sleep(every);
            } catch (InterruptedException e) {
                return;
            }
        }
    }
}
