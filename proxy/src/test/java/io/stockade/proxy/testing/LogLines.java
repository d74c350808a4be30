package io.stockade.proxy.testing;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Predicate;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Every message a logger (and its children) publishes from creation until {@link #close}, whatever its level: for
 * the proxy's one-line-per-request decision log ({@code stockade.decision}), which records the status the proxy
 * answered even when the client never saw it.
 */
public final class LogLines implements AutoCloseable {
    private final List<String> lines = new CopyOnWriteArrayList<>();
    private final Logger logger;
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord r) {
            lines.add(r.getMessage());
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    public LogLines(String name) {
        logger = Logger.getLogger(name);
        logger.addHandler(handler);
    }

    public List<String> lines() {
        return List.copyOf(lines);
    }

    /**
     * The first line that matches, waiting up to {@code timeout} for it (a request's line is written after its
     * answer, so the client can see the answer a moment before the line); null if none came.
     */
    public String await(Predicate<String> match, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            for (String line : lines) {
                if (match.test(line)) {
                    return line;
                }
            }
            if (System.nanoTime() - deadline > 0) {
                return null;
            }
            Thread.sleep(10);
        }
    }

    @Override
    public void close() {
        logger.removeHandler(handler);
    }
}
