package io.stockade.proxy.backend.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import io.stockade.policy.Datasource;
import io.stockade.proxy.postgres.PostgresPools;
import io.stockade.testing.Pg;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The backend's fence function ({@code stockade_fence}, stockade-fences.sql) on its own, in the transactions the
 * backend opens: an equal token the policy accepts leaves the scope's row as it is (no new row version) yet holds
 * it until its transaction ends, so a newer holder's raise waits for the older holder's write to commit and the
 * older holder is stale after it; two first writes of a new scope race to one row, the second deciding on the
 * first's token once the first ends. A transaction's wait is read from {@code pg_stat_activity} (waiting on a
 * lock), never guessed from a sleep.
 */
class FenceFunctionIT {
    private static final String FENCE = "SELECT stockade_fence(?, ?, ?, ?)";
    private static final long NO_BOUND = Long.MAX_VALUE;

    @Test
    void anEqualTokenLeavesTheRowAsItIsAndAHigherOneRewritesIt() throws Exception {
        try (Pg pg = fenced(); Connection c = pg.connect()) {
            assertEquals(5, fence(c, "s", 5, true, NO_BOUND));
            String first = rowVersion(pg, "s");
            assertEquals(5, fence(c, "s", 5, true, NO_BOUND));
            assertEquals(first, rowVersion(pg, "s"), "an equal token wrote a new version of the fence row");

            assertRefused("SF409", "5", () -> fence(c, "s", 5, false, NO_BOUND));
            assertRefused("SF409", "5", () -> fence(c, "s", 4, true, NO_BOUND));
            assertRefused("SF422", "5", () -> fence(c, "s", 16, true, 10));
            assertEquals(first, rowVersion(pg, "s"), "a refused token changed the fence row");

            assertEquals(15, fence(c, "s", 15, true, 10));
            assertEquals(15, pg.fence("s").orElseThrow());
            assertNotEquals(first, rowVersion(pg, "s"));

            pg.execute("UPDATE stockade_fences SET version = 'v1' WHERE scope = 's'");
            assertEquals(15, fence(c, "s", 15, true, NO_BOUND));
            assertEquals("v1", pg.single("SELECT version FROM stockade_fences WHERE scope = 's'").orElseThrow(),
                    "an equal token cleared the recorded version");
            assertEquals(16, fence(c, "s", 16, true, NO_BOUND));
            assertTrue(pg.single("SELECT version FROM stockade_fences WHERE scope = 's'").isEmpty(),
                    "a raise kept the version recorded for the token before");
        }
    }

    @Test
    void anEqualTokenHoldsTheScopeUntilItsWriteCommits() throws Exception {
        try (Pg pg = fenced(); Connection older = pg.connect(); Connection newer = pg.connect();
             Connection late = pg.connect()) {
            fence(older, "s", 5, true, NO_BOUND);
            older.setAutoCommit(false);
            assertEquals(5, fence(older, "s", 5, true, NO_BOUND));

            newer.setAutoCommit(false);
            int newerPid = pid(newer);
            CompletableFuture<Long> raise = CompletableFuture.supplyAsync(() -> fenceUnchecked(newer, "s", 6));
            awaitLockWait(pg, newerPid, raise);
            assertFalse(raise.isDone(), "the raise did not wait for the equal-token transaction");
            assertEquals(5, pg.fence("s").orElseThrow());

            older.commit();
            assertEquals(6, raise.get(10, TimeUnit.SECONDS));
            newer.commit();
            assertRefused("SF409", "6", () -> fence(late, "s", 5, true, NO_BOUND));
        }
    }

    @Test
    void twoFirstWritesOfANewScopeRaceToOneRow() throws Exception {
        try (Pg pg = fenced(); Connection first = pg.connect(); Connection second = pg.connect()) {
            first.setAutoCommit(false);
            second.setAutoCommit(false);
            int secondPid = pid(second); // read before a call holds the connection

            assertEquals(5, fence(first, "n", 5, true, NO_BOUND));
            CompletableFuture<Long> lower = CompletableFuture.supplyAsync(() -> fenceUnchecked(second, "n", 4));
            awaitLockWait(pg, secondPid, lower);
            first.commit();
            ExecutionException failed = assertThrows(ExecutionException.class,
                    () -> lower.get(10, TimeUnit.SECONDS));
            SQLException stale = assertInstanceOf(SQLException.class, failed.getCause());
            assertEquals("SF409", stale.getSQLState(), stale.getMessage());
            assertTrue(stale.getMessage().contains("Detail: 5"), stale.getMessage());
            second.rollback();

            assertEquals(5, fence(first, "m", 5, true, NO_BOUND));
            CompletableFuture<Long> equal = CompletableFuture.supplyAsync(() -> fenceUnchecked(second, "m", 5));
            awaitLockWait(pg, secondPid, equal);
            first.commit();
            assertEquals(5, equal.get(10, TimeUnit.SECONDS));
            second.commit();

            assertEquals(9, fence(first, "r", 9, true, NO_BOUND));
            CompletableFuture<Long> afterRollback = CompletableFuture.supplyAsync(
                    () -> fenceUnchecked(second, "r", 3));
            awaitLockWait(pg, secondPid, afterRollback);
            first.rollback();
            assertEquals(3, afterRollback.get(10, TimeUnit.SECONDS), "a rolled-back first write fenced the scope");
            second.commit();
            assertEquals(3, pg.fence("r").orElseThrow());
        }
    }

    /** A schema with the fence table and functions, applied by the proxy's own start-up path. */
    private static Pg fenced() throws Exception {
        Pg pg = Pg.create("");
        try (HikariDataSource pool = PostgresPools.open(new Datasource(pg.url(), "postgres", null, null, 1,
                Datasource.DEFAULT_STATEMENT_TIMEOUT, Datasource.DEFAULT_CONNECT_TIMEOUT), "fence-function-test")) {
            PostgresPools.prepare(pool, true, pg.url());
        }
        return pg;
    }

    private static long fence(Connection c, String scope, long token, boolean acceptEqual, long maxAdvance)
            throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(FENCE)) {
            ps.setString(1, scope);
            ps.setLong(2, token);
            ps.setBoolean(3, acceptEqual);
            ps.setLong(4, maxAdvance);
            try (ResultSet r = ps.executeQuery()) {
                r.next();
                return r.getLong(1);
            }
        }
    }

    private static long fenceUnchecked(Connection c, String scope, long token) {
        try {
            return fence(c, scope, token, true, NO_BOUND);
        } catch (SQLException e) {
            throw new CompletionException(e);
        }
    }

    private interface Call {
        void run() throws Exception;
    }

    private static void assertRefused(String sqlState, String highest, Call call) {
        SQLException e = assertThrows(SQLException.class, call::run);
        assertEquals(sqlState, e.getSQLState(), e.getMessage());
        assertTrue(e.getMessage().contains("Detail: " + highest), e.getMessage());
    }

    /** The row's physical version: a new one for every UPDATE, the same when the row was only locked. */
    private static String rowVersion(Pg pg, String scope) throws SQLException {
        return pg.single("SELECT ctid::text || '/' || xmin::text FROM stockade_fences WHERE scope = ?", scope)
                .orElseThrow();
    }

    private static int pid(Connection c) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement("SELECT pg_backend_pid()");
             ResultSet r = ps.executeQuery()) {
            r.next();
            return r.getInt(1);
        }
    }

    /** Until the session {@code pid} waits on a lock (pg_stat_activity), failing if its call ended first. */
    private static void awaitLockWait(Pg pg, int pid, CompletableFuture<?> call) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            if (call.isDone()) {
                throw new AssertionError("the call ended without waiting for the other transaction: " + call);
            }
            if (pg.single("SELECT wait_event_type FROM pg_stat_activity WHERE pid = ?", pid)
                    .filter("Lock"::equals).isPresent()) {
                return;
            }
            Thread.sleep(2);
        }
        throw new AssertionError("session " + pid + " never waited on a lock");
    }
}
