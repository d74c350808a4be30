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
}
