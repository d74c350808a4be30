package io.stockade.conformance.run;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * The proxy's fence store, launched by the suite (target {@code store.launch}) so the {@code store-stop} scenario
 * can stop it for real: {@code kill -STOP} (every connection hangs), then {@code kill -9} of the stopped process and
 * a restart with the same command (its data directory must survive: the fence must). The command must run the
 * store in the foreground; it is up when {@code ready} ({@code host:port}) accepts a TCP connection.
 */
public final class StoreProcess implements AutoCloseable {

    private final List<String> command;
    private final InetSocketAddress ready;
    private final Path log;
    private Process process;

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

    /** {@code kill -STOP}: the store stops answering, its connections stay open and hang. */
    public synchronized void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** {@code kill -9} (also of a stopped process), then the same command again; waits until it is up. */
    public synchronized void restart(Duration timeout) throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(10, TimeUnit.SECONDS);
        start(timeout);
    }

    public synchronized long pid() {
        return process.pid();
    }

    public Path log() {
        return log;
    }

    private void signal(String sig) throws IOException, InterruptedException {
        Process p = new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid())).inheritIO().start();
        if (!p.waitFor(5, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("kill -" + sig + " " + process.pid() + " failed");
        }
    }

    @Override
    public synchronized void close() {
        if (process != null && process.isAlive()) {
            process.destroyForcibly();   // also ends a stopped process
            try {
                process.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
