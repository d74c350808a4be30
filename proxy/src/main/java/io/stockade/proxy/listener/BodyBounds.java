package io.stockade.proxy.listener;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.SocketTimeoutException;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

import io.stockade.proxy.io.BulkInputStream;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.RequestException;
import org.jspecify.annotations.Nullable;

/**
 * The per-policy bounds on one request's body: how many bytes, and by when the last of them must have arrived.
 * Backends read the body through {@link #wrap}; a body that goes over a bound fails the read with
 * {@link BodyRefused}, which carries the answer (413 or 408), so the backend abandons the write instead of
 * committing part of it. A read that blocks past the listener's read timeout is reported the same way (408).
 * <p>
 * One instance per request. It remembers the first refusal ({@link #refused()}), so the pipeline can tell a body
 * cut off by a bound from any other failure, whatever the backend made of the exception.
 * <p>
 * <b>Why a watchdog.</b> Helidon's server sets no read timeout on accepted sockets, so a body that stops arriving
 * blocks its read for ever, and with a serialized backend holds its scope for ever. A read that blocks longer than
 * the read timeout, or past the body's deadline, is ended by the {@link #WATCHDOG}: it interrupts the reading
 * (virtual) thread, which closes the socket, and the read fails with the 408 refusal. The client then sees the
 * connection closed rather than the 408: it stopped reading and writing anyway.
 */
public final class BodyBounds {
    private static final String READ_TIMEOUT = "a read of the body blocked longer than the listener's read-timeout";
    /** How often blocked reads are checked. */
    static final long WATCH_PERIOD_MILLIS = 100;
    private static final Set<BodyBounds.Bounded> READING = ConcurrentHashMap.newKeySet();
    private static final ScheduledExecutorService WATCHDOG = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "stockade-body-watchdog");
        t.setDaemon(true);
        return t;
    });

    static {
        // runs for the JVM's life; watch() catches what one stream throws, so the future has nothing to report
        var unused = WATCHDOG.scheduleWithFixedDelay(BodyBounds::watch, WATCH_PERIOD_MILLIS, WATCH_PERIOD_MILLIS,
                TimeUnit.MILLISECONDS);
    }

    /** No bounds: a body is read as it comes. */
    public static BodyBounds none() {
        return new BodyBounds(Long.MAX_VALUE, Long.MAX_VALUE, Long.MAX_VALUE, System::nanoTime);
    }

    private final long maxBytes;
    private final long bodyTimeoutNanos;
    /** When the body must have arrived by: set at the first read ({@code Long.MAX_VALUE} until then, or none). */
    private volatile long deadline = Long.MAX_VALUE;
    private final long readTimeoutNanos;
    private final LongSupplier nanoTime;
    private volatile @Nullable BodyRefused refused;

    /**
     * @param maxBytes         the largest body accepted
     * @param bodyTimeoutNanos how long the body may take to arrive, counted from the first read of it
     *                         ({@code Long.MAX_VALUE}: no bound). Not from the request's receipt: the time a write
     *                         waits for its scope or its verifier is not the client's doing.
     * @param readTimeoutNanos the longest one read may block ({@code Long.MAX_VALUE}: no bound)
     */
    public BodyBounds(long maxBytes, long bodyTimeoutNanos, long readTimeoutNanos, LongSupplier nanoTime) {
        this.maxBytes = maxBytes;
        this.bodyTimeoutNanos = bodyTimeoutNanos;
        this.readTimeoutNanos = readTimeoutNanos;
        this.nanoTime = nanoTime;
    }

    /** Interrupts each read that has blocked too long (the watchdog's task). */
    private static void watch() {
        for (Bounded b : READING) {
            try {
                b.expireIfDue();
            } catch (RuntimeException e) {
                // never let one stream stop the watchdog
            }
        }
    }

    /** The body refusal that happened, or null. */
    public @Nullable BodyRefused refused() {
        return refused;
    }

    /** {@code in}, failing with {@link BodyRefused} once it goes over a bound. */
    public InputStream wrap(InputStream in) {
        return new Bounded(in);
    }

    private BodyRefused refuse(BodyRefused e) {
        if (refused == null) {
            refused = e;
        }
        return e;
    }

    private final class Bounded extends BulkInputStream {
        private final InputStream in;
        private long count;
        /** Guarded by {@code this}: the thread blocked in a read, when it started, and whether it was cut off. */
        private @Nullable Thread reader;
        private long readSince;
        private @Nullable BodyRefused cutOff;

        Bounded(InputStream in) {
            this.in = in;
        }

        private synchronized void expireIfDue() {
            if (reader == null || cutOff != null) {
                return;
            }
            long now = nanoTime.getAsLong();
            String why = now - readSince > readTimeoutNanos
                    ? READ_TIMEOUT
                    : deadline != Long.MAX_VALUE && now - deadline > 0
                    ? "the body did not arrive within the policy's body-timeout" : null;
            if (why != null) {
                cutOff = refuse(BodyRefused.timedOut(why, null));
                reader.interrupt(); // inside the lock: the reader sees the interrupt before it can clear it
            }
        }

        private synchronized void startRead() {
            reader = Thread.currentThread();
            readSince = nanoTime.getAsLong();
        }

        /** Ends a read; throws the watchdog's refusal (and clears its interrupt) when it cut the read off. */
        private void endRead() throws BodyRefused {
            BodyRefused expired;
            synchronized (this) {
                reader = null;
                expired = cutOff;
            }
            READING.remove(this);
            if (expired != null) {
                Thread.interrupted();
                throw expired;
            }
        }

        /** Ends a read without a verdict (idempotent): unregistered, and the watchdog's interrupt, if any, cleared. */
        private void disarm() {
            boolean interrupted;
            synchronized (this) {
                if (reader == null) {
                    return; // endRead came first
                }
                reader = null;
                interrupted = cutOff != null;
            }
            READING.remove(this);
            if (interrupted) {
                Thread.interrupted();
            }
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (refused != null) {
                throw refused;
            }
            if (deadline == Long.MAX_VALUE && bodyTimeoutNanos != Long.MAX_VALUE) {
                long now = nanoTime.getAsLong();
                long due = now + bodyTimeoutNanos;
                deadline = due == Long.MAX_VALUE ? due - 1 : due; // the body clock starts at its first read
            }
            checkDeadline();
            int n;
            startRead();
            READING.add(this);
            try {
                // One byte more than allowed tells "exactly at the bound" from "over it".
                long room = maxBytes - count; // never negative: a read past the bound is refused at once
                n = in.read(b, off, room >= len ? len : (int) room + 1);
            } catch (SocketTimeoutException e) {
                endRead();
                throw refuse(BodyRefused.timedOut(READ_TIMEOUT, e));
            } catch (UncheckedIOException e) {
                endRead(); // the watchdog's refusal, if it caused this failure
                if (e.getCause() instanceof SocketTimeoutException) {
                    throw refuse(BodyRefused.timedOut(READ_TIMEOUT, e));
                }
                throw e;
            } catch (RequestException e) {
                // The body's framing is broken (a malformed chunk: RequestFraming, or Helidon's own chunk reader),
                // or a chunked body went over the listener's max-body-bytes. The connection is closed after the
                // answer (Connection: close, UnreadBody), as nothing after a broken body can be read as a request.
                endRead();
                throw refuse(BodyRefused.framing(e));
            } catch (IOException | RuntimeException e) {
                endRead();
                throw e;
            } finally {
                // Whatever ended the read (an Error too): the watchdog must never interrupt this thread after it,
                // when it may be serving another request on the connection.
                disarm();
            }
            endRead();
            if (n > 0) {
                count += n;
                if (count > maxBytes) {
                    throw refuse(BodyRefused.tooLarge(maxBytes));
                }
                checkDeadline();
            }
            return n;
        }

        private void checkDeadline() throws BodyRefused {
            if (deadline != Long.MAX_VALUE && nanoTime.getAsLong() - deadline > 0) {
                throw refuse(BodyRefused.timedOut("the body did not arrive within the policy's body-timeout", null));
            }
        }

        @Override
        public int available() throws IOException {
            return in.available();
        }

        @Override
        public void close() throws IOException {
            in.close();
        }

        @Override
        public long skip(long n) throws IOException {
            byte[] buf = new byte[(int) Math.min(8192, Math.max(1, n))];
            long skipped = 0;
            while (skipped < n) {
                int r = read(buf, 0, (int) Math.min(buf.length, n - skipped));
                if (r < 0) {
                    break;
                }
                skipped += r;
            }
            return skipped;
        }
    }

    /** A body cut off by a bound: the answer the client gets, and the reason the write was abandoned. */
    public static final class BodyRefused extends IOException {
        private static final String NOTHING_WRITTEN = "; it was cut off and nothing was written";
        private final transient Problem problem;
        private final String reason;

        private BodyRefused(Problem problem, String reason, @Nullable Throwable cause) {
            super(problem.detail(), cause);
            this.problem = problem;
            this.reason = reason;
        }

        static BodyRefused tooLarge(long maxBytes) {
            String reason = "the body is larger than the policy's max-body-bytes (" + maxBytes + " bytes)";
            return new BodyRefused(Problem.of(ProblemType.BODY_TOO_LARGE, reason + NOTHING_WRITTEN)
                    .with("maxBodyBytes", maxBytes).header("Connection", "close"), reason, null);
        }

        /** The body's framing failed in Helidon's reader: 413 over the listener's bound, else 400 malformed-body. */
        static BodyRefused framing(RequestException e) {
            if (e.status().code() == 413) {
                String reason = "the chunked body is larger than the listener's max-body-bytes";
                return new BodyRefused(Problem.of(ProblemType.BODY_TOO_LARGE, reason + NOTHING_WRITTEN)
                        .header("Connection", "close"), reason, e);
            }
            String why = e.getMessage() == null || e.getMessage().isBlank() ? "the body's framing is malformed"
                    : e.getMessage();
            return new BodyRefused(Problem.of(ProblemType.MALFORMED_BODY, why + NOTHING_WRITTEN)
                    .header("Connection", "close"), why, e);
        }

        static BodyRefused timedOut(String why, @Nullable Throwable cause) {
            return new BodyRefused(Problem.of(ProblemType.BODY_TIMEOUT, why + NOTHING_WRITTEN)
                    .header("Connection", "close"), why, cause);
        }

        /**
         * Why the body was cut off, without the answer's "nothing was written": a backend that had sent bytes of it
         * to the storage before says the outcome is unknown instead.
         */
        public String reason() {
            return reason;
        }

        /** The answer to send. */
        public Problem problem() {
            return problem;
        }

        /** The refusal in {@code e}'s cause chain, or null. */
        public static @Nullable BodyRefused in(Throwable e) {
            for (Throwable t = e; t != null; t = t.getCause()) {
                if (t instanceof BodyRefused refused) {
                    return refused;
                }
            }
            return null;
        }
    }
}
