package io.stockade.conformance.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.stockade.conformance.Scenario;
import io.stockade.conformance.Target;
import io.stockade.conformance.Template;
import io.stockade.conformance.check.History;
import io.stockade.conformance.check.History.Op;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.conformance.fault.FaultProxy;
import io.stockade.conformance.lease.CounterLeaseServer;
import io.stockade.conformance.storage.StorageReader;
import io.stockade.conformance.writer.SigV4;
import io.stockade.conformance.writer.SqlWrite;
import io.stockade.conformance.writer.WriterMain;

/**
 * Runs one scenario once: starts the lease counter, one {@link FaultProxy} per writer in front of the endpoint (the
 * proxy, or the storage itself for the control), the writer processes and a reader that samples the storage
 * directly; then injects the scenario's fault in cycles until the duration is spent, stops everything, reads the
 * final state and checks the history.
 *
 * <p>A cycle: wait for a holder that has written, fault it right after its next lease check (the window between
 * check and write), wait until another writer holds a higher token and has had writes acknowledged, heal, and wait
 * for the faulted writer's next write to end.
 */
public final class ScenarioRunner {

    /**
     * Knobs of one run.
     *
     * @param leaseSpec null for the built-in counter, else a {@link io.stockade.conformance.lease.LeaseProviders}
     *                  spec in which {@code {lock}} is replaced by the run's lock name
     * @param store     the fence store the suite launched (for {@link Scenario#STORE_STOP}), or null
     */
    public record Options(Duration duration, Duration ttl, int writers, String leaseSpec, String header,
                          Duration readEvery, Path workDir, StoreProcess store, Target.Request request) {
        /** Options with the default request (a plain-text PUT of the value). */
        public Options(Duration duration, Duration ttl, int writers, String leaseSpec, String header,
                       Duration readEvery, Path workDir, StoreProcess store) {
            this(duration, ttl, writers, leaseSpec, header, readEvery, workDir, store, Target.Request.DEFAULT);
        }
    }

    /** Where the writers send their writes. */
    public interface Endpoint {
        /** The current {@code host:port} (changes when a launched proxy restarts). */
        InetSocketAddress address();

        /** The request path for a key. */
        String path(String key);

        /** The method of a write (the proxy's route: {@code proxy.method}; the suite's own shims: PUT). */
        default String method() {
            return "PUT";
        }

        /** How writers sign their PUTs (an S3 endpoint with SigV4), or null for unsigned requests. */
        default SigV4 signer() {
            return null;
        }

        /** kill -9 and restart; null when the suite does not own the proxy. */
        default Restarter restarter() {
            return null;
        }

        /**
         * The SQL writes of a SQL target (each writer connects to {@link #address()} through its fault proxy and
         * runs the statement), or null: the writers send HTTP requests to {@link #path}.
         */
        default Target.Sql sql() {
            return null;
        }
    }

    /** kill -9 and restart of a launched proxy. */
    public interface Restarter {
        Restarted restart() throws Exception;
    }

    /**
     * A restarted proxy.
     *
     * @param address the new address
     * @param doubt   null if the old proxy was really gone before the restart, else why it was not (the kill -9 did
     *                not take effect)
     * @param notes   what happened on the way (failed start attempts), for the report
     */
    public record Restarted(InetSocketAddress address, String doubt, List<String> notes) {
        public Restarted(InetSocketAddress address, String doubt) {
            this(address, doubt, List.of());
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
    private final Object lock = new Object();
    private final List<Writer> writers = new ArrayList<>();
    private final List<Fault> faults = new ArrayList<>();
    private int grants;
    /** Opened by {@link #run()}: SIGSTOP and SIGCONT for the writers. */
    private Signals signals;

    /**
     * A fault on {@code session}; for STORE_STOP, the store's outage {@code [outageStart, outageEnd]};
     * {@code tookEffect} false when the suite saw that the fault did not happen (the store still answered, the proxy
     * survived).
     */
    private record Fault(String session, long startNanos, long outageStart, long outageEnd, boolean tookEffect,
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

    /** One writer process and what it reported. */
    private static final class Writer {
        final String name;
        final FaultProxy faults;
        Process process;
        PrintWriter stdin;
        String session;
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

        Writer(String name, FaultProxy faults) {
            this.name = name;
            this.faults = faults;
        }
    }

    public ScenarioRunner(Scenario scenario, boolean control, String key, Endpoint endpoint, StorageReader reader,
                          Options options) {
        this.scenario = scenario;
        this.control = control;
        this.key = key;
        this.endpoint = endpoint;
        this.reader = reader;
        this.options = options;
    }

    private long ttlMs() {
        return options.ttl.toMillis();
    }

    /** Adds a note for the report before the run (null: none); returns this runner. */
    public ScenarioRunner note(String note) {
        if (note != null) {
            notes.add(note);
        }
        return this;
    }

    /** The latency that makes a write arrive after the next holder's writes. */
    private Duration lateBy() {
        return Duration.ofMillis(2 * ttlMs() + 1500);
    }

    public RunResult run() throws Exception {
        long end = System.nanoTime() + options.duration.toNanos();
        CounterLeaseServer leases = options.leaseSpec == null ? CounterLeaseServer.start(options.ttl, 1) : null;
        String leaseSpec = leases != null ? leases.spec()
                : options.leaseSpec.replace("{lock}", key);   // one lock per run: the run's key
        Thread sampler = null;
        signals = Signals.start();
        try {
            for (int i = 1; i <= options.writers; i++) {
                Writer w = new Writer("w" + i, FaultProxy.start(endpoint.address()));
                writers.add(w);
                start(w, leaseSpec);
            }
            sampler = Thread.ofPlatform().daemon().name("storage-sampler").start(this::sample);
            int cycle = 0;
            do {
                cycle++;
                if (!cycle(cycle)) {
                    break;
                }
            } while (System.nanoTime() < end);
        } finally {
            stopWriters();
            // Let delayed bytes arrive before the final read: wait until the last chunk a fault proxy held back is
            // due, plus 500 ms for the target to apply it (300 ms at least). A delayed write whose answer the
            // cycle already waited for is long delivered; a timed-out one may still be on its way.
            long due = writers.stream().mapToLong(w -> w.faults.delayedUntilNanos()).max().orElse(Long.MIN_VALUE);
            long settleMs = due == Long.MIN_VALUE ? 300
                    : Math.max(300, (due - System.nanoTime()) / 1_000_000L + 500);
            Thread.sleep(settleMs);
            if (sampler != null) {
                sampler.interrupt();
                sampler.join(2000);
            }
            writers.forEach(w -> w.faults.close());
            if (leases != null) {
                leases.close();
            }
            signals.close();
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
        for (Fault f : faults) {
            if (f.tookEffect && all.stream().anyMatch(o -> f.session.equals(o.holder()) && o.endNanos() >= f.startNanos
                    && exposed(o, all) && (f.outageStart == 0   // store-stop: sent while the store was down
                    || (o.startNanos() >= f.outageStart && o.startNanos() <= f.outageEnd)))) {
                effective++;
            }
        }
        List<RunResult.FaultWindow> windows = faults.stream()
                .map(f -> new RunResult.FaultWindow(f.session, f.startNanos, f.healedNanos)).toList();
        return new RunResult(scenario, control, key, history, finalValue, check, Math.max(0, grants - 1),
                faults.size(), effective, exposed, List.copyOf(notes), List.copyOf(doubts), windows);
    }

    /**
     * The final state, read three times at most (200 ms apart) if the read fails. A read-back that keeps failing (a
     * document with nothing at {@code read.json}, a query error) leaves the run without a final state: it is never
     * taken for "absent", which would look like a lost write.
     *
     * @throws java.io.UncheckedIOException naming the reader and the last failure
     */
    private String finalRead() throws InterruptedException {
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
                + last.getMessage(), last);
    }

    /** Could {@code o} have landed after a higher token was acknowledged? (An unknown outcome may land any time.) */
    private static boolean exposed(Op o, List<Op> all) {
        long oEnd = o.outcome() == History.Outcome.OK || o.outcome() == History.Outcome.FAIL
                ? o.endNanos() : Long.MAX_VALUE;
        return all.stream().anyMatch(a -> a.outcome() == History.Outcome.OK && a.token() > o.token()
                && a.endNanos() < oEnd);
    }

    // ------------------------------------------------------------------ one fault cycle

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

    private boolean cycle(int n) throws Exception {
        Duration wait = Duration.ofMillis(4 * ttlMs() + 15_000);
        Writer[] victim = new Writer[1];
        // The victim is the current holder: the writer holding the highest token granted (a writer fenced or
        // lost in an earlier cycle keeps its old session, and must not be picked: it makes no lease check).
        if (!await(wait, () -> {
            Writer holder = null;
            for (Writer w : writers) {
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
        Writer v = victim[0];
        String session;
        long token;
        long checks;
        synchronized (lock) {
            session = v.session;
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
            case DELAY -> v.faults.latency(lateBy());
            case TIMEOUT -> v.faults.latency(lateBy());
            case LOST_RESPONSE -> {
                v.faults.dropNextResponse();
                int dropped = v.faults.droppedResponses();
                if (await(Duration.ofSeconds(5), () -> v.faults.droppedResponses() > dropped)) {
                    v.faults.latency(lateBy());   // the retry arrives after the next holder's writes
                } else {
                    notes.add("cycle " + n + ": no answer was dropped");
                }
            }
        }
        Fault fault = new Fault(session, faultStart);
        // Wait for a handoff: a higher token acknowledged twice.
        boolean handoff = await(wait, () -> writers.stream().anyMatch(w -> w != v && w.session != null
                && w.token > token && w.acks.getOrDefault(w.session, 0) >= 2));
        if (!handoff) {
            notes.add("cycle " + n + ": no handoff while " + session + " was faulted");
        }
        if (scenario == Scenario.PROXY_RESTART) {
            Restarter r = endpoint.restarter();
            if (r == null) {
                notes.add("cycle " + n + ": the proxy is not launched by the suite: no kill -9 (a plain pause)");
            } else if (handoff) {
                Restarted restarted = r.restart();
                InetSocketAddress moved = restarted.address();
                writers.forEach(w -> w.faults.target(moved));
                restarted.notes().forEach(x -> notes.add("cycle " + n + ": " + x));
                notes.add("cycle " + n + ": proxy killed (-9) and restarted on " + moved);
                if (restarted.doubt() != null) {
                    doubts.add("cycle " + n + ": the kill -9 of the proxy did not take effect: " + restarted.doubt());
                    fault = fault.failed();
                }
                Map<String, Integer> before = new HashMap<>();
                synchronized (lock) {
                    writers.forEach(w -> before.put(w.name, w.session == null ? 0 : w.acks.getOrDefault(w.session, 0)));
                }
                if (!await(wait, () -> writers.stream().anyMatch(w -> w != v && w.session != null
                        && w.acks.getOrDefault(w.session, 0) > before.get(w.name)))) {
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
            case PAUSE, PROXY_RESTART -> signal("CONT", v);
            default -> {
            }
        }
        long healed = System.nanoTime();
        await(lateBy().plusSeconds(5), () -> v.completions > completionsBefore || v.exited);
        if (scenario == Scenario.TIMEOUT || scenario == Scenario.DELAY || scenario == Scenario.LOST_RESPONSE) {
            Thread.sleep(100);
            v.faults.heal();
            healed = System.nanoTime();
        }
        synchronized (lock) {
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
    private Armed faultAfterNextCheck(int n, Writer v, String session, long checks) throws IOException,
            InterruptedException {
        long checksBefore = checks;
        for (int attempt = 1; ; attempt++) {
            // Fault right after the victim's next lease check: between its check and its write.
            long since = checksBefore;
            boolean timedOut = !await(Duration.ofMillis(ttlMs() + 5000),
                    () -> v.checks > since || !v.holding || v.exited || !session.equals(v.session));
            long completionsBefore;
            long checkedAt;
            synchronized (lock) {
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
            signal("STOP", v);
            // Did the stop land in the window? A write the victim began after its check went out before it: the
            // victim, resumed after the handoff, would check its lease before its next write, and no stale write
            // could follow. Its INVOKE line, printed before the stop, reaches the pump within the wait.
            if (attempt == STOP_ATTEMPTS || !await(INVOKE_SEEN, () -> v.lastInvokeNanos > checkedAt)) {
                return new Armed(completionsBefore, faultStart);
            }
            notes.add("cycle " + n + ": the stop landed after " + v.name + "'s write had gone out; again at its next"
                    + " lease check");
            synchronized (lock) {
                checksBefore = v.checks;
            }
            signal("CONT", v);
        }
    }

    /**
     * STORE_STOP, after the handoff: {@code kill -STOP} the fence store, wake the zombie so its write goes out while
     * the store hangs, wait for that write to end (through the proxy: refused, 503), let its retries run into the
     * outage too, then {@code kill -9} the stopped store and start it again (same data), and wait until a write is
     * acknowledged once more. Without the proxy (the control) the store is stopped all the same, and nothing
     * stands between the zombie and the storage. Returns the fault with its outage window.
     */
    private Fault storeOutage(int n, Writer v, Fault fault, boolean handoff, long completionsBefore)
            throws Exception {
        StoreProcess store = options.store;
        if (store == null) {
            notes.add("cycle " + n + ": the fence store is not launched by the suite: no outage (a plain pause)");
            signal("CONT", v);
            return fault;
        }
        if (!handoff) {
            signal("CONT", v);
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
        signal("CONT", v);
        if (!await(lateBy().plusSeconds(10), () -> v.completions > completionsBefore || v.exited)) {
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
        synchronized (lock) {
            writers.forEach(w -> before.put(w.name, w.session == null ? 0 : w.acks.getOrDefault(w.session, 0)));
        }
        if (!await(Duration.ofMillis(4 * ttlMs() + 15_000), () -> writers.stream().anyMatch(w -> w.session != null
                && w.acks.getOrDefault(w.session, 0) > before.getOrDefault(w.name, 0)))) {
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
    private void readAcrossDelayedWrite(int n, Writer v, long completionsBefore) throws Exception {
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
        List<Writer> held = new ArrayList<>();
        synchronized (lock) {
            for (Writer w : writers) {
                if (w != v && !w.exited && w.process != null && w.process.isAlive()) {
                    held.add(w);
                }
            }
        }
        long heldAt = System.nanoTime();
        try {
            for (Writer w : held) {
                signal("STOP", w);
            }
            if (await(lateBy().plusSeconds(5), () -> v.completions > completionsBefore || v.exited)) {
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
            resumeAll(held);
        }
        notes.add("cycle " + n + ": " + held.size() + " other writer(s) held for "
                + (System.nanoTime() - heldAt) / 1_000_000L + " ms around the delayed write"
                + (sleepMs < 0 ? " (held " + -sleepMs + " ms late)" : ""));
    }

    /** How long before a held-back write is due the other writers are held (their writes in flight land first). */
    private static final Duration HOLD_BEFORE_DUE = Duration.ofMillis(250);

    /** How long a probe of the fence store waits for an answer (a live store answers in milliseconds). */
    private static final Duration PROBE = Duration.ofSeconds(1);

    private void signal(String sig, Writer w) throws IOException {
        if (!signals.send(sig, w.process.pid())) {
            notes.add("kill -" + sig + " " + w.process.pid() + " failed");
        }
    }

    private boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (lock) {
            while (!condition.getAsBoolean()) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                lock.wait(Math.max(1, Math.min(50, left / 1_000_000L)));
            }
            return true;
        }
    }

    // ------------------------------------------------------------------ writers

    private void start(Writer w, String leaseSpec) throws IOException {
        Target.Sql sql = endpoint.sql();
        long timeoutMs = scenario == Scenario.TIMEOUT ? Math.max(200, ttlMs() / 2) : 10_000 + lateBy().toMillis();
        List<String> cmd = new ArrayList<>(List.of(java(), "-Xshare:auto", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), WriterMain.class.getName(),
                "--name", w.name, "--lease", leaseSpec, "--header", options.header,
                "--work-ms", "100", "--pace-ms", "20", "--timeout-ms", Long.toString(timeoutMs),
                "--retries", "3", "--retry-backoff-ms", "200",
                "--max-ms", Long.toString(options.duration.toMillis() + 10 * 60_000L)));
        if (sql != null) {   // a SQL client of the listener (or, in the control, of the database), through the faults
            cmd.addAll(List.of("--jdbc", sql.url().replaceFirst("^jdbc:postgresql://[^/]+/",
                    "jdbc:postgresql://127.0.0.1:" + w.faults.port() + "/"), "--sql", sql.statement()));
            if (sql.user() != null) {
                cmd.addAll(List.of("--user", sql.user()));
            }
            for (int i = 0; i < sql.params().size(); i++) {
                cmd.addAll(List.of("--param-" + (i + 1), Template.expand(sql.params().get(i), key)));
            }
        } else {
            cmd.addAll(List.of("--url", "http://127.0.0.1:" + w.faults.port() + endpoint.path(key),
                    "--method", endpoint.method(), "--body", Template.expand(options.request.body(), key)));
        }
        if (options.request.contentType() != null) {
            cmd.addAll(List.of("--content-type", options.request.contentType()));
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().remove(SigV4.ENV);
        pb.environment().remove(SqlWrite.PASSWORD_ENV);
        if (sql != null && sql.password() != null) {   // by environment, never on the command line
            pb.environment().put(SqlWrite.PASSWORD_ENV, sql.password());
        }
        if (endpoint.signer() != null) {   // the credentials go by environment, never on the command line
            pb.environment().put(SigV4.ENV, endpoint.signer().spec());
        }
        w.process = pb.start();
        w.stdin = new PrintWriter(w.process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("writer-" + w.name).start(() -> pump(w));
    }

    private void pump(Writer w) {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(w.process.getInputStream(),
                StandardCharsets.UTF_8))) {
            String line;
            while ((line = in.readLine()) != null) {
                event(w, line);
            }
        } catch (IOException ignored) {
            // the writer is gone
        } finally {
            synchronized (lock) {
                w.exited = true;
                lock.notifyAll();
            }
        }
    }

    private void event(Writer w, String line) {
        String[] f = line.split(" ", 7);
        synchronized (lock) {
            try {
                switch (f[0]) {
                    case "LEASE" -> {
                        w.session = f[1];
                        w.token = Long.parseLong(f[2]);
                        w.holding = true;
                        grants++;
                    }
                    case "FENCED", "LOST" -> {
                        if (f[1].equals(w.session)) {
                            w.holding = false;
                            w.ended.put(f[1], f[0].equals("LOST") && f.length > 3
                                    ? String.join(" ", Arrays.copyOfRange(f, 3, f.length))
                                    : f[0].toLowerCase(Locale.ROOT));
                        }
                    }
                    case "EXIT" -> w.holding = false;
                    case "CHECK" -> {
                        w.checks++;
                        w.lastCheckNanos = Long.parseLong(f[2]);
                    }
                    case "INVOKE" -> {
                        w.lastInvokeNanos = Long.parseLong(f[5]);
                        w.ops.put(f[1], history.invokeAt(key, f[2], Long.parseLong(f[3]), f[4], w.lastInvokeNanos));
                    }
                    case "DONE" -> {
                        Op op = w.ops.get(f[1]).completeAt(Integer.parseInt(f[2]), Long.parseLong(f[3]));
                        if (op.outcome() == History.Outcome.OK) {
                            w.acks.merge(op.holder(), 1, Integer::sum);
                        }
                        w.completions++;
                    }
                    case "UNKNOWN" -> {
                        w.ops.get(f[1]).unknownAt(f.length > 3 ? String.join(" ",
                                Arrays.copyOfRange(f, 3, f.length)) : "unknown", Long.parseLong(f[2]));
                        w.completions++;
                    }
                    default -> {
                        // nothing else is reported
                    }
                }
            } catch (RuntimeException e) {
                notes.add(w.name + ": cannot read '" + line + "': " + e);
            }
            lock.notifyAll();
        }
    }

    /** {@code kill -CONT} to each of {@code stopped}, every one tried whatever happens to the others. */
    private void resumeAll(List<Writer> stopped) {
        for (Writer w : stopped) {
            try {
                signal("CONT", w);
            } catch (IOException | RuntimeException e) {
                notes.add("kill -CONT " + w.name + " failed: " + e);
            }
        }
    }

    private void stopWriters() throws InterruptedException, IOException {
        List<Writer> alive = writers.stream().filter(w -> w.process != null && w.process.isAlive()).toList();
        resumeAll(alive);
        for (Writer w : alive) {
            w.stdin.println("stop");
        }
        for (Writer w : writers) {
            if (w.process != null && !w.process.waitFor(15, TimeUnit.SECONDS)) {
                notes.add(w.name + " did not stop: killed");
                w.process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        }
    }

    // ------------------------------------------------------------------ direct reads

    private void sample() {
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

    private static String java() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    /** The endpoint of SQL writes: the host and port of {@code sql.url()}, the writers' statement. */
    public static Endpoint sql(Target.Sql sql) {
        URI u = URI.create(sql.url().substring("jdbc:".length()));
        InetSocketAddress addr = new InetSocketAddress(u.getHost(), u.getPort() < 0 ? 5432 : u.getPort());
        return new Endpoint() {
            @Override
            public InetSocketAddress address() {
                return addr;
            }

            @Override
            public String path(String key) {
                return "";
            }

            @Override
            public Target.Sql sql() {
                return sql;
            }
        };
    }

    /** A fixed endpoint. */
    public static Endpoint fixed(URI base, String pathTemplate) {
        return fixed(base, pathTemplate, null);
    }

    /** A fixed endpoint whose writes are signed by {@code signer} (null: unsigned). */
    public static Endpoint fixed(URI base, String pathTemplate, SigV4 signer) {
        return fixed(base, pathTemplate, signer, "PUT");
    }

    /** A fixed endpoint written with {@code method}, signed by {@code signer} (null: unsigned). */
    public static Endpoint fixed(URI base, String pathTemplate, SigV4 signer, String method) {
        InetSocketAddress addr = new InetSocketAddress(base.getHost(), base.getPort() < 0 ? 80 : base.getPort());
        String prefix = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/$", "");
        return new Endpoint() {
            @Override
            public InetSocketAddress address() {
                return addr;
            }

            @Override
            public String path(String key) {
                return prefix + Template.expand(pathTemplate, key);
            }

            @Override
            public String method() {
                return method;
            }

            @Override
            public SigV4 signer() {
                return signer;
            }
        };
    }
}
