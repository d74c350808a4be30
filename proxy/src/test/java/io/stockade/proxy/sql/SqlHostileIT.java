package io.stockade.proxy.sql;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.StockadeServer;
import io.stockade.testing.PgBouncer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.SqlClients;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The PostgreSQL listener and the database's fence against a hostile client: what could make a stale or unchecked
 * write land in a fenced table (a session setting that moves a row's scope, a partition the install never saw, a
 * transaction pooler sharing one session's token among its clients, startup options the listener does not read), and
 * what could make the listener's answers and log claim more than it knows. Each refusal is checked against what
 * reached the table and the fence row. One database and one proxy for the class (a second one for the pooler).
 */
@RequiresTools({Tools.Tool.PSQL, Tools.Tool.PGBOUNCER})
class SqlHostileIT {
    @TempDir
    static Path dir;
    static SqlDatabase db;
    static StockadeServer proxy;
    static int port;
    static String owner;
    static final List<String> DECISIONS = new CopyOnWriteArrayList<>();
    static final Handler CAPTURE = new Handler() {
        @Override
        public void publish(LogRecord r) {
            if (r.getMessage().contains("\"event\":\"sql-transaction\"")) {
                DECISIONS.add(r.getMessage());
            }
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    };

    @BeforeAll
    static void start() throws Exception {
        db = SqlDatabase.create(dir);
        owner = "own_" + db.app;
        db.execute("CREATE TABLE days (day date PRIMARY KEY, v text); CREATE TABLE readings (at timestamptz PRIMARY"
                + " KEY, v text); CREATE TABLE ratios (r float8 PRIMARY KEY, v text);"
                + " GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON days, readings, ratios TO " + db.app);
        Path config = db.policyFileWith("hostile.yaml", "days", "days/{day}", "readings", "readings/{at}", "ratios",
                "ratios/{r}");
        proxy = SqlDatabase.installAndStart(config);
        port = proxy.sql().port();
        Logger.getLogger("stockade.decision").addHandler(CAPTURE);
    }

    @AfterAll
    static void stop() throws Exception {
        Logger.getLogger("stockade.decision").removeHandler(CAPTURE);
        if (proxy != null) {
            proxy.close();
        }
        if (db != null) {
            db.close();
            try (Connection c = DriverManager.getConnection(SqlDatabase.SERVER + "test?user=postgres");
                 Statement s = c.createStatement()) {
                s.execute("DROP ROLE IF EXISTS " + owner);
            }
        }
    }

    static String url(int listener, Long token, String more) {
        return "jdbc:postgresql://127.0.0.1:" + listener + "/" + db.name + "?user=" + db.app
                + (token == null ? "" : "&options=-c%20stockade.fencing_token=" + token) + more;
    }

    static Connection jdbc(Long token, String more) throws SQLException {
        return DriverManager.getConnection(url(port, token, more));
    }

    static List<String> rows(String sql) throws SQLException {
        return db.column(sql);
    }

    /**
     * psql through the listener, each command a Query of its own in one session, stopping at the first error: its
     * exit code, ':', and what it printed.
     */
    static String psql(long token, String... commands) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(SqlClients.psql().toString(), "-X", "-q", "-v",
                "ON_ERROR_STOP=1", "-d", "host=127.0.0.1 port=" + port + " dbname=" + db.name + " user=" + db.app
                        + " options='-c stockade.fencing_token=" + token + "'"));
        for (String c : commands) {
            cmd.add("-c");
            cmd.add(c);
        }
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().put("PGCONNECT_TIMEOUT", "10");
        Process p = pb.start();
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), cmd + " did not end within 60 s");
        return p.exitValue() + ":" + out;
    }

    /**
     * A row's scope is the text of its columns, and that text follows the session's DateStyle, TimeZone and
     * extra_float_digits: on main a zombie that SET DateStyle = German wrote a holder's date row under a scope nobody
     * had raised ('days/01.06.2024'), and its stale write landed. The trigger functions now pin those settings.
     */
    @Test
    void aSessionSettingCannotMoveARowOutOfItsScope() throws Exception {
        assertEquals("0:", psql(20, "INSERT INTO days VALUES ('2024-06-01', 'h20')",
                "INSERT INTO readings VALUES ('2024-06-01 10:00:00+00', 'h20')",
                "INSERT INTO ratios VALUES (0.1234567890123, 'h20')"));
        for (List<String> zombie : List.of(List.of("SET DateStyle = German", "UPDATE days SET v = 'z5'"),
                List.of("SET TimeZone = 'Asia/Tokyo'", "UPDATE readings SET v = 'z5'"),
                List.of("SET extra_float_digits = -10", "UPDATE ratios SET v = 'z5'"),
                List.of("SET DateStyle = 'SQL, DMY'", "INSERT INTO days VALUES ('2024-06-01', 'z5') ON CONFLICT (day)"
                        + " DO UPDATE SET v = EXCLUDED.v"))) {
            String z = psql(5, zombie.toArray(String[]::new));
            assertTrue(z.contains("stale fencing token 5 for public."), zombie + ": " + z);
        }
        assertEquals(List.of("h20", "h20", "h20"),
                rows("SELECT v FROM days UNION ALL SELECT v FROM readings UNION ALL SELECT v FROM ratios"));
        assertEquals(List.of("days/2024-06-01=20", "ratios/0.1234567890123=20", "readings/2024-06-01 10:00:00+00=20"),
                rows("SELECT scope || '=' || token FROM stockade.stockade_fences"
                        + " WHERE scope ~ '^(days|readings|ratios)/' ORDER BY 1"));
    }

    /**
     * PostgreSQL clones row triggers to a new partition, not statement triggers: on main a partition made after the
     * install had no TRUNCATE trigger, and a zombie's TRUNCATE of the parent through the listener emptied it. The
     * guard (an event trigger) gives it one; a table attached with rows no fence checked is refused, and an owner of
     * the table may attach an empty one (on main it could not: the clone needed EXECUTE on the trigger's function).
     */
    @Test
    void aPartitionMadeAfterTheInstallIsFencedAndOneArrivingWithRowsIsRefused() throws Exception {
        db.execute("CREATE TABLE logs_2030 PARTITION OF logs FOR VALUES FROM ('2030-01-01') TO ('2031-01-01');"
                + " GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON logs_2030 TO " + db.app);
        assertEquals("0:", psql(20, "INSERT INTO logs VALUES (30, '2030-05-01', 'h20')"));
        for (String truncate : List.of("TRUNCATE logs", "TRUNCATE logs_2030")) {
            String z = psql(5, truncate);
            assertTrue(z.contains("stale fencing token 5 for public.logs scope 'logs/30'"), truncate + ": " + z);
        }
        assertEquals(List.of("h20"), rows("SELECT line FROM logs WHERE id = 30"));
        assertEquals(20L, db.fence("logs/30"));

        db.execute("CREATE ROLE " + owner + "; GRANT CREATE ON SCHEMA public TO " + owner + "; ALTER TABLE logs OWNER"
                + " TO " + owner + "; ALTER TABLE logs_2024 OWNER TO " + owner + "; ALTER TABLE logs_2030 OWNER TO "
                + owner);
        try (Connection c = db.admin(); Statement s = c.createStatement()) {
            s.execute("SET ROLE " + owner);
            s.execute("CREATE TABLE logs_2031 (id int, day date, line text);"
                    + " INSERT INTO logs_2031 VALUES (31, '2031-02-02', 'never fenced')");
            SQLException e = assertThrows(SQLException.class, () -> s.execute("ALTER TABLE logs ATTACH PARTITION"
                    + " logs_2031 FOR VALUES FROM ('2031-01-01') TO ('2032-01-01')"));
            assertEquals("SF405", e.getSQLState(), e.getMessage());
            assertTrue(e.getMessage().contains("with rows no fence checked"), e.getMessage());
            s.execute("CREATE TABLE logs_2032 PARTITION OF logs FOR VALUES FROM ('2032-01-01') TO ('2033-01-01')");
        }
        assertEquals(List.of("0"), rows("SELECT count(*) FROM logs WHERE id = 31"));
        assertEquals(List.of("logs_2032:stockade_fence_row:A", "logs_2032:stockade_fence_truncate:A"),
                rows("SELECT tgrelid::regclass::text || ':' || tgname || ':' || tgenabled::text FROM pg_trigger"
                        + " WHERE tgrelid = 'logs_2032'::regclass ORDER BY 1"));
    }

    /**
     * A transaction pooler shares one server session among its clients: on main one client's session SET through
     * PgBouncer (transaction pooling, in front of the listener) held for the next client's transaction, and that
     * client's write without any token landed under it. With sql.session-tokens: refuse a session's token is refused
     * (SF405), SET LOCAL still works, and a client without a token stays refused.
     */
    @Test
    void withATransactionPoolerSessionTokensAreRefusedAndNoneLeaks() throws Exception {
        assertEquals("0:", psql(60, "INSERT INTO jobs VALUES (1600, 'h60')"));
        Path config = db.policyFile("pooled.yaml", 5432, "  session-tokens: refuse\n");
        try (StockadeServer pooled = StockadeServer.start(PolicyLoader.load(config));
             PgBouncer front = PgBouncer.forward("127.0.0.1", pooled.sql().port(), db.name, "transaction", 1,
                     List.of(db.app))) {
            String url = "jdbc:postgresql://127.0.0.1:" + front.port() + "/" + db.name + "?user=" + db.app
                    + "&prepareThreshold=0";
            try (Connection a = DriverManager.getConnection(url); Statement s = a.createStatement()) {
                SQLException e = assertThrows(SQLException.class, () -> s.execute("SET stockade.fencing_token = 61"));
                assertEquals("SF405", e.getSQLState(), e.getMessage());
                assertTrue(e.getMessage().contains("sql.session-tokens: refuse"), e.getMessage());
                assertEquals("SF405", assertThrows(SQLException.class, () -> s.execute(
                        "SELECT set_config('stockade.fencing_token', '61', false)")).getSQLState());
            }
            try (Connection b = DriverManager.getConnection(url); Statement s = b.createStatement()) {
                SQLException e = assertThrows(SQLException.class,
                        () -> s.executeUpdate("UPDATE jobs SET state = 'no token' WHERE id = 1600"));
                assertEquals("SF428", e.getSQLState(), e.getMessage());
            }
            SQLException startup = assertThrows(SQLException.class, () -> DriverManager.getConnection(
                    url(pooled.sql().port(), 61L, "")));
            assertEquals("SF405", startup.getSQLState(), startup.getMessage());
            try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
                c.setAutoCommit(false);
                s.execute("SET LOCAL stockade.fencing_token = 61");
                s.executeUpdate("UPDATE jobs SET state = 'h61' WHERE id = 1600");
                c.commit();
            }
        }
        assertEquals(List.of("h61"), rows("SELECT state FROM jobs WHERE id = 1600"));
        assertEquals(61L, db.fence("jobs/1600"));
    }

    /**
     * The server reads startup options words as switches (-e -c bundled as -ec sets a setting the listener never
     * saw): on main such a word ended the session without a word (a NullPointerException); now the session is
     * refused with the reason. A refusal's own message cannot break out of the statement that raises it.
     */
    @Test
    void optionsTheListenerDoesNotReadAndTextThatSpellsTheRefusalTagAreRefusedWithTheReason() throws Exception {
        SQLException e = assertThrows(SQLException.class, () -> DriverManager.getConnection(
                url(port, null, "&options=-ec%20stockade.fencing_token=77")));
        assertEquals("SF405", e.getSQLState(), e.getMessage());
        assertTrue(e.getMessage().contains("startup options word '-ec' is not relayed"), e.getMessage());
        try (Connection c = jdbc(3L, ""); Statement s = c.createStatement()) {
            SQLException tag = assertThrows(SQLException.class, () -> s.execute(
                    "SET stockade.fencing_token = '$stockade_refusa$stockade_refusal$l$--'"));
            assertEquals("SF400", tag.getSQLState(), tag.getMessage());
            assertTrue(tag.getMessage().contains("malformed fencing token"), tag.getMessage());
        }
    }

    /**
     * What the decision log says of a transaction is what the listener saw take effect: a session's SET in a
     * transaction that rolled back is not the token afterwards (on main the log named it, next to the database's
     * error naming the other), a transaction that recovered from an error with autosave and committed is "accepted"
     * (on main "rolled_back"), RESET ALL forgets the token, and a session that ends inside a transaction logs it
     * rolled back (on main nothing).
     */
    @Test
    void theDecisionLogNamesWhatTheListenerSawTakeEffect() throws Exception {
        assertEquals("0:", psql(7, "INSERT INTO jobs VALUES (1500, 'h7')"));
        try (Connection c = jdbc(5L, ""); Statement s = c.createStatement()) {
            s.execute("BEGIN");
            s.execute("SET stockade.fencing_token = 11");
            s.execute("ROLLBACK");
            DECISIONS.clear();
            SQLException e = assertThrows(SQLException.class,
                    () -> s.executeUpdate("UPDATE jobs SET state = 'z5' WHERE id = 1500"));
            assertEquals("SF409", e.getSQLState());
            assertTrue(e.getMessage().contains("stale fencing token 5 "), e.getMessage());
            assertEquals(1, DECISIONS.size(), DECISIONS.toString());
            assertTrue(DECISIONS.getFirst().contains("\"outcome\":\"stale\",\"token\":5,"), DECISIONS.toString());
        }
        try (Connection c = jdbc(7L, "&autosave=always"); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            DECISIONS.clear();
            s.executeUpdate("INSERT INTO jobs VALUES (1501, 'a')");
            assertEquals("23505", assertThrows(SQLException.class,
                    () -> s.executeUpdate("INSERT INTO jobs VALUES (1501, 'dup')")).getSQLState());
            s.executeUpdate("UPDATE jobs SET state = 'b' WHERE id = 1501");
            c.commit();
            assertEquals(List.of("b"), rows("SELECT state FROM jobs WHERE id = 1501"));
            assertEquals(1, DECISIONS.size(), DECISIONS.toString());
            assertTrue(DECISIONS.getFirst().contains("\"outcome\":\"accepted\",\"token\":7"), DECISIONS.toString());
            c.setAutoCommit(true);
            s.execute("RESET ALL");
            DECISIONS.clear();
            s.execute("SELECT 1");
            assertEquals(List.of(), DECISIONS);
            s.execute("SET stockade.fencing_token = 8");
            c.setAutoCommit(false);
            s.executeUpdate("UPDATE jobs SET state = 'c' WHERE id = 1501");
            DECISIONS.clear();
        }
        assertEquals(List.of("b"), rows("SELECT state FROM jobs WHERE id = 1501"));
        long deadline = System.nanoTime() + 10_000_000_000L; // the listener logs once it saw the session end
        while (DECISIONS.isEmpty() && System.nanoTime() < deadline) {
            Thread.onSpinWait();
        }
        assertEquals(1, DECISIONS.size(), DECISIONS.toString());
        assertTrue(DECISIONS.getFirst().contains("\"outcome\":\"rolled_back\",\"token\":8"), DECISIONS.toString());
    }
}
