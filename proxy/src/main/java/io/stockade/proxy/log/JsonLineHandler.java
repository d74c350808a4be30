package io.stockade.proxy.log;

import java.util.logging.Formatter;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import java.util.logging.StreamHandler;

/** Writes each record's message, already a JSON object, as one line on standard output. */
public final class JsonLineHandler extends StreamHandler {
    public JsonLineHandler() {
        super(System.out, new Formatter() {
            @Override
            public String format(LogRecord record) {
                return record.getMessage() + System.lineSeparator();
            }
        });
    }

    @Override
    public synchronized void publish(LogRecord record) {
        super.publish(record);
        flush();
    }

    /** Routes the decision and audit loggers to standard output as JSON lines (and not to the text log). */
    public static void install() {
        // The loggers must be DecisionLog's own (strongly held) instances: JUL holds loggers weakly, and a
        // handler added to a logger nobody references is lost when that logger is collected.
        for (Logger logger : DecisionLog.loggers()) {
            logger.setUseParentHandlers(false);
            logger.addHandler(new JsonLineHandler());
        }
    }
}
