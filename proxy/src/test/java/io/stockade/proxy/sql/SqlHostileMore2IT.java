package io.stockade.proxy.sql;

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
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A second hostile review of the SQL listener and fence (after 5e74284, 3c3fef6, af9e8cf, which SqlHostileMoreIT
 * covers): attacks on those fixes and on areas not tried before. Each test checks what reached the table and where
 * the fence stands; the three whose comments say "was" failed before the fix that followed the review.
 */
class SqlHostileMore2IT {
    @TempDir
    static Path dir;
    static SqlDatabase db;
    static StockadeServer proxy;
    static int port;

    @BeforeAll
    static void start() throws Exception {
        db = SqlDatabase.create(dir);
        db.execute("CREATE TABLE queue (id int PRIMARY KEY, v text);"
                + " CREATE TABLE floored (id int PRIMARY KEY, v text);"
                + " CREATE TABLE prices (k numeric PRIMARY KEY, v text);"
                + " CREATE TABLE epoch (id int PRIMARY KEY, v text); CREATE TABLE cur (id int PRIMARY KEY, v text);"
                + " GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON queue, floored, prices, epoch, cur TO "
                + db.app);
        proxy = SqlDatabase.installAndStart(db.policyFileWith("hostile-more2.yaml", "queue", "queue/{id}", "floored",
                "floored/{id}", "prices", "prices/{k}", "epoch", "epoch/{id}", "cur", "cur/{id}"));
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

    static SQLException attempt(Long token, String... sql) {
        return attemptWith(token, "", sql);
    }

    static SQLException attemptWith(Long token, String more, String... sql) {
        try (Connection c = jdbc(token, more); Statement s = c.createStatement()) {
            for (String q : sql) {
                s.execute(q);
            }
            return null;
        } catch (SQLException e) {
            return e;
        }
    }

    /** SERIALIZABLE instead of REPEATABLE READ: the TRUNCATE check refuses any isolation but READ COMMITTED. */
    @Test
    void aSerializableTruncateInADoBlockWithCascadeIsRefused() throws Exception {
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            zombie.setAutoCommit(false);
            zombie.setTransactionIsolation(Connection.TRANSACTION_SERIALIZABLE);
            z.executeQuery("SELECT count(*) FROM events").close();
            try (Connection holder = jdbc(6L, ""); Statement h = holder.createStatement()) {
                h.executeUpdate("INSERT INTO events VALUES (9, '2024-05-01', 'h6')");
            }
            try {
                z.execute("DO $$ BEGIN TRUNCATE ONLY events_2024 RESTART IDENTITY CASCADE; END $$");
                zombie.commit();
            } catch (SQLException e) {
                refused = e;
            }
        }
        assertEquals(List.of("h6"), rows("SELECT payload FROM events WHERE id = 9"));
        assertTrue(refused != null && "0A000".equals(refused.getSQLState()), String.valueOf(refused));
    }

    /** Changing the isolation after the snapshot: PostgreSQL itself refuses it. */
    @Test
    void anIsolationChangeAfterTheFirstStatementIsRefused() throws Exception {
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            zombie.setAutoCommit(false);
            zombie.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            z.executeQuery("SELECT count(*) FROM queue").close();
            try (Connection holder = jdbc(6L, ""); Statement h = holder.createStatement()) {
                h.executeUpdate("INSERT INTO queue VALUES (3, 'h6')");
            }
            try {
                z.execute("SELECT set_config('transaction_isolation', 'read committed', true)");
                z.execute("TRUNCATE queue");
                zombie.commit();
            } catch (SQLException e) {
                refused = e;
            }
        }
        assertEquals(List.of("h6"), rows("SELECT v FROM queue WHERE id = 3"));
        assertTrue(refused != null, "no error");
    }

    /**
     * The REPEATABLE READ floor check locks stockade_floor_epoch's row FOR SHARE; when that row was missing (deleted
     * by a member of the fence role, a partial restore of the fence tables), the lock found nothing and the check
     * passed silently: a floor raised after the snapshot was missed and the stale write landed. Now a missing row
     * refuses such a write (55000, naming sql install), and a floor raise puts the row back.
     */
    @Test
    void aMissingEpochRowLetsARepeatableReadWriteMissAFloor() throws Exception {
        db.execute("DELETE FROM stockade.stockade_floor_epoch");
        SQLException refused = null;
        try (Connection zombie = jdbc(5L, ""); Statement z = zombie.createStatement()) {
            zombie.setAutoCommit(false);
            zombie.setTransactionIsolation(Connection.TRANSACTION_REPEATABLE_READ);
            z.executeQuery("SELECT count(*) FROM epoch").close();
            try (Connection admin = db.admin(); Statement a = admin.createStatement()) {
                a.execute("SET ROLE " + db.fenceRole);
                a.execute("SET search_path = stockade");
                a.execute("SELECT stockade_raise_floor('epoch/', 50)");
            }
            try {
                z.executeUpdate("INSERT INTO epoch VALUES (1, 'z5')");
                zombie.commit();
            } catch (SQLException e) {
                refused = e;
            }
        } finally {
            db.execute("INSERT INTO stockade.stockade_floor_epoch DEFAULT VALUES ON CONFLICT DO NOTHING");
        }
        assertEquals(List.of(), rows("SELECT v FROM epoch WHERE id = 1"),
                "the zombie's INSERT with token 5 landed under the floor 50 (epoch row missing); fence row "
                        + db.fence("epoch/1"));
        assertEquals(null, db.fence("epoch/1"));
        assertTrue(refused != null && "55000".equals(refused.getSQLState()), String.valueOf(refused));
        assertEquals(List.of("1"), rows("SELECT count(*) FROM stockade.stockade_floor_epoch"),
                "the floor raise put the epoch row back");
    }

    /** ON CONFLICT DO UPDATE that writes the key back in another text: the old scope is checked first. */
    @Test
    void anUpsertMovingTheKeyTextIsChecked() throws Exception {
        assertEquals(null, attempt(6L, "INSERT INTO prices VALUES (1.0, 'h6')"));
        SQLException refused = attempt(5L,
                "INSERT INTO prices VALUES (1.000, 'z5') ON CONFLICT (k) DO UPDATE SET k = EXCLUDED.k, v = 'z5'");
        assertEquals(List.of("1.0:h6"), rows("SELECT k || ':' || v FROM prices"));
        assertTrue(refused != null && "SF409".equals(refused.getSQLState()), String.valueOf(refused));
        assertEquals(null, db.fence("prices/1.000"));
    }

    /** Two statements in one simple Query: the first sets a stale token, the second writes. */
    @Test
    void aSetThenAWriteInOneQueryIsChecked() throws Exception {
        assertEquals(null, attempt(6L, "INSERT INTO queue VALUES (20, 'h6')"));
        SQLException refused = attemptWith(null, "&preferQueryMode=simple",
                "SET stockade.fencing_token = 5; UPDATE queue SET v = 'z5' WHERE id = 20");
        assertEquals(List.of("h6"), rows("SELECT v FROM queue WHERE id = 20"));
        assertTrue(refused != null && "SF409".equals(refused.getSQLState()), String.valueOf(refused));
        // RESET ALL inside the transaction: no token, refused as missing
        SQLException missing = attemptWith(5L, "&preferQueryMode=simple",
                "BEGIN; RESET ALL; UPDATE queue SET v = 'z5' WHERE id = 20; COMMIT");
        assertEquals(List.of("h6"), rows("SELECT v FROM queue WHERE id = 20"));
        assertTrue(missing != null && "SF428".equals(missing.getSQLState()), String.valueOf(missing));
    }

    /** A cursor's UPDATE ... WHERE CURRENT OF fires the row trigger. */
    @Test
    void anUpdateWhereCurrentOfIsChecked() throws Exception {
        assertEquals(null, attempt(6L, "INSERT INTO cur VALUES (1, 'h6')"));
        SQLException refused = attemptWith(5L, "&preferQueryMode=simple",
                "BEGIN; DECLARE c CURSOR FOR SELECT * FROM cur FOR UPDATE; FETCH c;"
                        + " UPDATE cur SET id = 2, v = 'z5' WHERE CURRENT OF c; COMMIT");
        assertEquals(List.of("1:h6"), rows("SELECT id || ':' || v FROM cur"));
        assertTrue(refused != null && "SF409".equals(refused.getSQLState()), String.valueOf(refused));
    }

    /**
     * A client that raised an error of its own with the refusal's SQLSTATE and constraint name (RAISE ... USING
     * CONSTRAINT = 'stockade_refusal') just before a statement the listener refuses, in one pipeline: the listener
     * took the forged error for its refusal's answer and kept back the Sync's ReadyForQuery, and the client waited
     * until its socket timeout (only its own session). Now each refusal's constraint name ends in a random number.
     */
    @Test
    void aForgedRefusalErrorDoesNotPassForTheListenersOwn() throws Exception {
        assertEquals(null, attempt(6L, "INSERT INTO queue VALUES (30, 'h6')"));
        long ms;
        Exception e = null;
        try (Connection c = jdbc(5L, "&socketTimeout=5"); Statement s = c.createStatement()) {
            s.addBatch("DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = 'SF405', CONSTRAINT = 'stockade_refusal_0',"
                    + " MESSAGE = 'forged'; END $$");
            s.addBatch("SELECT current_setting('stockade.fencing_token')");
            long started = System.nanoTime();
            try {
                s.executeBatch();
            } catch (SQLException x) {
                e = x;
            }
            ms = (System.nanoTime() - started) / 1_000_000;
        }
        assertEquals(List.of("h6"), rows("SELECT v FROM queue WHERE id = 30"));
        assertEquals(6L, db.fence("queue/30"));
        assertTrue(ms < 4_000, "the batch ended after " + ms + " ms: " + e);
    }

    /**
     * Not a landing, a false refusal: PostgreSQL runs READ UNCOMMITTED as READ COMMITTED, but the TRUNCATE check
     * compared current_setting('transaction_isolation') with 'read committed' alone and refused an honest holder's
     * TRUNCATE at READ UNCOMMITTED (0A000).
     */
    @Test
    void aReadUncommittedTruncateIsTakenAsReadCommitted() throws Exception {
        assertEquals(null, attempt(6L, "INSERT INTO floored VALUES (40, 'h6')"));
        SQLException refused = attemptWith(7L, "&preferQueryMode=simple",
                "BEGIN ISOLATION LEVEL READ UNCOMMITTED; TRUNCATE floored; COMMIT");
        assertEquals(null, refused, "the holder's TRUNCATE at READ UNCOMMITTED (= READ COMMITTED) was refused");
        assertEquals(List.of(), rows("SELECT v FROM floored WHERE id = 40"));
    }
}
