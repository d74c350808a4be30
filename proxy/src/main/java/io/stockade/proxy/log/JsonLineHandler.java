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
        for (String name : new String[] {DecisionLog.DECISIONS, DecisionLog.AUDIT}) {
            Logger logger = Logger.getLogger(name);
            logger.setUseParentHandlers(false);
            logger.addHandler(new JsonLineHandler());
        }
    }
}
