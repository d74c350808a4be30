package io.stockade.conformance;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 49: with {@code --lease redis://...} delay, timeout and lost-response were INCONCLUSIVE ("no handoff happened
 * through the proxy"): they fault only the connection to the proxy, and a real lease's watchdog keeps renewing. They
 * run with the suite's counter lease instead, saying so; the others use the lease named.
 */
class ScenarioLeaseTest {
    @Test
    void connectionFaultsRunWithTheCounterAndSaySoTheOthersWithTheLeaseNamed() {
        String redis = "redis:redis://:secret@127.0.0.1:6379";
        for (Scenario s : Scenario.values()) {
            String note = Conformance.counterInstead(s, redis);
            boolean connection = s == Scenario.DELAY || s == Scenario.TIMEOUT || s == Scenario.LOST_RESPONSE;
            assertEquals(connection, s.faultsOnlyTheConnection(), s.id());
            if (connection) {
                assertTrue(note.startsWith("ran with the suite's counter lease, not redis:") && note.contains(s.id())
                        && !note.contains("secret"), note);
            } else {
                assertNull(note, s.id());
            }
            assertNull(Conformance.counterInstead(s, "counter"), s.id());
            assertNull(Conformance.counterInstead(s, "class:com.example.Mine:x"), s.id());
        }
    }
}
