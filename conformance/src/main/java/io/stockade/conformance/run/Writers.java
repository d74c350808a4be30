package io.stockade.conformance.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
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
import io.stockade.conformance.writer.WriterMain;

/**
 * The writers of one run: each started as a {@link WriterMain} process behind a {@link FaultProxy} of its own, its
 * report lines read into the history and into its {@link RunningWriter}; SIGSTOP and SIGCONT through one
 * {@link Signals} shell; stopped at the end. One lock guards every writer's state: {@link #await} waits on it.
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
    private int grants;
    private Signals signals;

    Writers(Scenario scenario, String key, Endpoint endpoint, ScenarioRunner.Options options, History history,
            List<String> notes) {
        this.scenario = scenario;
        this.key = key;
        this.endpoint = endpoint;
        this.options = options;
        this.history = history;
        this.notes = notes;
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

    /** Opens the signalling shell (before the writers start). */
    void openSignals() throws IOException {
        signals = Signals.start();
    }

    /** Closes the signalling shell (after the writers stopped). */
    void closeSignals() {
        signals.close();
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
        List<String> cmd = new ArrayList<>(List.of(java(), "-Xshare:auto", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), WriterMain.class.getName(),
                "--name", w.name, "--lease", leaseSpec, "--header", options.header(),
                "--work-ms", "100", "--pace-ms", "20", "--timeout-ms", Long.toString(timeoutMs),
                "--retries", "3", "--retry-backoff-ms", "200",
                "--max-ms", Long.toString(options.duration().toMillis() + 10 * 60_000L)));
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
                    "--method", endpoint.method(), "--body", Template.expand(options.request().body(), key)));
        }
        if (options.request().contentType() != null) {
            cmd.addAll(List.of("--content-type", options.request().contentType()));
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

    private void pump(RunningWriter w) {
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

    /** {@code kill -<sig>} to writer {@code w}; a failed kill is noted. */
    void signal(String sig, RunningWriter w) throws IOException {
        if (!signals.send(sig, w.process.pid())) {
            notes.add("kill -" + sig + " " + w.process.pid() + " failed");
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

    /** Resumes every live writer, asks each to stop after its current write, and kills one that does not. */
    void stop() throws InterruptedException, IOException {
        List<RunningWriter> alive = all.stream().filter(w -> w.process != null && w.process.isAlive()).toList();
        resumeAll(alive);
        for (RunningWriter w : alive) {
            w.stdin.println("stop");
        }
        for (RunningWriter w : all) {
            if (w.process != null && !w.process.waitFor(15, TimeUnit.SECONDS)) {
                notes.add(w.name + " did not stop: killed");
                w.process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
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

    private static String java() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }
}
