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
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.jspecify.annotations.Nullable;

/**
 * A TCP relay on a loopback port in front of {@code 127.0.0.1:target}, whose two directions can be cut on purpose:
 * bytes are then read and dropped (the sender sees no error, its peer never gets them), as on a network that loses
 * packets one way or both. A Redis replica told to replicate from the relay's port loses the primary's writes while
 * {@link #dropToClient} is on — what a primary that acknowledged a write and died before replicating it looks like to
 * the replica. {@link #holdRequestsStartingWith} delays chosen requests towards the target instead.
 * <p>
 * {@link #freeze()} is a network cut as a firewall's DROP makes it, seen from the sender: the relay stops reading
 * what the client sends (at most the chunk it was reading is kept), so the client's kernel keeps the rest unsent and
 * retransmits it once {@link #thaw()} lets the bytes flow again. Made with {@link #to(int, int)} and a small
 * receive buffer, the relay's own kernel takes only a few KiB first. A client that resets its connection (RST)
 * meanwhile loses what it had not sent: the relay then resets its connection to the target as well, so the target
 * sees the request cut off, never completed.
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
    /** The cut {@link #freeze()} made, or null; new connections join it while {@link #freezeNew} is on. */
    private volatile @Nullable CountDownLatch freeze;
    private volatile boolean freezeNew;
    private final List<Pair> pairs = new CopyOnWriteArrayList<>();
    private final AtomicInteger ended = new AtomicInteger();
    private final Object endedLock = new Object();

    /** One relayed connection: its client side, its target side, and the cut its reads wait at (if any). */
    private static final class Pair {
        final Socket client;
        final Socket target;
        volatile @Nullable CountDownLatch cut;

        Pair(Socket client, Socket target, @Nullable CountDownLatch cut) {
            this.client = client;
            this.target = target;
            this.cut = cut;
        }
    }

    private TcpRelay(ServerSocket server, int target) {
        this.server = server;
        this.target = target;
    }

    /** A relay to {@code 127.0.0.1:target}. */
    public static TcpRelay to(int target) {
        return to(target, 0);
    }

    /**
     * A relay to {@code 127.0.0.1:target} whose accepted connections have a receive buffer of about
     * {@code receiveBuffer} bytes (0: the system's default), so that a {@link #freeze()} leaves the client's bytes
     * in the client's own kernel.
     */
    public static TcpRelay to(int target, int receiveBuffer) {
        try {
            ServerSocket server = new ServerSocket();
            if (receiveBuffer > 0) {
                server.setReceiveBufferSize(receiveBuffer); // before bind: accepted sockets inherit it
            }
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 50);
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

    /**
     * Cuts every connection, open or new, towards the target: the relay reads nothing more of what clients send
     * (the chunk a connection was reading when the cut came is kept, not relayed) until {@link #thaw()}.
     */
    public void freeze() {
        CountDownLatch cut = new CountDownLatch(1);
        freeze = cut;
        freezeNew = true;
        pairs.forEach(p -> p.cut = cut);
    }

    /** New connections pass from now on; the connections cut by {@link #freeze()} stay cut. */
    public void admitNew() {
        freezeNew = false;
    }

    /** Ends the cut: what the cut connections' clients still deliver is relayed. */
    public void thaw() {
        CountDownLatch cut = freeze;
        freeze = null;
        freezeNew = false;
        if (cut != null) {
            cut.countDown();
        }
    }

    /** How many relayed connections have ended (both of their sockets closed). */
    public int endedConnections() {
        return ended.get();
    }

    /** Waits until at least {@code count} relayed connections have ended; false when they had not in time. */
    public boolean awaitEnded(int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (endedLock) {
            while (ended.get() < count) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(endedLock, left);
            }
        }
        return true;
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
        return Objects.requireNonNull(counted.get(prefix), "count(prefix) first").get();
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
                Pair pair = new Pair(client, upstream, freezeNew ? freeze : null);
                pairs.add(pair);
                pump(pair, true);
                pump(pair, false);
            } catch (IOException e) {
                if (closed) {
                    return;
                }
            }
        }
    }

    private void pump(Pair pair, boolean towardsTarget) {
        Socket from = towardsTarget ? pair.client : pair.target;
        Socket to = towardsTarget ? pair.target : pair.client;
        Thread t = new Thread(() -> {
            byte[] buffer = new byte[16384];
            boolean reset = false;
            try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
                int n;
                while (true) {
                    if (towardsTarget) {
                        awaitCut(pair);
                    }
                    try {
                        n = in.read(buffer);
                    } catch (IOException e) {
                        reset = towardsTarget; // the client reset its connection: so does the relay
                        throw e;
                    }
                    if (n < 0) {
                        break;
                    }
                    if (towardsTarget ? dropToTarget : dropToClient) {
                        continue;
                    }
                    if (towardsTarget) {
                        awaitCut(pair);
                        countIfAsked(buffer, n);
                        holdIfAsked(buffer, n);
                    }
                    out.write(buffer, 0, n);
                    out.flush();
                }
            } catch (IOException gone) {
                // one side closed
            } finally {
                if (reset) {
                    abortQuietly(to);
                }
                closeQuietly(from);
                closeQuietly(to);
                if (towardsTarget) {
                    synchronized (endedLock) {
                        ended.incrementAndGet();
                        endedLock.notifyAll();
                    }
                }
            }
        }, "relay-" + (towardsTarget ? "up" : "down"));
        t.setDaemon(true);
        t.start();
    }

    private static void awaitCut(Pair pair) throws IOException {
        CountDownLatch cut = pair.cut;
        if (cut == null) {
            return;
        }
        try {
            cut.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while cut", e);
        }
    }

    private static void abortQuietly(Socket s) {
        try {
            s.setSoLinger(true, 0);
        } catch (IOException ignored) {
            // already closed
        }
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
        thaw();
        sockets.forEach(TcpRelay::closeQuietly);
    }
}
