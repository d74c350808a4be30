package io.stockade.proxy.testing;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.LogRecord;

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
        try (LogLines capture = capture(name)) {
            body.run();
            return capture.records();
        }
    }

    /** The messages of {@link #during}. */
    public static List<String> messages(Class<?> source, ThrowingRunnable body) throws Exception {
        return during(source, body).stream().map(LogRecord::getMessage).toList();
    }

    /** A capture of WARNING and above that stays open until closed, for records logged in the background. */
    public static LogLines capture(String name) {
        return new LogLines(name, Level.WARNING);
    }
}
