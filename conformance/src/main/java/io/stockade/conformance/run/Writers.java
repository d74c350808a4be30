package io.stockade.conformance.run;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import io.stockade.conformance.Scenario;
import io.stockade.conformance.Target;
import io.stockade.conformance.Template;
import io.stockade.conformance.check.History;
import io.stockade.conformance.check.History.Op;
import io.stockade.conformance.fault.FaultProxy;
import io.stockade.conformance.writer.SigV4;
import io.stockade.conformance.writer.SqlWrite;
import io.stockade.conformance.writer.WriterLoop;

import org.jspecify.annotations.Nullable;

/**
 * The writers of one run: each a {@link WriterLoop} behind a {@link FaultProxy} of its own, run where
 * {@link #ownProcesses} says (an OS process, or a thread of this JVM: {@link WriterHost}); its report lines read into
 * the history and into its {@link RunningWriter}; SIGSTOP and SIGCONT to processes through one {@link Signals}
 * shell; stopped at the end. One lock guards every writer's state: {@link #await} waits on it.
 */
final class Writers {
    private final Scenario scenario;
    private final String key;
    private final Endpoint endpoint;
    private final ScenarioRunner.Options options;
    private final History history;
    private final List<String> notes;
    private final Object lock = new Object();
    private final List<RunningWriter> all = new ArrayList<>();
    private final boolean processes;
    private int grants;
    private @Nullable Signals signals;   // set by openSignals() when the writers are processes

    Writers(Scenario scenario, String key, Endpoint endpoint, ScenarioRunner.Options options, History history,
            List<String> notes) {
        this.scenario = scenario;
        this.key = key;
        this.endpoint = endpoint;
        this.options = options;
        this.history = history;
        this.notes = notes;
        this.processes = ownProcesses(scenario, options.leaseSpec());
    }

    /**
     * Whether the writers of a run must be OS processes: when the scenario signals them (SIGSTOP of the faulted
     * holder in {@code pause}, {@code proxy-restart} and {@code store-stop}; of the other writers around the delayed
     * write in {@code delay}: a real process pause, wherever the writer is in its loop, that no thread of a shared
     * JVM gives), or when the lease provider is a user's class (written for one writer per JVM, it may keep state in
     * statics). The others ({@code timeout}, {@code lost-response}: faults on the writer's connection only) run
     * their writers as threads of this JVM; the same loop, the same clock.
     */
    static boolean ownProcesses(Scenario scenario, @Nullable String leaseSpec) {
        boolean signalled = switch (scenario) {
            case PAUSE, PROXY_RESTART, STORE_STOP, DELAY -> true;
            case TIMEOUT, LOST_RESPONSE -> false;
        };
        return signalled || (leaseSpec != null && leaseSpec.startsWith("class:"));
    }

    /** The lock every writer's state changes under (the notes list too, where a pump adds to it). */
    Object lock() {
        return lock;
    }

    /** The writers, in the order they were started. */
    List<RunningWriter> all() {
        return all;
    }

    /** LEASE lines seen: leases granted. */
    int grants() {
        synchronized (lock) {
            return grants;
        }
    }

    /** Whether the writers are OS processes (else threads of this JVM, which cannot be signalled). */
    boolean processes() {
        return processes;
    }

    /** Opens the signalling shell, if the writers are processes (before they start). */
    void openSignals() throws IOException {
        if (processes) {
            signals = Signals.start();
        }
    }

    /** Closes the signalling shell (after the writers stopped). */
    void closeSignals() {
        if (signals != null) {
            signals.close();
        }
    }

    /** Starts writer {@code name} behind a fault proxy of its own, taking leases from {@code leaseSpec}. */
    void start(String name, String leaseSpec) throws IOException {
        RunningWriter w = new RunningWriter(name, FaultProxy.start(endpoint.address()));
        all.add(w);
        start(w, leaseSpec);
    }

    private void start(RunningWriter w, String leaseSpec) throws IOException {
        Target.Sql sql = endpoint.sql();
        long timeoutMs = scenario == Scenario.TIMEOUT ? Math.max(200, options.ttl().toMillis() / 2)
                : 10_000 + options.lateBy().toMillis();
        List<String> args = new ArrayList<>(List.of(
                "--name", w.name, "--lease", leaseSpec, "--header", options.header(),
                "--work-ms", "100", "--pace-ms", "20", "--timeout-ms", Long.toString(timeoutMs),
                "--retries", "3", "--retry-backoff-ms", "200",
                "--max-ms", Long.toString(options.duration().toMillis() + 10 * 60_000L)));
        if (sql != null) {   // a SQL client of the listener (or, in the control, of the database), through the faults
            args.addAll(List.of("--jdbc", sql.url().replaceFirst("^jdbc:postgresql://[^/]+/",
                    "jdbc:postgresql://127.0.0.1:" + w.faults.port() + "/"), "--sql", sql.statement()));
            if (sql.user() != null) {
                args.addAll(List.of("--user", sql.user()));
            }
            for (int i = 0; i < sql.params().size(); i++) {
                args.addAll(List.of("--param-" + (i + 1), Template.expand(sql.params().get(i), key)));
            }
        } else {
            args.addAll(List.of("--url", "http://127.0.0.1:" + w.faults.port() + endpoint.path(key),
                    "--method", endpoint.method(), "--body", Template.expand(options.request().body(), key)));
        }
        if (options.request().contentType() != null) {
            args.addAll(List.of("--content-type", options.request().contentType()));
        }
        Map<String, String> env = new HashMap<>();   // secrets by environment, never on the command line
        if (sql != null && sql.password() != null) {
            env.put(SqlWrite.PASSWORD_ENV, sql.password());
        }
        if (endpoint.signer() != null) {
            env.put(SigV4.ENV, endpoint.signer().spec());
        }
        Runnable exited = () -> {
            synchronized (lock) {
                w.exited = true;
                lock.notifyAll();
            }
        };
        w.host = processes ? WriterHost.process(w.name, args, env, line -> event(w, line), exited)
                : WriterHost.thread(w.name, args, env, line -> event(w, line), exited);
    }

    private void event(RunningWriter w, String line) {
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
                        Op op = Objects.requireNonNull(w.ops.get(f[1]), "DONE follows its INVOKE")
                                .completeAt(Integer.parseInt(f[2]), Long.parseLong(f[3]));
                        if (op.outcome() == History.Outcome.OK) {
                            w.acks.merge(op.holder(), 1, Integer::sum);
                        }
                        w.completions++;
                    }
                    case "UNKNOWN" -> {
                        Objects.requireNonNull(w.ops.get(f[1]), "UNKNOWN follows its INVOKE")
                                .unknownAt(f.length > 3 ? String.join(" ", Arrays.copyOfRange(f, 3, f.length))
                                        : "unknown", Long.parseLong(f[2]));
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

    /** {@code kill -<sig>} to writer {@code w}; a failed kill is noted. */
    void signal(String sig, RunningWriter w) throws IOException {
        if (!processes) {
            throw new IllegalStateException("the writers of " + scenario.id() + " run in this JVM: no kill -" + sig);
        }
        Signals opened = Objects.requireNonNull(signals, "openSignals() ran before the writers (processes) started");
        WriterHost host = Objects.requireNonNull(w.host, "a writer is signalled once started");
        if (!opened.send(sig, host.pid())) {
            notes.add("kill -" + sig + " " + host.pid() + " failed");
        }
    }

    /** {@code kill -CONT} to each of {@code stopped}, every one tried whatever happens to the others. */
    void resumeAll(List<RunningWriter> stopped) {
        for (RunningWriter w : stopped) {
            try {
                signal("CONT", w);
            } catch (IOException | RuntimeException e) {
                notes.add("kill -CONT " + w.name + " failed: " + e);
            }
        }
    }

    /**
     * Resumes every live writer (processes), asks each to stop after its current write, and kills one that does
     * not.
     */
    void stop() throws InterruptedException {
        List<RunningWriter> alive = all.stream().filter(w -> w.host != null && w.host.isAlive()).toList();
        if (processes) {
            resumeAll(alive);
        }
        for (RunningWriter w : alive) {
            Objects.requireNonNull(w.host, "alive writers have a host").stop();
        }
        for (RunningWriter w : all) {
            if (w.host != null && !w.host.waitFor(15, TimeUnit.SECONDS)) {
                notes.add(w.name + " did not stop: killed");
                w.host.kill();
            }
        }
    }

    /** Waits (on the lock) until {@code condition} holds; false when {@code timeout} passed first. */
    boolean await(Duration timeout, BooleanSupplier condition) throws InterruptedException {
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
}
