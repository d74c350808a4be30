package io.stockade.proxy.upstream;

import java.util.Iterator;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;

/**
 * Bounds how long one write of a request to an upstream may block. The JDK bounds socket reads
 * ({@code SO_TIMEOUT}) but not writes: an upstream that stops reading, or a network that drops every segment once
 * the send buffer is full, would hold the write, and a serialized scope with it, for ever. One daemon thread looks
 * at the connections sending a request every {@value #PERIOD_MILLIS} ms and aborts (RST) the connection of a write
 * blocked longer than its request's timeout; the write fails at once as a timeout (outcome unknown), and nothing of
 * the request leaves the host after it.
 * <p>
 * A connection is watched from its opening to its close or abort, pooled or not: a request costs no set operation,
 * only the volatile field each write marks its start and end with, and a look every period costs one read of that
 * field for each open connection (a proxy keeps tens to hundreds). Watching each exchange instead (an add and a
 * remove on a concurrent set a request) was 2 % of the CPU a pass-through request (docs/benchmarks.md).
 */
final class SendWatchdog {
    static final long PERIOD_MILLIS = 50;
    private static final Set<UpstreamClient.Connection> SENDING = ConcurrentHashMap.newKeySet();

    static {
        ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
            Thread t = new Thread(r, "stockade-upstream-send-watchdog");
            t.setDaemon(true);
            return t;
        });
        var unused = timer.scheduleWithFixedDelay(SendWatchdog::check, PERIOD_MILLIS, PERIOD_MILLIS,
                TimeUnit.MILLISECONDS);
    }

    private SendWatchdog() {
    }

    static void watch(UpstreamClient.Connection connection) {
        SENDING.add(connection);
    }

    static void unwatch(UpstreamClient.Connection connection) {
        SENDING.remove(connection);
    }

    private static void check() {
        long now = System.nanoTime();
        // A concurrent set's iterator is weakly consistent: removing through it while iterating is safe.
        for (Iterator<UpstreamClient.Connection> i = SENDING.iterator(); i.hasNext(); ) {
            UpstreamClient.Connection c = i.next();
            if (c.writeOverdue(now)) {
                c.abortedByWatchdog = true;
                i.remove();
                c.abort();
            }
        }
    }
}
