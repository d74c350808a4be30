package io.stockade.proxy.backend.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Ends a write whose database stopped answering: a transaction still running past its limit has its connection
 * aborted ({@link Connection#abort}: the driver closes the socket), so the blocked read fails, the write answers
 * 503 (before COMMIT) or 504 (during it), and the pool replaces the connection.
 * <p>
 * <b>Why not the driver's {@code socketTimeout}.</b> It bounds each read, but every read with a timeout is a timed
 * park of the (virtual) thread: the JDK's delay scheduler is woken for each one, about six more context switches
 * and nine more {@code futex} calls per write on this path (docs/benchmarks.md, "PostgreSQL backend").
 * One sweeper thread checking the transactions in flight every {@link #PERIOD} costs nothing per read. The bound
 * is per transaction instead of per read, so it allows for each statement's own {@code statement_timeout}
 * (the fence's own statements and the COMMIT count too: {@code TransactionRunner.limit}).
 */
final class TransactionWatchdog implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(TransactionWatchdog.class.getName());
    /** How often transactions in flight are checked. */
    static final Duration PERIOD = Duration.ofMillis(200);

    private final Set<Watch> running = ConcurrentHashMap.newKeySet();
    private final Thread sweeper;
    private volatile boolean closed;

    TransactionWatchdog(String name) {
        sweeper = Thread.ofPlatform().daemon().name(name).unstarted(this::sweep);
        sweeper.start();
    }

    /** One transaction in flight on its connection; closing it (when the transaction ends) stops the watch. */
    final class Watch implements AutoCloseable {
        private final Connection connection;
        private final long deadline;

        private Watch(Connection connection, long deadline) {
            this.connection = connection;
            this.deadline = deadline;
        }

        @Override
        public void close() {
            running.remove(this);
        }
    }

    /** Watches a transaction on {@code c} that must end within {@code limit}. */
    Watch watch(Connection c, Duration limit) {
        Watch w = new Watch(c, System.nanoTime() + limit.toNanos());
        running.add(w);
        return w;
    }

    /** Transactions being watched (tests). */
    int running() {
        return running.size();
    }

    @SuppressWarnings("ModifyCollectionInEnhancedForLoop") // running is concurrent: its iterator allows removal
    private void sweep() {
        while (!closed) {
            try {
                Thread.sleep(PERIOD);
            } catch (InterruptedException e) {
                return;
            }
            long now = System.nanoTime();
            for (Watch w : running) {
                // remove() decides between this and the transaction's own close(): only one of them wins
                if (now - w.deadline >= 0 && running.remove(w)) {
                    LOG.warning("a database transaction ran past its limit (the statement-timeout for each"
                            + " statement, the fence's own and the COMMIT, plus 5 s); aborting its connection");
                    try {
                        w.connection.abort(Runnable::run);
                    } catch (SQLException | RuntimeException e) {
                        LOG.log(Level.FINE, "aborting a connection failed", e);
                    }
                }
            }
        }
    }

    @Override
    public void close() {
        closed = true;
        sweeper.interrupt();
    }
}
