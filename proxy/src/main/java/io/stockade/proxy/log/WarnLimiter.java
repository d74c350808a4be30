package io.stockade.proxy.log;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;

/**
 * At most one log line per key (a policy and a kind of warning) per interval, so that a client cannot flood the
 * text log by sending bad requests: a forged token costs the client one request and would otherwise cost one WARN
 * line. The lines left out are counted and the count is put on the next line that is logged. The decision log and
 * the metrics are not limited: they still count every request.
 * <p>
 * Keys are policy names with a suffix, so there are as many windows as policies (a reload may leave a few behind).
 */
public final class WarnLimiter {
    /** The default interval: one line a second per key. */
    public static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private static final class Window {
        boolean started;
        long opened;
        long suppressed;
    }

    private final LongSupplier nanoTime;
    private final long intervalNanos;
    private final ConcurrentHashMap<String, Window> windows = new ConcurrentHashMap<>();

    public WarnLimiter(LongSupplier nanoTime, long intervalNanos) {
        this.nanoTime = nanoTime;
        this.intervalNanos = intervalNanos;
    }

    /**
     * Whether a line for {@code key} may be logged now.
     *
     * @return {@code -1} to leave this line out (it is counted), otherwise how many lines were left out since the
     *         previous line for the key was logged
     */
    public long admit(String key) {
        Window w = windows.computeIfAbsent(key, k -> new Window());
        synchronized (w) {
            long now = nanoTime.getAsLong();
            if (!w.started || now - w.opened >= intervalNanos) {
                long left = w.suppressed;
                w.started = true;
                w.opened = now;
                w.suppressed = 0;
                return left;
            }
            w.suppressed++;
            return -1;
        }
    }

    /** The text to add to a logged line that says how many were left out before it (empty when none). */
    public static String leftOut(long count) {
        return count <= 0 ? "" : " [" + count + " more such line" + (count == 1 ? "" : "s")
                + " left out since the previous one: at most one a second per policy]";
    }
}
