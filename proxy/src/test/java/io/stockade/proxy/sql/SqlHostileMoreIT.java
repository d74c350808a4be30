package io.stockade.proxy.sql;

import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

import io.stockade.proxy.StockadeServer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The database's fence against a stale client that picks its own isolation, row-level security or a key's other
 * spelling (a hostile review of the listener, 2026-12-06): each test's write landed before the fix its comment names,
 * and each checks what reached the table and that the fence did not move.
 */
class SqlHostileMoreIT {
    @TempDir
    static Path dir;
    static SqlDatabase db;
    static StockadeServer proxy;
    static int port;

    @BeforeAll
    static void start() throws Exception {
        db = SqlDatabase.create(dir);
        db.execute("CREATE TABLE queue (id int PRIMARY KEY, v text); CREATE TABLE tenants (id int PRIMARY KEY,"
                + " v text); CREATE TABLE floored (id int PRIMARY KEY, v text);"
                + " CREATE TABLE prices (k numeric PRIMARY KEY, v text);"
                + " GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON queue, tenants, floored, prices TO "
                + db.app + ";"
                // row-level security, as a multi-tenant application uses it (docs/sql.md keeps the client's own role
                // for it): the application's role sees and writes every row, no policy names anyone else
                + " ALTER TABLE tenants ENABLE ROW LEVEL SECURITY;"
                + " CREATE POLICY app_rows ON tenants TO " + db.app + " USING (true) WITH CHECK (true)");
        Path config = db.policyFileWith("hostile-more.yaml", "queue", "queue/{id}", "tenants", "tenants/{id}",
                "floored", "floored/{id}", "prices", "prices/{k}");
        // a short bound on a client's startup, for the test of a client that sends none
        Files.writeString(config, Files.readString(config).replace("listen: {host: 127.0.0.1, port: 0}",
                "listen: {host: 127.0.0.1, port: 0, startup-timeout: 2s}"));
        proxy = SqlDatabase.installAndStart(config);
        port = proxy.sql().port();
    }

    @AfterAll
    static void stop() throws Exception {
        SqlDatabase.stop(proxy, db);
    }

    static Connection jdbc(Long token, String more) throws SQLException {
        return db.through(port, token, more);
    }

    static List<String> rows(String sql) throws SQLException {
        return db.column(sql);
    }

    /**
     * TRUNCATE is not MVCC-safe: it removes every row of the table, also rows committed after the truncating
     * transaction's snapshot, and under REPEATABLE READ the BEFORE TRUNCATE trigger read the scopes to check with
     * that snapshot. A zombie (token 5) that read before the new holder (token 6) inserted its row, and truncated
     * after, never had the holder's scope checked: the holder's row was gone, the fence still said 6. Now a TRUNCATE
     * of a fenced table with a token is refused at any isolation but READ COMMITTED (0A000, with the reason).
     */
    @Test
    void aRepeatableReadTruncateRemovesANewerHoldersRowUnchecked() throws Exception {
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            zombie.setAutoCommit(false);
            zombie.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            z.executeQuery("SELECT count(*) FROM queue").close(); // the snapshot: the table is empty
            try (Connection holder = jdbc(6L, ""); Statement h = holder.createStatement()) {
                h.executeUpdate("INSERT INTO queue VALUES (2, 'h6')");
            }
            assertEquals(6L, db.fence("queue/2"));
            try {
                z.execute("TRUNCATE queue");
                zombie.commit();
            } catch (SQLException e) {
                refused = e;
            }
        }
        assertEquals(List.of("h6"), rows("SELECT v FROM queue WHERE id = 2"),
                "the zombie's TRUNCATE with token 5 removed queue/2, whose highest is 6");
        assertEquals(6L, db.fence("queue/2"));
        assertTrue(refused != null && "0A000".equals(refused.getSQLState())
                && refused.getMessage().contains("REPEATABLE READ"), String.valueOf(refused));
    }

    /**
     * The TRUNCATE check reads the table's rows as the fence role (SECURITY DEFINER), and row-level security applied
     * to that role: on a table with RLS whose policies name only the application's role, the check saw no row at
     * all, and TRUNCATE itself ignores RLS, so a zombie's stale TRUNCATE emptied the table unchecked. Now the check
     * reads with row_security off, and a policy that would hide rows from it refuses the TRUNCATE (42501, saying
     * why and that BYPASSRLS for the fence role lets it check).
     */
    @Test
    void aTruncateOfATableWithRowLevelSecurityIsNotChecked() throws Exception {
        try (Connection holder = jdbc(6L, ""); Statement h = holder.createStatement()) {
            h.executeUpdate("INSERT INTO tenants VALUES (1, 'h6')");
        }
        assertEquals(6L, db.fence("tenants/1"));
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            z.execute("TRUNCATE tenants");
        } catch (SQLException e) {
            refused = e;
        }
        assertEquals(List.of("h6"), rows("SELECT v FROM tenants WHERE id = 1"),
                "the zombie's TRUNCATE with token 5 removed tenants/1, whose highest is 6");
        assertEquals(6L, db.fence("tenants/1"));
        assertTrue(refused != null && "42501".equals(refused.getSQLState())
                && refused.getMessage().contains("row-level security"), String.valueOf(refused));
    }

    /**
     * admit() reads the floors with the writing transaction's snapshot; LOCK TABLE ... ROW EXCLUSIVE waits out a
     * floor being raised, but under REPEATABLE READ the snapshot was taken at the transaction's first statement,
     * before the lock. A zombie (token 5) that read before an operator raised a floor (prefix floored/, 50) and
     * wrote after it did not see the floor: its write landed and its stale token became the scope's fence row. Now
     * every raise rewrites stockade_floor_epoch and such a transaction locks that row first: 40001, as for a scope
     * raised after its snapshot (a retry sees the floor).
     */
    @Test
    void aRepeatableReadWriteDoesNotSeeAFloorRaisedBeforeIt() throws Exception {
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            zombie.setAutoCommit(false);
            zombie.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            z.executeQuery("SELECT count(*) FROM floored").close(); // the snapshot
            try (Connection admin = db.admin(); Statement a = admin.createStatement()) {
                a.execute("SET ROLE " + db.fenceRole);
                a.execute("SET search_path = stockade");
                a.execute("SELECT stockade_raise_floor('floored/', 50)");
            }
            assertEquals(List.of("50"), rows("SELECT token FROM stockade.stockade_floors WHERE prefix = 'floored/'"));
            try {
                z.executeUpdate("INSERT INTO floored VALUES (1, 'z5')");
                zombie.commit();
            } catch (SQLException e) {
                refused = e;
            }
        }
        assertEquals(List.of(), rows("SELECT v FROM floored WHERE id = 1"),
                "the zombie's INSERT with token 5 landed under the floor 50 committed before it");
        assertEquals(null, db.fence("floored/1"), "the zombie's stale token became the scope's fence row");
        assertTrue(refused != null && "40001".equals(refused.getSQLState()), String.valueOf(refused));
        // the retry a REPEATABLE READ client makes sees the floor
        SQLException again = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            zombie.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            z.executeUpdate("INSERT INTO floored VALUES (1, 'z5')");
        } catch (SQLException e) {
            again = e;
        }
        assertTrue(again != null && "SF409".equals(again.getSQLState()), String.valueOf(again));
        assertEquals(List.of(), rows("SELECT v FROM floored WHERE id = 1"));
    }

    /**
     * The row trigger checked an UPDATE's new scope only when a scope column IS DISTINCT FROM its old value, but the
     * scope is the column's text: numeric 1.0 and 1.00 are equal values with two texts. A holder (token 6) that
     * wrote its row's key back as 1.00 (an ORM's BigDecimal of another scale) moved the row from scope
     * 'prices/1.0' (raised to 6) to 'prices/1.00', checked by nobody; a zombie (token 5) then updated the row, its
     * old scope 'prices/1.00' had no fence row, and its stale write landed. Now the scopes' texts are compared.
     */
    @Test
    void anUpdateToAnEqualValueOfAnotherTextMovesTheRowToAnUncheckedScope() throws Exception {
        try (Connection holder = jdbc(6L, ""); Statement h = holder.createStatement()) {
            h.executeUpdate("INSERT INTO prices VALUES (1.0, 'h6')");
            h.executeUpdate("UPDATE prices SET k = 1.00, v = 'h6 again' WHERE k = 1");
        }
        assertEquals(6L, db.fence("prices/1.0"));
        assertEquals(6L, db.fence("prices/1.00"), "the holder's UPDATE moved its row to a scope it did not raise");
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            z.executeUpdate("UPDATE prices SET v = 'z5' WHERE k = 1");
        } catch (SQLException e) {
            refused = e;
        }
        assertEquals(List.of("h6 again"), rows("SELECT v FROM prices WHERE k = 1"),
                "the zombie's UPDATE with token 5 landed on the holder's row (scope now 'prices/1.00', fence "
                        + db.fence("prices/1.00") + ")");
        assertTrue(refused != null && "SF409".equals(refused.getSQLState()), String.valueOf(refused));
        assertEquals(6L, db.fence("prices/1.00"));
    }

    /**
     * The listener read the startup packet with no deadline: a client that connected and sent nothing (or part of a
     * packet, or stalled a TLS handshake) held its socket and thread for ever, before any authentication, and enough
     * of them could exhaust the listener's file descriptors. Now a client not authenticated within
     * {@code sql.listen.startup-timeout} (2 s here, 60 s by default as PostgreSQL's authentication_timeout) is
     * disconnected; an authenticated session then idles as long as it likes.
     */
    @Test
    void aClientThatSendsNoStartupPacketIsDisconnected() throws Exception {
        try (Socket silent = new Socket("127.0.0.1", port)) {
            silent.getOutputStream().write(new byte[] {0, 0, 0}); // three bytes of a length, then nothing
            silent.getOutputStream().flush();
            silent.setSoTimeout(30_000);
            long started = System.nanoTime();
            int read;
            try {
                read = silent.getInputStream().read();
            } catch (SocketTimeoutException e) {
                read = -2;
            }
            long ms = (System.nanoTime() - started) / 1_000_000;
            assertEquals(-1, read, "30 s after connecting without a startup packet, the listener still holds the"
                    + " connection");
            assertTrue(ms >= 1_500, "closed after " + ms + " ms, before the startup timeout");
        }
        // an authenticated session outlives the startup timeout
        try (Connection idle = jdbc(7L, ""); Statement s = idle.createStatement()) {
            Thread.sleep(3_000); // past the 2 s startup timeout: the bound is on the startup, not on the session
            try (var r = s.executeQuery("SELECT 1")) {
                assertTrue(r.next());
            }
        }
    }

    /**
     * A refusal in the extended protocol is raised by a simple Query (a DO block) sent in place of the refused
     * Parse, and its ReadyForQuery is kept from the client. When an earlier statement of the same pipeline (before
     * its Sync) had already failed, the server ignored every message up to the Sync, that Query too, and answered no
     * ReadyForQuery for it: the listener swallowed the one the Sync asked for instead, and pgjdbc's batch (a failing
     * statement, then one the listener refuses) waited for ever. Now the listener tells the refusal's answer by its
     * error (its SQLSTATE and the refusal's constraint name) and passes the Sync's on.
     */
    @Test
    void aRefusalAfterAnErrorInThePipelineDoesNotHangTheClient() throws Exception {
        try (Connection c = jdbc(7L, "&socketTimeout=10"); Statement s = c.createStatement()) {
            s.addBatch("INSERT INTO queue VALUES (1 / 0, 'x')");
            s.addBatch("SELECT current_setting('stockade.fencing_token')");
            long started = System.nanoTime();
            SQLException e = assertThrows(SQLException.class, s::executeBatch);
            long ms = (System.nanoTime() - started) / 1_000_000;
            assertTrue(ms < 8_000 && !c.isClosed(), "the batch ended after " + ms + " ms, the connection "
                    + (c.isClosed() ? "closed" : "open") + ": " + e);
            // the session goes on, and its next refusal (no failure before it) is answered as before
            try (var r = s.executeQuery("SELECT 42")) {
                assertTrue(r.next());
                assertEquals(42, r.getInt(1));
            }
            SQLException refused = assertThrows(SQLException.class,
                    () -> s.executeQuery("SELECT current_setting('stockade.fencing_token')"));
            assertEquals("SF405", refused.getSQLState(), refused.toString());
            try (var r = s.executeQuery("SELECT 43")) {
                assertTrue(r.next());
                assertEquals(43, r.getInt(1));
            }
        }
        assertEquals(List.of(), rows("SELECT v FROM queue WHERE v = 'x'"));
    }
}
