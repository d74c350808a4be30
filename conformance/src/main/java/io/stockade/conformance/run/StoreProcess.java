package io.stockade.conformance.run;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The proxy's fence store, launched by the suite (target {@code store.launch}) so the {@code store-stop} scenario
 * can stop it for real: {@code kill -STOP} (every connection hangs), then {@code kill -9} of the stopped process and
 * a restart with the same command (its data directory must survive: the fence must). The command must run the
 * store in the foreground; it is up when {@code ready} ({@code host:port}) accepts a TCP connection.
 *
 * <p>Signals go to the whole process tree (the launched process and every descendant,
 * {@link ProcessHandle#descendants()}): a command wrapped in {@code sh -c '...'} or a script that forks the store is
 * stopped and killed too. A store that detaches from the tree (double fork, a daemon) cannot be reached that way;
 * {@link #pause()} finds it out with a probe of the {@code ready} port (see {@link #probe(Duration)}) and says so
 * instead of pretending.
 */
public final class StoreProcess implements AutoCloseable {

    private final List<String> command;
    private final InetSocketAddress ready;
    private final Path log;
    private @Nullable Process process;   // set by start()

    public StoreProcess(List<String> command, String ready, Path log) {
        this.command = List.copyOf(command);
        int colon = ready.lastIndexOf(':');
        if (colon < 0) {
            throw new IllegalArgumentException("store.ready is host:port, not '" + ready + "'");
        }
        this.ready = new InetSocketAddress(ready.substring(0, colon), Integer.parseInt(ready.substring(colon + 1)));
        this.log = log;
    }

    /** Starts the store and waits until its port accepts connections. */
    public synchronized void start(Duration timeout) {
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            long deadline = System.nanoTime() + timeout.toNanos();
            while (System.nanoTime() < deadline) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("the store exited with " + process.exitValue()
                            + " before it was ready; see " + log);
                }
                try (Socket s = new Socket()) {
                    s.connect(ready, 200);
                    return;
                } catch (IOException notYet) {
                    Thread.sleep(50);
                }
            }
            process.destroyForcibly();
            throw new IllegalStateException("the store did not open " + ready + " within " + timeout + "; see " + log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot launch the store: " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    /** What a probe of the {@code ready} port saw. */
    public enum Probe {
        /** Some bytes, an end of stream or a reset within the timeout: a process is serving the port. */
        ANSWERED,
        /** Connected (the kernel accepts on a stopped process's socket) but nothing came back: it hangs. */
        HUNG,
        /** Nobody accepts connections on the port. */
        REFUSED
    }

    /**
     * Whether the store's port answers: connects to {@code ready}, sends {@code GET / HTTP/1.0} and waits up to
     * {@code timeout} for anything (an HTTP answer, an error, the connection closed or reset: every store that
     * reads what it gets answers garbage one way or another). A stopped store's kernel still completes the TCP
     * handshake, so a connect alone would not tell.
     */
    public Probe probe(Duration timeout) {
        int ms = (int) Math.max(1, timeout.toMillis());
        try (Socket s = new Socket()) {
            try {
                s.connect(ready, ms);
            } catch (SocketTimeoutException full) {   // a stopped store's backlog is full: SYNs go unanswered
                return Probe.HUNG;
            } catch (IOException e) {
                return Probe.REFUSED;
            }
            try {
                s.setSoTimeout(ms);
                s.getOutputStream().write("GET / HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                s.getOutputStream().flush();
                InputStream in = s.getInputStream();
                in.read();   // a byte, or -1 (closed): answered
                return Probe.ANSWERED;
            } catch (SocketTimeoutException e) {
                return Probe.HUNG;
            } catch (IOException e) {   // reset: a live process reset it
                return Probe.ANSWERED;
            }
        } catch (IOException e) {   // closing the socket
            return Probe.ANSWERED;
        }
    }

    /**
     * {@code kill -STOP} of the launched process and every descendant, deepest first (a wrapper shell stops after
     * what it runs): the store stops answering, its connections stay open and hang. Returns the processes stopped.
     */
    public synchronized List<Long> pause() throws IOException, InterruptedException {
        List<Long> stopped = new ArrayList<>();
        Set<Long> seen = new LinkedHashSet<>();
        for (int pass = 0; pass < 3; pass++) {   // again for a child forked while the others were being stopped
            List<ProcessHandle> fresh = tree().stream().filter(h -> !seen.contains(h.pid())).toList();
            if (fresh.isEmpty()) {
                break;
            }
            List<Long> pids = fresh.stream().sorted(Comparator.comparingInt(StoreProcess::depth).reversed())
                    .map(ProcessHandle::pid).toList();
            signal("STOP", pids);
            seen.addAll(pids);
            stopped.addAll(pids);
        }
        return stopped;
    }

    /**
     * {@code kill -9} of the process tree (also of stopped processes), waits until every one of them is gone, then
     * the same command again; waits until it is up.
     */
    public synchronized void restart(Duration timeout) throws InterruptedException {
        killTree();
        start(timeout);
    }

    /** The launched process and its descendants now (empty before the start). */
    public synchronized List<ProcessHandle> tree() {
        return process == null ? List.of() : ProcessTree.of(process);
    }

    /** Distance from the launched process (its descendants' parents are walked up; 0 for the process itself). */
    private static int depth(ProcessHandle h) {
        int d = 0;
        for (var p = h.parent(); p.isPresent() && d < 64; p = p.get().parent()) {
            d++;
        }
        return d;
    }

    private void killTree() throws InterruptedException {
        if (process == null) {
            return;
        }
        ProcessTree.kill9(process);
    }

    public synchronized long pid() {
        return Objects.requireNonNull(process, "pid() is asked after start()").pid();
    }

    public Path log() {
        return log;
    }

    /** One {@code kill}, the pids in order (a pid that is gone meanwhile is not an error). */
    private static void signal(String sig, List<Long> pids) throws IOException, InterruptedException {
        List<String> cmd = new ArrayList<>(List.of("kill", "-" + sig));
        pids.forEach(p -> cmd.add(Long.toString(p)));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!p.waitFor(5, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException("kill -" + sig + " " + pids + " did not return");
        }
        if (p.exitValue() != 0 && pids.stream().allMatch(pid -> ProcessHandle.of(pid).isPresent())) {
            throw new IOException("kill -" + sig + " " + pids + " failed: " + out);
        }
    }

    @Override
    public synchronized void close() {
        try {
            killTree();   // also ends stopped processes
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
