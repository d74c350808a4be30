package io.stockade.conformance.fault;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketException;
import java.time.Duration;
import java.util.Arrays;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A fault-injecting TCP proxy on loopback, between one writer and its target (like Toxiproxy, in process). Toxics,
 * switched on and off at run time, apply to bytes as they arrive:
 * <ul>
 *   <li>{@link #latency(Duration)}: each chunk the client sends is forwarded that much later (order kept). If the
 *       client gives up meanwhile, the chunk is still delivered: a zombie's request arriving late.</li>
 *   <li>{@link #blackhole(boolean)}: client bytes are dropped (a timeout for the client, nothing arrives).</li>
 *   <li>{@link #dropNextResponse()}: the next answer from the target is discarded and the client's connection is
 *       reset: the write happened, its acknowledgement is lost.</li>
 *   <li>{@link #resetAll()}: every open connection is reset (RST) now.</li>
 *   <li>{@link #slowClose(Duration)}: a connection closed by the target is closed to the client that much later.</li>
 * </ul>
 * {@link #heal()} removes every toxic; chunks already delayed keep their delivery time. The target can be moved
 * ({@link #target(InetSocketAddress)}), e.g. to a restarted proxy on a new port.
 */
public final class FaultProxy implements AutoCloseable {

    private static final byte[] EOF = new byte[0];

    @SuppressWarnings("ArrayRecordComponent") // a queue's element: never compared, hashed or printed
    private record Chunk(byte[] data, long dueNanos) {
    }

    private final ServerSocket server;
    private final Set<Socket> open = ConcurrentHashMap.newKeySet();
    private final AtomicBoolean dropNext = new AtomicBoolean();
    private final AtomicInteger dropped = new AtomicInteger();
    private final AtomicInteger delayed = new AtomicInteger();
    private final AtomicLong delayedDue = new AtomicLong(Long.MIN_VALUE);
    private volatile InetSocketAddress target;
    private volatile long latencyNanos;
    private volatile boolean blackhole;
    private volatile long slowCloseNanos;
    private volatile boolean closed;

    private FaultProxy(InetSocketAddress target) throws IOException {
        this.target = target;
        this.server = new ServerSocket(0, 128, InetAddress.getLoopbackAddress());
        Thread.ofVirtual().name("fault-proxy-accept-" + server.getLocalPort()).start(this::acceptLoop);
    }

    /** Starts a proxy on an ephemeral loopback port forwarding to {@code target}. */
    public static FaultProxy start(InetSocketAddress target) {
        try {
            return new FaultProxy(target);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the fault proxy", e);
        }
    }

    public int port() {
        return server.getLocalPort();
    }

    public FaultProxy target(InetSocketAddress target) {
        this.target = target;
        return this;
    }

    public FaultProxy latency(Duration d) {
        latencyNanos = d.toNanos();
        return this;
    }

    public FaultProxy blackhole(boolean on) {
        blackhole = on;
        return this;
    }

    public FaultProxy slowClose(Duration d) {
        slowCloseNanos = d.toNanos();
        return this;
    }

    public FaultProxy dropNextResponse() {
        dropNext.set(true);
        return this;
    }

    /** Removes every toxic. */
    public FaultProxy heal() {
        latencyNanos = 0;
        blackhole = false;
        slowCloseNanos = 0;
        dropNext.set(false);
        return this;
    }

    /** Resets every open connection. */
    public void resetAll() {
        for (Socket s : open) {
            reset(s);
        }
    }

    /** How many answers were dropped by {@link #dropNextResponse()}. */
    public int droppedResponses() {
        return dropped.get();
    }

    /** How many client chunks were delayed by {@link #latency(Duration)}. */
    public int delayedChunks() {
        return delayed.get();
    }

    /**
     * When the last chunk delayed by {@link #latency(Duration)} so far is due to be forwarded
     * ({@link System#nanoTime()}), or {@link Long#MIN_VALUE} if none was delayed: after that, nothing a client sent is
     * still held here.
     */
    public long delayedUntilNanos() {
        return delayedDue.get();
    }

    private void acceptLoop() {
        while (!closed) {
            try {
                Socket client = server.accept();
                Thread.ofVirtual().start(() -> serve(client));
            } catch (IOException e) {
                if (!closed) {
                    continue;
                }
                return;
            }
        }
    }

    private void serve(Socket client) {
        Socket upstream = new Socket();
        open.add(client);
        open.add(upstream);
        try {
            client.setTcpNoDelay(true);
            upstream.setTcpNoDelay(true);
            upstream.connect(target, 2000);
        } catch (IOException e) {
            reset(client);
            forget(client, upstream);
            return;
        }
        LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
        AtomicBoolean clientGone = new AtomicBoolean();
        Thread.ofVirtual().start(() -> clientToQueue(client, queue, clientGone));
        Thread.ofVirtual().start(() -> queueToUpstream(queue, upstream, client));
        Thread.ofVirtual().start(() -> upstreamToClient(upstream, client, clientGone));
    }

    private void clientToQueue(Socket client, LinkedBlockingQueue<Chunk> queue, AtomicBoolean clientGone) {
        byte[] buf = new byte[16384];
        try (InputStream in = client.getInputStream()) {
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (blackhole) {
                    continue;
                }
                long lat = latencyNanos;
                long due = System.nanoTime() + lat;
                if (lat > 0) {
                    delayed.incrementAndGet();
                    delayedDue.accumulateAndGet(due, Math::max);
                }
                queue.add(new Chunk(Arrays.copyOf(buf, n), due));
            }
        } catch (IOException ignored) {
            // the client went away: what it already sent is still delivered
        }
        clientGone.set(true);
        queue.add(new Chunk(EOF, System.nanoTime() + latencyNanos));
    }

    private void queueToUpstream(LinkedBlockingQueue<Chunk> queue, Socket upstream, Socket client) {
        try {
            OutputStream out = upstream.getOutputStream();
            while (true) {
                Chunk c = queue.take();
                long wait;
                while ((wait = c.dueNanos - System.nanoTime()) > 0) {
                    Thread.sleep(Math.max(1, wait / 1_000_000L));
                }
                if (c.data == EOF) {
                    // Keep the connection open a while so the target can answer (and apply) what arrived late.
                    upstream.setSoTimeout(10_000);
                    Thread.sleep(5_000);
                    upstream.close();
                    return;
                }
                out.write(c.data);
                out.flush();
            }
        } catch (IOException | InterruptedException e) {
            reset(client);
        }
    }

    private void upstreamToClient(Socket upstream, Socket client, AtomicBoolean clientGone) {
        byte[] buf = new byte[16384];
        boolean dropping = false;
        try (InputStream in = upstream.getInputStream()) {
            OutputStream out = client.getOutputStream();
            int n;
            while ((n = in.read(buf)) >= 0) {
                if (!dropping && dropNext.compareAndSet(true, false)) {
                    dropping = true;
                    dropped.incrementAndGet();
                    reset(client);
                }
                if (dropping || clientGone.get()) {
                    continue;
                }
                try {
                    out.write(buf, 0, n);
                    out.flush();
                } catch (IOException e) {
                    clientGone.set(true);
                }
            }
            long slow = slowCloseNanos;
            if (slow > 0) {
                Thread.sleep(slow / 1_000_000L);
            }
        } catch (IOException | InterruptedException ignored) {
            // either side reset
        } finally {
            try {
                client.close();
            } catch (IOException ignored) {
                // closed already
            }
            forget(client, upstream);
        }
    }

    private void forget(Socket client, Socket upstream) {
        open.remove(client);
        open.remove(upstream);
    }

    private static void reset(Socket s) {
        try {
            s.setSoLinger(true, 0);
            s.close();
        } catch (SocketException ignored) {
            // closed already
        } catch (IOException ignored) {
            // nothing else to do
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
        resetAll();
    }
}
