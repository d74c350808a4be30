package io.stockade.proxy.testing;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * The records a logger and its children publish at {@code least} or above, from creation until {@link #close}:
 * the warnings an operator would read ({@link Warnings}), or the proxy's one-line-per-request decision log
 * ({@code stockade.decision}, at INFO), which records the status the proxy answered even when the client never saw
 * it. Create it after the proxy started: the start installs the log's own handlers.
 */
public final class LogLines implements AutoCloseable {
    private final List<LogRecord> records = new CopyOnWriteArrayList<>();
    private final Logger logger;
    private final Handler handler;

    public LogLines(String name, Level least) {
        handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= least.intValue()) {
                    records.add(r);
                }
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        logger = Logger.getLogger(name);
        logger.addHandler(handler);
    }

    public List<LogRecord> records() {
        return List.copyOf(records);
    }

    /**
     * The first message that matches, waiting up to {@code timeout} for it (a request's decision line is written
     * after its answer, so the client can see the answer a moment before the line); null if none came.
     */
    public String await(Predicate<String> match, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (LogRecord r : records) {
                if (match.test(r.getMessage())) {
                    return r.getMessage();
                }
            }
            if (System.nanoTime() - deadline > 0) {
                return null;
            }
            Thread.sleep(10);
        }
    }

    /** Waits until a message contains {@code text}; false if none did within the timeout. */
    public boolean await(String text, Duration timeout) throws InterruptedException {
        return await(m -> m.contains(text), timeout) != null;
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
