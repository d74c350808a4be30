package io.stockade.conformance.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * A proxy the suite launches itself (target {@code proxy.launch}), so it can {@code kill -9} and restart it. The
 * command must run the proxy in the foreground and print {@code Stockade listening on http://HOST:PORT}. A wrapper
 * ({@code sh -c '...'}, a script) is fine: {@link #kill9()} kills the launched process and every descendant, and
 * checks that the old address stopped accepting connections.
 */
public final class ProxyProcess implements AutoCloseable {

    /** The proxy's last start-up line; a host may be an IPv6 literal in brackets. */
    private static final Pattern READY = Pattern.compile("Stockade listening on http://(\\[[0-9a-fA-F:.]+]|[^\\s:/]+)"
            + ":(\\d+)");
    /** Printed before it when the proxy has a management listener (server.management): where /metrics is. */
    private static final Pattern MANAGEMENT = Pattern.compile("Stockade management \\([^)]*\\) on http://"
            + "(\\[[0-9a-fA-F:.]+]|[^\\s:/]+):(\\d+)");

    /** How much of a proxy's log a start-up failure quotes: the log may live in a directory that is deleted. */
    private static final int TAIL_LINES = 30;

    private final List<String> command;
    private final Path log;
    private @Nullable Process process;   // set by start()
    private @Nullable URI uri;           // set by start() once the proxy is ready
    private @Nullable URI management;    // set by start() when the proxy printed a management listener

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
                String fresh = logSince(from);
                URI ready = readiness(fresh);
                if (ready != null) {
                    uri = ready;
                    Matcher mm = MANAGEMENT.matcher(fresh);
                    management = mm.find() ? URI.create("http://" + reachable(mm.group(1)) + ":" + mm.group(2)) : null;
                    return uri;
                }
                if (!process.isAlive()) {
                    throw new IllegalStateException("the proxy exited with " + process.exitValue()
                            + " before it was ready; see " + log + ", which ends:\n" + tail(fresh, TAIL_LINES));
                }
                Thread.sleep(20);
            }
            process.destroyForcibly();
            throw new IllegalStateException("the proxy was not ready within " + timeout + "; see " + log
                    + ", which ends:\n" + tail(logSince(from), TAIL_LINES));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot launch the proxy: " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /**
     * SIGKILL of the launched process and all its descendants, and wait until they are gone. Returns null when the
     * proxy is down (every process of the tree exited, and its address refuses connections), else what is still
     * there (a proxy that detached from the tree, say): then the kill -9 did not take effect.
     */
    public synchronized @Nullable String kill9() throws InterruptedException {
        if (process == null) {
            return null;
        }
        List<ProcessHandle> all = ProcessTree.kill9(process);
        List<Long> alive = all.stream().filter(h -> !ProcessTree.gone(h)).map(ProcessHandle::pid).toList();
        if (!alive.isEmpty()) {
            return "processes " + alive + " survived kill -9";
        }
        if (uri != null) {
            try (Socket s = new Socket()) {
                s.connect(new InetSocketAddress(uri.getHost(), uri.getPort()), 1000);
                return uri + " still accepts connections after kill -9 of " + all.stream().map(ProcessHandle::pid)
                        .toList() + " (a proxy outside the launched process tree?)";
            } catch (IOException refused) {
                return null;
            }
        }
        return null;
    }

    /**
     * The address (as a client reaches it) in the first readiness line of {@code log}; null if there is none. The
     * tests' launcher (test-tools' {@code ChildProxy}) parses the same line, and a test checks both read alike.
     */
    static @Nullable URI readiness(String log) {
        Matcher m = READY.matcher(log);
        return m.find() ? URI.create("http://" + reachable(m.group(1)) + ":" + m.group(2)) : null;
    }

    /** What this launch wrote to the log: its bytes from {@code from} on (the log is appended to by each start). */
    private String logSince(long from) throws IOException {
        byte[] all = Files.readAllBytes(log);
        return new String(all, (int) Math.min(from, all.length), (int) Math.max(0, all.length - from),
                StandardCharsets.UTF_8);
    }

    /** The last {@code lines} lines of {@code text}. */
    static String tail(String text, int lines) {
        List<String> all = text.lines().toList();
        return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    }

    /** The address a client reaches a listener bound to {@code host} at: a wildcard is this machine's loopback. */
    static String reachable(String host) {
        return host.equals("0.0.0.0") ? "127.0.0.1" : host.equals("[::]") || host.equals("[0:0:0:0:0:0:0:0]")
                ? "[::1]" : host;
    }

    /** The management listener's address ({@code /metrics}), when the proxy printed one; else null. */
    public synchronized @Nullable URI management() {
        return management;
    }

    public Path log() {
        return log;
    }

    @Override
    public synchronized void close() {
        if (process != null && process.isAlive()) {
            ProcessTree.terminate(process);
        }
    }
}
