package io.stockade.proxy.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.testing.Jvm;

/**
 * The proxy as a child JVM, for crash and restart tests: runs
 * {@code java <jvmArgs> -cp <this JVM's class path> <mainClass> --config <file>} with stdout and stderr in a log file,
 * and waits until the log shows {@code Stockade listening on http://HOST:PORT} (the readiness line the proxy's
 * {@code Main} prints).
 */
public final class ChildProxy implements AutoCloseable {

    /** The proxy's main class. */
    public static final String DEFAULT_MAIN = "io.stockade.proxy.Main";
    /** How long {@link #start(Path, List)} waits for the readiness line. */
    public static final Duration READY_TIMEOUT = Duration.ofSeconds(20);

    private static final Pattern READY =
            Pattern.compile("Stockade listening on http://(\\[[^\\]\\s]+\\]|[^\\s:/\\[\\]]+):(\\d+)");
    private static final int TAIL_LINES = 50;

    private final Process process;
    private final Path logFile;
    private final URI baseUri;

    private ChildProxy(Process process, Path logFile, URI baseUri) {
        this.process = process;
        this.logFile = logFile;
        this.baseUri = baseUri;
    }

    /** Starts {@link #DEFAULT_MAIN} with {@code configFile} and waits up to {@link #READY_TIMEOUT}. */
    public static ChildProxy start(Path configFile, List<String> extraJvmArgs) {
        return start(DEFAULT_MAIN, configFile, extraJvmArgs, READY_TIMEOUT);
    }

    /** Starts {@code mainClass} with {@code configFile} and waits up to {@link #READY_TIMEOUT}. */
    public static ChildProxy start(String mainClass, Path configFile, List<String> extraJvmArgs) {
        return start(mainClass, configFile, extraJvmArgs, READY_TIMEOUT);
    }

    /**
     * Starts {@code mainClass} with {@code configFile} and waits up to {@code readyTimeout} for the readiness line.
     *
     * @throws IllegalStateException if the child exits first or is not ready in time (it is then killed); the
     *                               message holds the last 50 lines of its log
     */
    public static ChildProxy start(String mainClass, Path configFile, List<String> extraJvmArgs,
                                   Duration readyTimeout) {
        Path logFile;
        Process process;
        List<String> command = new ArrayList<>();
        command.add(Jvm.binary());
        command.add("-XX:+ExitOnOutOfMemoryError"); // as every launcher of the proxy (it refuses to start without)
        command.addAll(extraJvmArgs);
        command.addAll(List.of("-cp", System.getProperty("java.class.path"), mainClass,
                "--config", configFile.toAbsolutePath().toString()));
        try {
            logFile = Files.createTempDirectory("stockade-child-").resolve("proxy.log");
            process = new ProcessBuilder(command)
                    .redirectErrorStream(true)
                    .redirectOutput(logFile.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(nullDevice()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + mainClass, e);
        }
        long deadline = System.nanoTime() + readyTimeout.toNanos();
        try {
            while (true) {
                Matcher m = READY.matcher(read(logFile));
                if (m.find()) {
                    return new ChildProxy(process, logFile, URI.create("http://" + connectable(m.group(1)) + ":"
                            + m.group(2)));
                }
                if (!process.isAlive()) {
                    throw new IllegalStateException(mainClass + " exited with " + process.exitValue()
                            + " before it was ready; last log lines (" + logFile + "):\n" + tail(read(logFile)));
                }
                if (System.nanoTime() > deadline) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                    throw new IllegalStateException(mainClass + " was not ready within " + readyTimeout
                            + "; last log lines (" + logFile + "):\n" + tail(read(logFile)));
                }
                Thread.sleep(20);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + mainClass, e);
        }
    }

    /** {@code http://HOST:PORT} as announced ({@code 0.0.0.0} and {@code [::]} become loopback addresses). */
    public URI baseUri() {
        return baseUri;
    }

    /** The child's process id. */
    public long pid() {
        return process.pid();
    }

    /** The child process. */
    public Process process() {
        return process;
    }

    /** Whether the child is running. */
    public boolean isAlive() {
        return process.isAlive();
    }

    /** The log file (stdout and stderr); it stays after the child ends. */
    public Path logFile() {
        return logFile;
    }

    /** Everything the child has printed so far. */
    public String log() {
        return read(logFile);
    }

    /** Kills the child at once (SIGKILL on Unix: no shutdown hooks run) and waits for it to end. */
    public void kill9() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(10));
    }

    /** Asks the child to stop (SIGTERM), waits 5 s, then kills it. Idempotent. */
    @Override
    public void close() {
        if (!process.isAlive()) {
            return;
        }
        process.destroy();
        if (!awaitExit(Duration.ofSeconds(5))) {
            kill9();
        }
    }

    private boolean awaitExit(Duration timeout) {
        try {
            return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !process.isAlive();
        }
    }

    private static String connectable(String host) {
        return switch (host) {
            case "0.0.0.0" -> "127.0.0.1";
            case "[::]", "[0:0:0:0:0:0:0:0]" -> "[::1]";
            default -> host;
        };
    }

    private static String read(Path file) {
        try {
            return new String(Files.readAllBytes(file), StandardCharsets.UTF_8);
        } catch (IOException e) {
            return "";
        }
    }

    static String tail(String log) {
        List<String> lines = Arrays.asList(log.split("\\R", -1));
        return String.join("\n", lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size()));
    }

    private static java.io.File nullDevice() {
        return new java.io.File(System.getProperty("os.name").startsWith("Windows") ? "NUL" : "/dev/null");
    }
}
