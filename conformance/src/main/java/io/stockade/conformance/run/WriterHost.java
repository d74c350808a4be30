package io.stockade.conformance.run;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;

import io.stockade.conformance.writer.SigV4;
import io.stockade.conformance.writer.SqlWrite;
import io.stockade.conformance.writer.WriterLoop;
import io.stockade.conformance.writer.WriterMain;

/**
 * Where a {@link WriterLoop} runs: {@link #process} an OS process of its own ({@link WriterMain}: it can be paused
 * for real with SIGSTOP), or {@link #thread} a thread of the suite's JVM. Either way its report lines reach
 * {@code lines} from a pump thread of their own (the writer never waits for the run's lock), and {@code exited}
 * runs after the last one.
 */
interface WriterHost {

    boolean isAlive();

    /** The process to signal; a writer in this JVM has none. */
    long pid();

    /** Asks the writer to end after its current write. */
    void stop();

    boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException;

    /** Ends the writer at once (a writer that did not stop), waiting up to 5 s. */
    void kill() throws InterruptedException;

    /**
     * A {@link WriterMain} process with {@code args}; its environment is this one's without the writers' secrets,
     * plus {@code env} (secrets go by environment, never on the command line).
     */
    static WriterHost process(String name, List<String> args, Map<String, String> env, Consumer<String> lines,
                              Runnable exited) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(java(), "-Xshare:auto", "-XX:TieredStopAtLevel=1",
                "-cp", System.getProperty("java.class.path"), WriterMain.class.getName()));
        cmd.addAll(args);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.INHERIT);
        pb.environment().remove(SigV4.ENV);
        pb.environment().remove(SqlWrite.PASSWORD_ENV);
        pb.environment().putAll(env);
        Process process = pb.start();
        PrintWriter stdin = new PrintWriter(process.getOutputStream(), true, StandardCharsets.UTF_8);
        Thread.ofPlatform().daemon().name("writer-" + name).start(() -> {
            try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(),
                    StandardCharsets.UTF_8))) {
                String line;
                while ((line = in.readLine()) != null) {
                    lines.accept(line);
                }
            } catch (IOException ignored) {
                // the writer is gone
            } finally {
                exited.run();
            }
        });
        return new WriterHost() {
            @Override
            public boolean isAlive() {
                return process.isAlive();
            }

            @Override
            public long pid() {
                return process.pid();
            }

            @Override
            public void stop() {
                stdin.println("stop");
            }

            @Override
            public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
                return process.waitFor(timeout, unit);
            }

            @Override
            public void kill() throws InterruptedException {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        };
    }

    /**
     * A {@link WriterLoop} with {@code args} and {@code env} (its only environment) on a thread of this JVM. A loop
     * that throws has its stack trace printed to stderr, as a writer process's would, and ends its lines.
     */
    static WriterHost thread(String name, List<String> args, Map<String, String> env, Consumer<String> lines,
                             Runnable exited) {
        BlockingQueue<Optional<String>> queue = new LinkedBlockingQueue<>();   // empty: the loop ended
        WriterLoop loop = new WriterLoop(args, env, line -> queue.add(Optional.of(line)));
        Thread writer = Thread.ofPlatform().daemon().name("writer-" + name + "-loop").start(() -> {
            try {
                loop.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();   // killed
            } catch (Exception e) {   // to stderr by the thread's uncaught-exception handler, as a process's main
                throw new IllegalStateException("writer " + name + " failed", e);
            } finally {
                queue.add(Optional.empty());
            }
        });
        Thread.ofPlatform().daemon().name("writer-" + name).start(() -> {
            try {
                for (Optional<String> line = queue.take(); line.isPresent(); line = queue.take()) {
                    lines.accept(line.get());
                }
            } catch (InterruptedException ignored) {
                // not interrupted by the suite
            } finally {
                exited.run();
            }
        });
        return new WriterHost() {
            @Override
            public boolean isAlive() {
                return writer.isAlive();
            }

            @Override
            public long pid() {
                throw new IllegalStateException("writer " + name + " runs in this JVM: no process to signal");
            }

            @Override
            public void stop() {
                loop.stop();
            }

            @Override
            public boolean waitFor(long timeout, TimeUnit unit) throws InterruptedException {
                return writer.join(Duration.ofNanos(unit.toNanos(timeout)));
            }

            @Override
            public void kill() throws InterruptedException {
                writer.interrupt();
                writer.join(5000);
            }
        };
    }

    private static String java() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }
}
