package io.stockade.conformance.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A proxy the suite launches itself (target {@code proxy.launch}), so it can {@code kill -9} and restart it. The
 * command must run the proxy in the foreground (exec, not a wrapper that forks) and print
 * {@code Stockade listening on http://HOST:PORT}.
 */
public final class ProxyProcess implements AutoCloseable {

    private static final Pattern READY = Pattern.compile("Stockade listening on http://([^\\s:/]+):(\\d+)");

    private final List<String> command;
    private final Path log;
    private Process process;
    private URI uri;

    public ProxyProcess(List<String> command, Path log) {
        this.command = List.copyOf(command);
        this.log = log;
    }

    /** Starts the proxy and waits until it is ready; returns {@code http://host:port}. */
    public synchronized URI start(Duration timeout) {
        try {
            long from = Files.exists(log) ? Files.size(log) : 0;
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                byte[] all = Files.readAllBytes(log);
                String fresh = new String(all, (int) Math.min(from, all.length), (int) Math.max(0, all.length - from),
                        StandardCharsets.UTF_8);
                Matcher m = READY.matcher(fresh);
                if (m.find()) {
                    String host = m.group(1).equals("0.0.0.0") ? "127.0.0.1" : m.group(1);
                    uri = URI.create("http://" + host + ":" + m.group(2));
                    return uri;
                }
                if (!process.isAlive()) {
                    throw new IllegalStateException("the proxy exited with " + process.exitValue()
                            + " before it was ready; see " + log);
                }
                Thread.sleep(20);
            }
            process.destroyForcibly();
            throw new IllegalStateException("the proxy was not ready within " + timeout + "; see " + log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot launch the proxy: " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** SIGKILL, and wait for the exit. */
    public synchronized void kill9() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(10, TimeUnit.SECONDS);
        }
    }

    public Path log() {
        return log;
    }

    @Override
    public synchronized void close() {
        if (process != null && process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(5, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
