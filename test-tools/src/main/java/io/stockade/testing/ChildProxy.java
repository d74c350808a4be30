package io.stockade.testing;

import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The proxy as a child JVM, the one launcher of every test that starts one: runs
 * {@code java -XX:+ExitOnOutOfMemoryError <jvmOptions> -cp <this JVM's class path> <mainClass> --config <file>}
 * ({@link Jvm#java(List, String, String...)}) with stdout and stderr in a log file, and waits until the log shows
 * {@code Stockade listening on http://HOST:PORT} (the readiness line the proxy's {@code Main} prints). The proxy is
 * launched by its main class name, so this class never depends on the server; the caller's class path must hold it.
 *
 * <pre>{@code
 * try (ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx128m"))) {
 *     Http.get(proxy.baseUri().resolve("/files/a"));
 *     proxy.kill9();                 // SIGKILL: no shutdown hook runs
 * }                                  // close(): SIGTERM, 5 s, then SIGKILL
 * }</pre>
 *
 * <p>{@link #runToExit} is the lower-level entry for a proxy that is expected to refuse to start: it runs the same
 * command line to its end and returns the exit code and the output.
 */
public final class ChildProxy implements AutoCloseable {

    /** The proxy's main class. */
    public static final String DEFAULT_MAIN = "io.stockade.proxy.Main";
    /** How long {@link #start(Path, List)} waits for the readiness line. */
    public static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

    /** The readiness line; a host may be an IPv6 literal in brackets. */
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
    public static ChildProxy start(Path configFile, List<String> jvmOptions) {
        return start(DEFAULT_MAIN, configFile, jvmOptions, READY_TIMEOUT);
    }

    /** Starts {@code mainClass} with {@code configFile} and waits up to {@link #READY_TIMEOUT}. */
    public static ChildProxy start(String mainClass, Path configFile, List<String> jvmOptions) {
        return start(mainClass, configFile, jvmOptions, READY_TIMEOUT);
    }

    /**
     * Starts {@code mainClass} with {@code configFile} and waits up to {@code readyTimeout} for the readiness line.
     *
     * @throws IllegalStateException if the child exits first or is not ready in time (it is then killed); the
     *                               message holds the last 50 lines of its log
     */
    public static ChildProxy start(String mainClass, Path configFile, List<String> jvmOptions,
                                   Duration readyTimeout) {
        Path logFile = newLogFile();
        Process process = launch(mainClass, configFile, jvmOptions, logFile);
        long deadline = System.nanoTime() + readyTimeout.toNanos();
        try {
            while (true) {
                Optional<URI> ready = readiness(read(logFile));
                if (ready.isPresent()) {
                    return new ChildProxy(process, logFile, ready.get());
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

    /** How a child run by {@link #runToExit} ended: its exit code and everything it printed (stdout and stderr). */
    public record Exit(int code, String output) {
    }

    /**
     * The lower-level entry: runs {@link #DEFAULT_MAIN} with {@code configFile} (the command line of {@link #start})
     * until it exits, for a test of a proxy that must refuse to start. No readiness wait.
     *
     * @throws IllegalStateException if it has not exited within {@code timeout} (it is then killed)
     */
    public static Exit runToExit(Path configFile, List<String> jvmOptions, Duration timeout) {
        Path logFile = newLogFile();
        Process process = launch(DEFAULT_MAIN, configFile, jvmOptions, logFile);
        try {
            if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                throw new IllegalStateException(DEFAULT_MAIN + " did not exit within " + timeout
                        + "; last log lines (" + logFile + "):\n" + tail(read(logFile)));
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for " + DEFAULT_MAIN, e);
        }
        return new Exit(process.exitValue(), read(logFile));
    }

    /**
     * The address in the first readiness line ({@code Stockade listening on http://HOST:PORT}) of {@code log}, as a
     * client reaches it ({@code 0.0.0.0} and {@code [::]} become loopback addresses); empty if there is none. The
     * conformance suite's {@code ProxyProcess} has its own parser of the same line, and a test there checks both
     * read the same lines the same way.
     */
    public static Optional<URI> readiness(String log) {
        Matcher m = READY.matcher(log);
        return m.find() ? Optional.of(URI.create("http://" + connectable(m.group(1)) + ":" + m.group(2)))
                : Optional.empty();
    }

    /** {@code http://HOST:PORT} as announced ({@code 0.0.0.0} and {@code [::]} become loopback addresses). */
    public URI baseUri() {
        return baseUri;
    }

    /** The port it listens on. */
    public int port() {
        return baseUri.getPort();
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

    /** The child's exit code; {@link IllegalThreadStateException} while it is still running. */
    public int exitCode() {
        return process.exitValue();
    }

    /** The log file (stdout and stderr); it stays after the child ends. */
    public Path logFile() {
        return logFile;
    }

    /** Everything the child has printed so far (stdout and stderr, as lines with {@code log().lines()}). */
    public String log() {
        return read(logFile);
    }

    /** Kills the child at once (SIGKILL on Unix: no shutdown hooks run) and waits up to 10 s for it to end. */
    public void kill9() {
        process.destroyForcibly();
        awaitExit(Duration.ofSeconds(10));
    }

    /** Waits up to {@code timeout} for the child to end; whether it has. */
    public boolean awaitExit(Duration timeout) {
        try {
            return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !process.isAlive();
        }
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

    private static Path newLogFile() {
        try {
            return Files.createTempDirectory("stockade-child-").resolve("proxy.log");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot make a directory for the child's log", e);
        }
    }

    private static Process launch(String mainClass, Path configFile, List<String> jvmOptions, Path logFile) {
        try {
            return Jvm.java(jvmOptions, mainClass, "--config", configFile.toAbsolutePath().toString())
                    .redirectErrorStream(true)
                    .redirectOutput(logFile.toFile())
                    .redirectInput(ProcessBuilder.Redirect.from(nullDevice()))
                    .start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + mainClass, e);
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

    /** The last 50 lines of {@code log}. */
    static String tail(String log) {
        List<String> lines = Arrays.asList(log.split("\\R", -1));
        return String.join("\n", lines.subList(Math.max(0, lines.size() - TAIL_LINES), lines.size()));
    }

    private static File nullDevice() {
        return new File(System.getProperty("os.name").startsWith("Windows") ? "NUL" : "/dev/null");
    }
}
