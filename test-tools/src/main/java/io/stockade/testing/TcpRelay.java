package io.stockade.testing;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A TCP relay on a loopback port in front of {@code 127.0.0.1:target}, whose two directions can be cut on purpose:
 * bytes are then read and dropped (the sender sees no error, its peer never gets them), as on a network that loses
 * packets one way or both. A Redis replica told to replicate from the relay's port loses the primary's writes while
 * {@link #dropToClient} is on — what a primary that acknowledged a write and died before replicating it looks like to
 * the replica. {@link #holdRequestsStartingWith} delays chosen requests towards the target instead.
 */
public final class TcpRelay implements AutoCloseable {
    private final ServerSocket server;
    private final int target;
    private final List<Socket> sockets = new CopyOnWriteArrayList<>();
    private volatile boolean dropToClient;
    private volatile boolean dropToTarget;
    private volatile boolean closed;
    /** Requests towards the target whose first bytes are one of these are held until {@link #release()}. */
    private volatile List<byte[]> holdPrefixes = List.of();
    private volatile CountDownLatch gate = new CountDownLatch(0);
    private final Semaphore held = new Semaphore(0);

    private TcpRelay(ServerSocket server, int target) {
        this.server = server;
        this.target = target;
    }

    /** A relay to {@code 127.0.0.1:target}. */
    public static TcpRelay to(int target) {
        try {
            ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
            TcpRelay relay = new TcpRelay(server, target);
            Thread accept = new Thread(relay::accept, "relay-accept-" + server.getLocalPort());
            accept.setDaemon(true);
            accept.start();
            return relay;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    /** From now on, drop what the target sends (a replica no longer hears its primary). */
    public void dropToClient(boolean drop) {
        this.dropToClient = drop;
    }

    /** From now on, drop what the client sends (the primary no longer hears the replica's acknowledgements). */
    public void dropToTarget(boolean drop) {
        this.dropToTarget = drop;
    }

    /**
     * From now on, hold every chunk towards the target that starts with one of {@code prefixes} (e.g.
     * {@code "PUT "}: a request the client sent and the target has not yet received) until {@link #release()}: a
     * network delay of exactly those requests, what a paused sender looks like from the target.
     */
    public void holdRequestsStartingWith(String... prefixes) {
        gate = new CountDownLatch(1);
        holdPrefixes = Arrays.stream(prefixes)
                .map(p -> p.getBytes(StandardCharsets.US_ASCII)).toList();
    }

    /** Waits until a request is being held; false when none was within the time. */
    public boolean awaitHeld(Duration timeout) throws InterruptedException {
        return held.tryAcquire(timeout.toMillis(), TimeUnit.MILLISECONDS);
    }

    /** Lets the held requests (and every later one) through. */
    public void release() {
        holdPrefixes = List.of();
        gate.countDown();
    }

    private final Map<String, AtomicInteger> counted =
            new ConcurrentHashMap<>();

    /**
     * From now on, counts the chunks towards the target that start with {@code prefix}: with a client that writes
     * each request head in one write (the proxy's upstream client does), the requests of that method.
     */
    public void count(String prefix) {
        counted.putIfAbsent(prefix, new AtomicInteger());
    }

    /** How many chunks starting with {@code prefix} were relayed since {@link #count} was called for it. */
    public int counted(String prefix) {
        return counted.get(prefix).get();
    }

    private void countIfAsked(byte[] buffer, int n) {
        for (var e : counted.entrySet()) {
            byte[] p = e.getKey().getBytes(StandardCharsets.US_ASCII);
            if (n >= p.length && Arrays.equals(buffer, 0, p.length, p, 0, p.length)) {
                e.getValue().incrementAndGet();
            }
        }
    }

    private void holdIfAsked(byte[] buffer, int n) throws IOException {
        if (holdPrefixes.stream().noneMatch(prefix -> n >= prefix.length
                && Arrays.equals(buffer, 0, prefix.length, prefix, 0, prefix.length))) {
            return;
        }
        CountDownLatch g = gate;
        held.release();
        try {
            g.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while holding a request", e);
        }
    }

    private void accept() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Socket upstream = new Socket();
                upstream.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), target), 2000);
                sockets.add(client);
                sockets.add(upstream);
                pump(client, upstream, true);
                pump(upstream, client, false);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Socket from, Socket to, boolean towardsTarget) {
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[16384];
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while ((n = in.read(buffer)) >= 0) {
                    if (towardsTarget ? dropToTarget : dropToClient) {
                        continue;
                    }
                    if (towardsTarget) {
                        countIfAsked(buffer, n);
                        holdIfAsked(buffer, n);
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException ended) {
                // one side closed
            } finally {
                closeQuietly(from);
                closeQuietly(to);
            }
        }, "relay-" + (towardsTarget ? "up" : "down"));
        t.setDaemon(true);
        t.start();
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing
        }
    }

    @Override
    public void close() {
        closed = true;
        try {
            server.close();
        } catch (IOException ignored) {
            // closing
        }
        sockets.forEach(TcpRelay::closeQuietly);
    }
}
