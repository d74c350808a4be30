package io.stockade.proxy.listener;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Logger;

/**
 * The text-log lines of the listener's own refusals (a request the HTTP parser refused before any policy saw it:
 * another HTTP version, an HTTP/2 preface, bytes that do not parse, limits): at most one line a second per kind,
 * with the count of lines left out, since any client can cause one per connection.
 */
final class ListenerLog {
    private static final Logger LOG = Logger.getLogger("stockade.listener");
    static final long INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final LongSupplier nanoTime;
    private final ConcurrentHashMap<String, long[]> windows = new ConcurrentHashMap<>();

    ListenerLog(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    /** Logs the line of a refusal of {@code kind} unless one was logged less than a second ago. */
    void refused(String kind, Supplier<String> line) {
        long leftOut = admit(kind);
        if (leftOut >= 0) {
            String text = line.get();
            LOG.info(leftOut == 0 ? text : text + " [" + leftOut + " more such line" + (leftOut == 1 ? "" : "s")
                    + " left out: at most one a second]");
        }
    }

    /** -1 to leave the line out, else how many lines of the kind were left out before it. */
    long admit(String kind) {
        long[] w = windows.computeIfAbsent(kind, k -> new long[] {0, 0, 0}); // started, opened, suppressed
        synchronized (w) {
            long now = nanoTime.getAsLong();
            if (w[0] == 0 || now - w[1] >= INTERVAL_NANOS) {
                long left = w[2];
                w[0] = 1;
                w[1] = now;
                w[2] = 0;
                return left;
            }
            w[2]++;
            return -1;
        }
    }
}
