package io.stockade.proxy.log;

import io.stockade.proxy.metrics.ProxyMetrics.Outcome;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class DecisionLogTest {
    @Test
    void millisecondsHaveThreeDecimals() {
        StringBuilder b = new StringBuilder();
        DecisionLog.appendMillis(b, 1_234_567L);
        assertEquals("1.234", b.toString());
        b.setLength(0);
        DecisionLog.appendMillis(b, 5_000L);
        assertEquals("0.005", b.toString());
        b.setLength(0);
        DecisionLog.appendMillis(b, 2_000_050_000L);
        assertEquals("2000.050", b.toString());
    }

    @Test
    void aDecisionLineIsOneJsonObjectWithEveryField() {
        Decision d = new Decision(0, "PUT", "/files/a\"b").policy("files", "file", "files/a\"b").token(4).highest(5)
                .holder("worker-1").outcome(Outcome.STALE, "token 4 is below 5").status(409);
        String line = DecisionLog.json("decision", d, 1_500_000L);
        assertTrue(line.startsWith("{\"ts\":\"") && line.endsWith("}"), line);
        assertTrue(line.contains("\"path\":\"/files/a\\\"b\""), "quotes are escaped: " + line);
        assertTrue(line.contains("\"token\":4,\"highest\":5,\"holder\":\"worker-1\",\"outcome\":\"stale\","
                + "\"status\":409,\"latency_ms\":1.500,\"reason\":\"token 4 is below 5\""), line);
    }

    /** Hostile-load report: every refusal was logged twice, a decision line and a refusal line. */
    @Test
    void aRefusalIsOneLineWhetherOrNotThePerRequestLinesAreOn() {
        java.util.List<String> lines = new java.util.concurrent.CopyOnWriteArrayList<>();
        java.util.logging.Handler capture = new java.util.logging.Handler() {
            @Override
            public void publish(java.util.logging.LogRecord r) {
                lines.add(r.getMessage());
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        java.util.List<java.util.logging.Logger> loggers = DecisionLog.loggers();
        java.util.logging.Level decisionLevel = loggers.getFirst().getLevel();
        loggers.forEach(l -> l.addHandler(capture));
        try {
            Decision refused = new Decision(0, "PUT", "/a").policy("p", "file", "a").token(1)
                    .outcome(Outcome.STALE, "stale").status(409);
            DecisionLog.write(refused, 1);
            assertEquals(1, lines.size(), lines.toString());
            assertTrue(lines.getFirst().contains("\"event\":\"decision\""), lines.toString());
            lines.clear();
            loggers.getFirst().setLevel(java.util.logging.Level.OFF); // stockade.decision.level=OFF
            DecisionLog.write(refused, 1);
            DecisionLog.write(new Decision(0, "PUT", "/a").policy("p", "file", "a").outcome(Outcome.ACCEPTED, null)
                    .status(201), 1);
            assertEquals(1, lines.size(), "the refusal, audited; the accepted write, not: " + lines);
            assertTrue(lines.getFirst().contains("\"event\":\"refusal\""), lines.toString());
        } finally {
            loggers.forEach(l -> l.removeHandler(capture));
            loggers.getFirst().setLevel(decisionLevel);
        }
    }
}
