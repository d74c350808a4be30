package io.stockade.conformance.check;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

import org.jspecify.annotations.Nullable;

/**
 * A thread-safe record of client-side fenced writes, for {@link HistoryChecker}. Each writer calls
 * {@link #invoke(String, long, String)} just before sending and completes the returned {@link Op} when the answer
 * (or the failure) arrives:
 *
 * <pre>{@code
 * History.Op op = history.invoke("doc-1", token, "w3-t17-n5");
 * try {
 *     op.complete(Http.put(uri, "w3-t17-n5", Map.of("Fencing-Token", "" + token)).status());
 * } catch (IOException e) {
 *     op.unknown(e.toString());
 * }
 * }</pre>
 *
 * Values must be unique per scope (the checker maps stored values back to operations), except for retries: the
 * same holder sending the same value again with the same token is one logical write attempted several times.
 *
 * <p>Histories recorded by other processes (the conformance suite's writers) give their own timestamps with the
 * {@code ...At} methods; they must come from the same monotonic clock ({@link System#nanoTime()} on one host is
 * {@code CLOCK_MONOTONIC}, shared by every process). A holder ({@link Op#holder()}) names one lease session (one
 * writer holding one token); the checker uses it for the rules about tokens across holders. Direct reads of the
 * storage ({@link #read}) let it see a stale write that took effect even when its writer never heard back.
 */
public final class History {

    /** How an operation ended. */
    public enum Outcome {
        /** Not completed (yet); the checker treats it as {@link #UNKNOWN} that never ended. */
        PENDING,
        /** Acknowledged (2xx): the write must be durable. */
        OK,
        /** Definitely refused (e.g. 409, 412, 428): the write must have left no trace. */
        FAIL,
        /** Timeout, I/O error or an ambiguous answer: the write may or may not have taken effect. */
        UNKNOWN
    }

    /** One write: its invocation and, once completed, its outcome. Completing twice throws. */
    public static final class Op {
        private final History history;
        private final long id;
        private final String scope;
        private final @Nullable String holder;
        private final long token;
        private final String value;
        private final long start;
        private Outcome outcome = Outcome.PENDING;
        private long end = Long.MAX_VALUE;
        private int status;
        private @Nullable String why;

        private Op(History history, long id, String scope, @Nullable String holder, long token, String value,
                   long start) {
            this.history = history;
            this.id = id;
            this.scope = scope;
            this.holder = holder;
            this.token = token;
            this.value = value;
            this.start = start;
        }

        /** The write was acknowledged with {@code status} (normally 2xx). */
        public Op ok(int status) {
            return finish(Outcome.OK, status, null, history.clock.getAsLong());
        }

        /** As {@link #complete(int)}, at clock reading {@code atNanos}. */
        public Op completeAt(int status, long atNanos) {
            if (status >= 200 && status < 300) {
                return finish(Outcome.OK, status, null, atNanos);
            }
            if (status >= 400 && status < 500) {
                return finish(Outcome.FAIL, status, null, atNanos);
            }
            return finish(Outcome.UNKNOWN, status, "status " + status, atNanos);
        }

        /** As {@link #unknown(String)}, at clock reading {@code atNanos}. */
        public Op unknownAt(String why, long atNanos) {
            return finish(Outcome.UNKNOWN, 0, why, atNanos);
        }

        /** The write was definitely refused with {@code status} (409, 412, 428, 400...). */
        public Op fail(int status) {
            return finish(Outcome.FAIL, status, null, history.clock.getAsLong());
        }

        /** The outcome is unknown (timeout, connection reset...). */
        public Op unknown(String why) {
            return finish(Outcome.UNKNOWN, 0, why, history.clock.getAsLong());
        }

        /**
         * Completes from an HTTP status: 2xx is {@link #ok}, 4xx is {@link #fail}, anything else (5xx such as a 504
         * after an upstream timeout) is {@link #unknown}, which is the conservative reading.
         */
        public Op complete(int status) {
            if (status >= 200 && status < 300) {
                return ok(status);
            }
            if (status >= 400 && status < 500) {
                return fail(status);
            }
            return finish(Outcome.UNKNOWN, status, "status " + status, history.clock.getAsLong());
        }

        private synchronized Op finish(Outcome outcome, int status, @Nullable String why, long at) {
            if (this.outcome != Outcome.PENDING) {
                throw new IllegalStateException("already completed: " + this);
            }
            if (at < start) {
                throw new IllegalArgumentException("completion at " + at + " is before the invocation at " + start);
            }
            this.end = at;
            this.outcome = outcome;
            this.status = status;
            this.why = why;
            return this;
        }

        /** Unique id in its history, in invocation order (1-based). */
        public long id() {
            return id;
        }

        public String scope() {
            return scope;
        }

        /** The lease session that wrote, or null when the history does not say. */
        public @Nullable String holder() {
            return holder;
        }

        public long token() {
            return token;
        }

        public String value() {
            return value;
        }

        /** Clock reading at invocation. */
        public long startNanos() {
            return start;
        }

        /** Clock reading at completion, or {@link Long#MAX_VALUE} while pending. */
        public synchronized long endNanos() {
            return end;
        }

        public synchronized Outcome outcome() {
            return outcome;
        }

        /** The HTTP status, or 0 if none. */
        public synchronized int status() {
            return status;
        }

        /** Why the outcome is unknown, or null. */
        public synchronized @Nullable String why() {
            return why;
        }

        /** Describes the op with times in ms relative to {@code originNanos}. */
        public synchronized String describe(long originNanos) {
            StringBuilder b = new StringBuilder()
                    .append("op#").append(id)
                    .append(" {scope=").append(scope)
                    .append(holder == null ? "" : " holder=" + holder)
                    .append(" token=").append(token)
                    .append(" value=").append(value)
                    .append(' ').append(outcome);
            if (status != 0) {
                b.append(' ').append(status);
            }
            if (why != null && status == 0) {
                b.append(" (").append(why).append(')');
            }
            b.append(String.format(Locale.ROOT, " %.3f..", (start - originNanos) / 1e6));
            b.append(end == Long.MAX_VALUE ? "pending"
                    : String.format(Locale.ROOT, "%.3f", (end - originNanos) / 1e6));
            return b.append(" ms}").toString();
        }

        @Override
        public String toString() {
            return describe(history.origin());
        }
    }

    /**
     * A direct read of the storage (never through the proxy).
     *
     * @param scope      the scope read
     * @param startNanos clock reading when the read was sent
     * @param endNanos   clock reading when its answer arrived
     * @param value      the value found, or null when the resource was absent
     */
    public record Read(String scope, long startNanos, long endNanos, @Nullable String value) {
        public Read {
            Objects.requireNonNull(scope, "scope");
            if (endNanos < startNanos) {
                throw new IllegalArgumentException("read ends before it starts");
            }
        }

        /** Describes the read with times in ms relative to {@code originNanos}. */
        public String describe(long originNanos) {
            return String.format(Locale.ROOT, "read {scope=%s value=%s %.3f..%.3f ms}", scope, value,
                    (startNanos - originNanos) / 1e6, (endNanos - originNanos) / 1e6);
        }
    }

    private final LongSupplier clock;
    private final AtomicLong ids = new AtomicLong();
    private final List<Op> ops = new ArrayList<>();
    private final List<Read> reads = new ArrayList<>();

    /** A history timed by {@link System#nanoTime()}. */
    public History() {
        this(System::nanoTime);
    }

    /** A history timed by {@code clock} (nanoseconds, monotonic): lets tests build exact histories by hand. */
    public History(LongSupplier clock) {
        this.clock = Objects.requireNonNull(clock);
    }

    /** Records the invocation of a write of {@code value} with {@code token} on {@code scope}, now. */
    public Op invoke(String scope, long token, String value) {
        return invokeAt(scope, null, token, value, clock.getAsLong());
    }

    /**
     * Records the invocation of a write by {@code holder} (a lease session; may be null) at clock reading
     * {@code atNanos}: for histories recorded elsewhere, e.g. by writer processes.
     */
    public Op invokeAt(String scope, @Nullable String holder, long token, String value, long atNanos) {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(value, "value");
        if (token < 0) {
            throw new IllegalArgumentException("token must be >= 0: " + token);
        }
        synchronized (ops) {
            Op op = new Op(this, ids.incrementAndGet(), scope, holder, token, value, atNanos);
            ops.add(op);
            return op;
        }
    }

    /** Records a direct read of the storage. */
    public Read read(String scope, long startNanos, long endNanos, @Nullable String value) {
        Read r = new Read(scope, startNanos, endNanos, value);
        synchronized (reads) {
            reads.add(r);
        }
        return r;
    }

    /** All direct reads, in the order they were recorded (a snapshot). */
    public List<Read> reads() {
        synchronized (reads) {
            return List.copyOf(reads);
        }
    }

    /** All operations, in invocation order (a snapshot). */
    public List<Op> ops() {
        synchronized (ops) {
            return List.copyOf(ops);
        }
    }

    /** The operations on one scope, in invocation order. */
    public List<Op> ops(String scope) {
        return ops().stream().filter(o -> o.scope().equals(scope)).toList();
    }

    /** The scopes that have operations, in order of first invocation. */
    public List<String> scopes() {
        return ops().stream().map(Op::scope).distinct().toList();
    }

    /** The start time of the first operation (the origin of relative times), or 0 if there is none. */
    public long origin() {
        return ops().stream().mapToLong(Op::startNanos).min().orElse(0);
    }

    /** Operations per outcome, for logs: e.g. {@code OK=12 FAIL=30 UNKNOWN=2 PENDING=0}. */
    public String summary() {
        List<Op> all = ops();
        StringBuilder b = new StringBuilder();
        for (Outcome o : Outcome.values()) {
            b.append(o).append('=').append(all.stream().filter(op -> op.outcome() == o).count()).append(' ');
        }
        return b.toString().trim();
    }

    static final Comparator<Op> BY_START = Comparator.comparingLong(Op::startNanos).thenComparingLong(Op::id);
}
