package io.stockade.proxy.testing;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The WARNING (and SEVERE) records a class's logger published while a body ran: what an operator would read. */
public final class Warnings {
    private Warnings() {
    }

    /** A body that may throw. */
    public interface ThrowingRunnable {
        void run() throws Exception;
    }

    /** The records of {@code source}'s logger at WARNING and above, published while {@code body} ran. */
    public static List<LogRecord> during(Class<?> source, ThrowingRunnable body) throws Exception {
        return during(source.getName(), body);
    }

    /**
     * The records at WARNING and above of the logger named {@code name} and its children (e.g. {@code
     * io.stockade.proxy}: the whole proxy), published while {@code body} ran.
     */
    public static List<LogRecord> during(String name, ThrowingRunnable body) throws Exception {
        try (Capture capture = capture(name)) {
            body.run();
            return capture.records();
        }
    }

    /** The messages of {@link #during}. */
    public static List<String> messages(Class<?> source, ThrowingRunnable body) throws Exception {
        return during(source, body).stream().map(LogRecord::getMessage).toList();
    }

    /** A capture that stays open until closed, for records logged in the background. */
    public static Capture capture(String name) {
        return new Capture(name);
    }

    /** The WARNING-and-above records of a logger and its children, from creation until {@link #close}. */
    public static final class Capture implements AutoCloseable {
        private final List<LogRecord> records = new CopyOnWriteArrayList<>();
        private final Logger logger;
        private final Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                if (r.getLevel().intValue() >= Level.WARNING.intValue()) {
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

        private Capture(String name) {
            logger = Logger.getLogger(name);
            logger.addHandler(handler);
        }

        public List<LogRecord> records() {
            return List.copyOf(records);
        }

        /** Waits until a record's message contains {@code text}; false if none did within the timeout. */
        public boolean await(String text, java.time.Duration timeout) throws InterruptedException {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (records.stream().noneMatch(r -> r.getMessage().contains(text))) {
                if (System.nanoTime() > deadline) {
                    return false;
                }
                Thread.sleep(10);
            }
            return true;
        }

        @Override
        public void close() {
            logger.removeHandler(handler);
        }
    }
}
