package io.stockade.proxy.backend.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;

import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The watchdog against a real PostgreSQL: a transaction past its limit loses its connection, one in time does not. */
class TransactionWatchdogTest {

    @Test
    void aTransactionPastItsLimitHasItsConnectionAbortedAndOneInTimeKeepsIt() throws Exception {
        try (Pg pg = Pg.create("SELECT 1");
             TransactionWatchdog watchdog = new TransactionWatchdog("test-watchdog");
             Connection slow = pg.connect();
             Connection quick = pg.connect()) {
            long start = System.nanoTime();
            try (var watch = watchdog.watch(slow, Duration.ofMillis(300));
                 Statement s = slow.createStatement()) {
                SQLException e = assertThrows(SQLException.class, () -> s.execute("SELECT pg_sleep(10)"));
                assertTrue(e.getSQLState() == null || e.getSQLState().startsWith("08"), e.getSQLState() + " " + e);
            }
            long ms = (System.nanoTime() - start) / 1_000_000;
            assertTrue(ms >= 300 && ms < 3_000, "aborted after " + ms + " ms (limit 300 ms, checked every "
                    + TransactionWatchdog.PERIOD.toMillis() + " ms)");
            assertTrue(slow.isClosed(), "the aborted connection is closed");

            try (var watch = watchdog.watch(quick, Duration.ofMillis(300));
                 Statement s = quick.createStatement()) {
                s.execute("SELECT 1");
            }
            Thread.sleep(TransactionWatchdog.PERIOD.multipliedBy(3)); // past the limit: the closed watch is gone
            assertTrue(quick.isValid(2), "a transaction that ended in time keeps its connection");
            assertEquals(0, watchdog.running());
        }
    }
}
