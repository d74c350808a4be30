package io.stockade.proxy.sql;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.BatchUpdateException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Savepoint;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.StockadeServer;
import io.stockade.testing.Http;
import io.stockade.testing.PgBouncer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.SqlClients;
import io.stockade.testing.Tools;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Real SQL clients, unchanged but for their connection string, through the PostgreSQL listener to a database whose
 * tables {@code stockade sql install} fenced: psql, pgjdbc (plain and HikariCP), psycopg2, node-postgres, and
 * PgBouncer in transaction pooling in front of the listener and behind it. Each case: a holder writes, a zombie
 * (a lower token) is refused and nothing it wrote is visible, and the fence row did not move. One database and one
 * proxy for the class (a second listener for PgBouncer behind it).
 */
@RequiresTools({Tools.Tool.PSQL, Tools.Tool.PSYCOPG2, Tools.Tool.NODE_PG, Tools.Tool.PGBOUNCER})
class SqlClientsIT {
    static final String ADMIN = "admin: {token: admin-secret-0123456789}\n";
    @TempDir
    static Path dir;
    static SqlDatabase db;
    static StockadeServer proxy;
    static int port;

    @BeforeAll
    static void start() throws Exception {
        db = SqlDatabase.create(dir);
        Path config = db.policyFile("stockade.yaml", 5432, "");
        Files.writeString(config, Files.readString(config) + ADMIN); // the admin API, without sql.admin-datasource
        proxy = SqlDatabase.installAndStart(config);
        port = proxy.sql().port();
    }

    @AfterAll
    static void stop() throws Exception {
        SqlDatabase.stop(proxy, db);
    }

    /** A pgjdbc URL through the listener, with the token in options when not null. */
    static String url(int listener, Long token, String more) {
        return "jdbc:postgresql://127.0.0.1:" + listener + "/" + db.name + "?user=" + db.app
                + (token == null ? "" : "&options=-c%20stockade.fencing_token=" + token) + more;
    }

    static Connection jdbc(Long token, String more) throws SQLException {
        return DriverManager.getConnection(url(port, token, more));
    }

    record Run(int code, String out, String err) {
    }

    static Run run(List<String> command, String stdin, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command);
        pb.environment().putAll(env);
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        Process p = pb.start();
        if (stdin != null) {
            p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        p.getOutputStream().close();
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), command + " did not end within 60 s");
        return new Run(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    /** psql as a user runs it: a connection string, {@code -c} commands, stop at the first error. */
    static Run psql(Long token, String stdin, String... commands) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(SqlClients.psql().toString(), "-X", "-q", "-v", "ON_ERROR_STOP=1",
                "-d", "host=127.0.0.1 port=" + port + " dbname=" + db.name + " user=" + db.app
                        + (token == null ? "" : " options='-c stockade.fencing_token=" + token + "'")));
        for (String c : commands) {
            cmd.add("-c");
            cmd.add(c);
        }
        return run(cmd, stdin, Map.of("PGCONNECT_TIMEOUT", "10"));
    }

    static List<String> rows(String sql, Object... params) throws SQLException {
        return db.column(sql, params);
    }

    @Test
    void psqlHolderWritesAZombieIsRefusedAndAMultiStatementQueryIsFencedWhole() throws Exception {
        Run holder = psql(7L, null, "INSERT INTO jobs VALUES (100, 'holder')");
        assertEquals(0, holder.code(), holder.err());
        Run zombie = psql(6L, null, "UPDATE jobs SET state = 'zombie' WHERE id = 100");
        assertNotEquals(0, zombie.code());
        assertTrue(zombie.err().contains("stale fencing token 6 for public.jobs scope 'jobs/100': the highest"
                + " accepted is 7"), zombie.err());
        assertEquals(List.of("holder"), rows("SELECT state FROM jobs WHERE id = 100"));
        assertEquals(7L, db.fence("jobs/100"));

        // several statements in one simple query, the token set in it with SET LOCAL
        Run next = psql(null, null, "BEGIN; SET LOCAL stockade.fencing_token = 8; UPDATE jobs SET state = 'h8'"
                + " WHERE id = 100; INSERT INTO runs (job_id, note) VALUES (100, 'r8'); COMMIT;");
        assertEquals(0, next.code(), next.err());
        Run stale = psql(7L, null, "INSERT INTO runs (job_id, note) VALUES (100, 'z7'); UPDATE jobs SET state ="
                + " 'z7' WHERE id = 100");
        assertTrue(stale.err().contains("stale fencing token 7"), stale.err());
        assertEquals(List.of("h8"), rows("SELECT state FROM jobs WHERE id = 100"));
        assertEquals(List.of("r8"), rows("SELECT note FROM runs WHERE job_id = 100"));
        assertEquals(8L, db.fence("jobs/100"));
    }

    @Test
    void psqlCopyFromStdinAndTruncateAreFenced() throws Exception {
        Run copy = psql(5L, "200\tcopied\n201\tcopied\n", "COPY jobs (id, state) FROM STDIN");
        assertEquals(0, copy.code(), copy.err());
        assertEquals(List.of("copied", "copied"), rows("SELECT state FROM jobs WHERE id IN (200, 201)"));
        try (Connection c = jdbc(9L, ""); Statement s = c.createStatement()) {
            s.executeUpdate("UPDATE jobs SET state = 'holder9' WHERE id = 201");
        }
        // the first row's scope takes token 5, the second's is stale: the COPY fails whole
        Run zombie = psql(5L, "200\tzombie\n201\tzombie\n", "COPY runs (job_id, note) FROM STDIN");
        assertTrue(zombie.err().contains("stale fencing token 5 for public.runs scope 'jobs/201'"), zombie.err());
        assertEquals(List.of(), rows("SELECT note FROM runs WHERE job_id IN (200, 201)"));
        assertEquals(List.of("holder9"), rows("SELECT state FROM jobs WHERE id = 201"));
        assertEquals(9L, db.fence("jobs/201"));

        // TRUNCATE removes every row: each one's scope is checked (a partitioned table, through its partition)
        try (Connection c = jdbc(9L, ""); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO logs VALUES (1, '2024-03-01', 'a'), (2, '2024-04-01', 'b')");
        }
        Run truncate = psql(8L, null, "TRUNCATE logs");
        assertTrue(truncate.err().contains("stale fencing token 8 for public.logs scope 'logs/"), truncate.err());
        assertEquals(List.of("2"), rows("SELECT count(*) FROM logs"));
        Run partition = psql(8L, null, "TRUNCATE logs_2024");
        assertTrue(partition.err().contains("stale fencing token 8"), partition.err());
        assertEquals(List.of("2"), rows("SELECT count(*) FROM logs"));
        assertEquals(9L, db.fence("logs/1"));
        Run holder = psql(9L, null, "TRUNCATE logs");
        assertEquals(0, holder.code(), holder.err());
        assertEquals(List.of("0"), rows("SELECT count(*) FROM logs"));
    }

    @Test
    void whatCouldSkipTheFenceIsRefusedAndNothingMoves() throws Exception {
        assertEquals(0, psql(3L, null, "INSERT INTO jobs VALUES (300, 'holder3')").code());
        for (String sql : List.of("SET session_replication_role = replica",
                "SELECT set_config('session_replication_role', 'replica', false)",
                "ALTER TABLE jobs DISABLE TRIGGER ALL", "DROP TRIGGER stockade_fence_row ON jobs",
                "SELECT set_config('stockade.fencing_proof', 'x', false)", "SET stockade.other = 1",
                "DROP TABLE jobs", "SELECT stockade.admit('public.jobs', 'jobs/300', 99, true, 1)")) {
            Run refused = psql(2L, null, sql + "; UPDATE jobs SET state = 'zombie' WHERE id = 300");
            assertTrue(refused.err().contains("stockade: "), sql + ": " + refused.err());
            assertEquals(List.of("holder3"), rows("SELECT state FROM jobs WHERE id = 300"), sql);
            assertEquals(3L, db.fence("jobs/300"), sql);
        }
        // extended protocol (pgjdbc): a refused statement in a pipeline fails it whole, and the session goes on
        try (Connection c = jdbc(4L, ""); Statement s = c.createStatement()) {
            assertEquals("SF405", assertThrows(SQLException.class,
                    () -> s.execute("SET session_replication_role = replica")).getSQLState());
            s.addBatch("UPDATE jobs SET state = 'holder4' WHERE id = 300");
            s.addBatch("ALTER TABLE jobs DISABLE TRIGGER stockade_fence_row");
            s.addBatch("UPDATE jobs SET state = 'holder4b' WHERE id = 300");
            BatchUpdateException e = assertThrows(BatchUpdateException.class, s::executeBatch);
            assertTrue(e.getMessage().contains("DISABLE TRIGGER is not relayed"), e.getMessage());
            try (var r = s.executeQuery("SELECT state FROM jobs WHERE id = 300")) {
                assertTrue(r.next());
                assertEquals("holder3", r.getString(1));
            }
        }
        Run startup = run(List.of(SqlClients.psql().toString(), "-X", "-c", "SELECT 1", "-d", "host=127.0.0.1 port="
                + port + " dbname=" + db.name + " user=" + db.app + " options='-c session_replication_role=replica'"),
                null, Map.of());
        assertTrue(startup.err().contains("session_replication_role is not relayed"), startup.err());
        // around the listener: a token the client set itself carries no proof
        try (Connection c = DriverManager.getConnection(SqlDatabase.SERVER + db.name + "?user=" + db.app);
             Statement s = c.createStatement()) {
            s.execute("SET stockade.fencing_token = '99'");
            SQLException e = assertThrows(SQLException.class,
                    () -> s.executeUpdate("UPDATE jobs SET state = 'direct' WHERE id = 300"));
            assertEquals("SF403", e.getSQLState(), e.getMessage());
            s.execute("SET stockade.fencing_token = '99;s:1:2:" + "0".repeat(64) + "'");
            e = assertThrows(SQLException.class, () -> s.executeUpdate("UPDATE jobs SET state = 'd' WHERE id = 300"));
            assertEquals("SF403", e.getSQLState(), e.getMessage());
        }
        assertEquals(List.of("holder3"), rows("SELECT state FROM jobs WHERE id = 300"));
        assertEquals(3L, db.fence("jobs/300"));
    }

    @Test
    void jdbcAutosaveAndSavepointsCannotSneakAStaleRowThrough() throws Exception {
        try (Connection c = jdbc(20L, ""); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO jobs VALUES (400, 'holder20')");
        }
        try (Connection zombie = jdbc(19L, "&autosave=always")) {
            zombie.setAutoCommit(false);
            try (Statement s = zombie.createStatement()) {
                SQLException e = assertThrows(SQLException.class,
                        () -> s.executeUpdate("UPDATE jobs SET state = 'zombie' WHERE id = 400"));
                assertEquals("SF409", e.getSQLState());
                e = assertThrows(SQLException.class,
                        () -> s.executeUpdate("INSERT INTO runs (job_id, note) VALUES (400, 'zombie')"));
                assertEquals("SF409", e.getSQLState());
                Savepoint sp = zombie.setSavepoint();
                assertThrows(SQLException.class, () -> s.executeUpdate("DELETE FROM jobs WHERE id = 400"));
                zombie.rollback(sp);
                zombie.commit(); // autosave kept the transaction open: what commits is only what the fence took
            }
        }
        assertEquals(List.of("holder20"), rows("SELECT state FROM jobs WHERE id = 400"));
        assertEquals(List.of(), rows("SELECT note FROM runs WHERE job_id = 400"));
        assertEquals(20L, db.fence("jobs/400"));
    }

    @Test
    void hikariPoolSetsTheTokenPerTransactionAndPipelinesABatch() throws Exception {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url(port, null, ""));
        config.setMaximumPoolSize(2);
        config.setAutoCommit(false);
        try (HikariDataSource pool = new HikariDataSource(config)) {
            // more transactions than prepareThreshold (5): pgjdbc names the set_config statement on the server
            for (int round = 0; round < 7; round++) {
                batch(pool, 30, 500 + round * 10);
            }
            BatchUpdateException e = assertThrows(BatchUpdateException.class, () -> batch(pool, 29, 500));
            assertTrue(e.getMessage().contains("stale fencing token 29"), e.getMessage());
        }
        assertEquals(List.of("35"), rows("SELECT count(*) FROM jobs WHERE id BETWEEN 500 AND 570"));
        assertEquals(List.of("30"), rows("SELECT DISTINCT state FROM jobs WHERE id BETWEEN 500 AND 570"));
        assertEquals(30L, db.fence("jobs/500"));
    }

    /** One transaction: the token by a prepared set_config, then five rows in one batch (pipelined). */
    private static void batch(HikariDataSource pool, long token, int first) throws SQLException {
        try (Connection c = pool.getConnection()) {
            try (PreparedStatement set = c.prepareStatement("SELECT set_config('stockade.fencing_token', ?, true)")) {
                set.setString(1, Long.toString(token));
                set.executeQuery().close();
            }
            try (PreparedStatement up = c.prepareStatement("INSERT INTO jobs VALUES (?, ?) ON CONFLICT (id) DO"
                    + " UPDATE SET state = EXCLUDED.state")) {
                for (int i = 0; i < 5; i++) {
                    up.setInt(1, first + i);
                    up.setString(2, Long.toString(token));
                    up.addBatch();
                }
                up.executeBatch();
                c.commit();
            } catch (SQLException e) {
                c.rollback();
                throw e;
            }
        }
    }

    @Test
    void writesFromAFunctionACascadeAndAcrossPartitionsAreFenced() throws Exception {
        try (Connection c = jdbc(40L, ""); Statement s = c.createStatement()) {
            s.executeUpdate("INSERT INTO jobs VALUES (600, 'h40')");
            s.executeUpdate("INSERT INTO runs (job_id, note) VALUES (600, 'r40')");
            s.executeUpdate("INSERT INTO events VALUES (600, '2024-06-01', 'e40')");
        }
        try (Connection c = jdbc(39L, ""); Statement s = c.createStatement()) {
            assertEquals("SF409", assertThrows(SQLException.class,
                    () -> s.execute("SELECT set_state(600, 'zombie')")).getSQLState());
            assertEquals("SF409", assertThrows(SQLException.class,
                    () -> s.execute("DELETE FROM jobs WHERE id = 600")).getSQLState());
            assertEquals("SF409", assertThrows(SQLException.class,
                    () -> s.execute("UPDATE events SET day = '2025-06-01' WHERE id = 600")).getSQLState());
        }
        assertEquals(List.of("h40"), rows("SELECT state FROM jobs WHERE id = 600"));
        assertEquals(List.of("r40"), rows("SELECT note FROM runs WHERE job_id = 600"));
        assertEquals(List.of("2024-06-01"), rows("SELECT day::text FROM events WHERE id = 600"));
        assertEquals(40L, db.fence("jobs/600"));
        try (Connection c = jdbc(41L, ""); Statement s = c.createStatement()) {
            s.execute("UPDATE events SET day = '2025-06-01' WHERE id = 600"); // moves to another partition
            s.execute("DELETE FROM jobs WHERE id = 600"); // cascades to runs
        }
        assertEquals(List.of("events_2025"), rows("SELECT tableoid::regclass::text FROM events WHERE id = 600"));
        assertEquals(List.of(), rows("SELECT note FROM runs WHERE job_id = 600"));
        assertEquals(41L, db.fence("jobs/600"));
        assertEquals(41L, db.fence("events/600"));
    }

    @Test
    void equalRejectAndMaxAdvanceAreJudgedInTheDatabase() throws Exception {
        try (Connection c = jdbc(null, ""); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            s.execute("SET LOCAL stockade.fencing_token = 100");
            s.executeUpdate("INSERT INTO ledger VALUES (1, 1, 10)");
            s.executeUpdate("INSERT INTO ledger VALUES (1, 2, 20)"); // the same transaction may write its scope again
            c.commit();
            s.execute("SET LOCAL stockade.fencing_token = 100");
            SQLException equal = assertThrows(SQLException.class,
                    () -> s.executeUpdate("INSERT INTO ledger VALUES (1, 3, 30)"));
            assertEquals("SF409", equal.getSQLState());
            assertTrue(equal.getMessage().contains("equal tokens are refused"), equal.getMessage());
            c.rollback();
            s.execute("SET LOCAL stockade.fencing_token = 201");
            SQLException far = assertThrows(SQLException.class,
                    () -> s.executeUpdate("INSERT INTO ledger VALUES (1, 4, 40)"));
            assertEquals("SF422", far.getSQLState());
            c.rollback();
        }
        assertEquals(List.of("2"), rows("SELECT count(*) FROM ledger WHERE account = 1"));
        assertEquals(100L, db.fence("accounts/1"));
    }

    @Test
    void psycopg2AndNodePostgresAreFencedUnchanged() throws Exception {
        String conninfo = "host=127.0.0.1 port=" + port + " dbname=" + db.name + " user=" + db.app;
        Run python = run(List.of("/usr/bin/python3", "-c", """
                import sys, io, psycopg2
                conn = psycopg2.connect(sys.argv[1])
                def write(token, state, rows):
                    try:
                        with conn.cursor() as cur:
                            cur.execute("SET LOCAL stockade.fencing_token = %s", (token,))
                            cur.execute("INSERT INTO jobs VALUES (700, %s) ON CONFLICT (id) DO UPDATE SET state ="
                                        " EXCLUDED.state", (state,))
                            cur.copy_expert("COPY runs (job_id, note) FROM STDIN", io.StringIO(rows))
                        conn.commit()
                        print("committed", token)
                    except psycopg2.Error as e:
                        conn.rollback()
                        print("refused", token, e.pgcode)
                write(50, "h50", "700\\tr50\\n")
                write(49, "z49", "700\\tz49\\n")
                """, conninfo), null, Map.of());
        assertEquals("committed 50\nrefused 49 SF409\n", python.out(), python.err());
        assertEquals(List.of("h50"), rows("SELECT state FROM jobs WHERE id = 700"));
        assertEquals(List.of("r50"), rows("SELECT note FROM runs WHERE job_id = 700"));

        Path script = dir.resolve("write.js");
        Files.writeString(script, """
                const { Client } = require('pg');
                (async () => {
                  const client = new Client({ connectionString: process.argv[2] });
                  await client.connect();
                  for (const [token, state] of [['51', 'h51'], ['50', 'z50']]) {
                    try {
                      await client.query('BEGIN');
                      await client.query("SELECT set_config('stockade.fencing_token', $1, true)", [token]);
                      await client.query('UPDATE jobs SET state = $1 WHERE id = 700', [state]);
                      await client.query('INSERT INTO runs (job_id, note) VALUES ($1, $2)', [700, state]);
                      await client.query('COMMIT');
                      console.log('committed ' + token);
                    } catch (e) {
                      await client.query('ROLLBACK');
                      console.log('refused ' + token + ' ' + e.code);
                    }
                  }
                  await client.end();
                })();
                """);
        Run node = run(List.of("/usr/bin/node", script.toString(), "postgresql://" + db.app + "@127.0.0.1:" + port
                + "/" + db.name), null, Map.of("NODE_PATH", SqlClients.nodeModules().toString()));
        assertEquals("committed 51\nrefused 50 SF409\n", node.out(), node.err());
        assertEquals(List.of("h51"), rows("SELECT state FROM jobs WHERE id = 700"));
        assertEquals(List.of("h51", "r50"), rows("SELECT note FROM runs WHERE job_id = 700 ORDER BY note"));
        assertEquals(51L, db.fence("jobs/700"));
    }

    /**
     * node-postgres sends a parameterised query as one Parse, whatever it holds: two token statements in it, the
     * first taking its token from $1 or both literal, are refused whole (the listener used to judge only the first
     * and relay the rest unjudged, and a first with $1 ended the session with a NullPointerException); the
     * session goes on, the UPDATE of the second did not run and the fence did not move.
     */
    @Test
    void aPreparedStatementOfTwoTokenStatementsIsRefusedAndTheSessionGoesOn() throws Exception {
        Long fence = db.fence("jobs/700"); // null: no row yet (the tests run in any order)
        Path script = dir.resolve("two-setters.js");
        Files.writeString(script, """
                const { Client } = require('pg');
                (async () => {
                  const client = new Client({ connectionString: process.argv[2] });
                  await client.connect();
                  for (const [sql, values] of [
                      ["SELECT set_config('stockade.fencing_token', $1, true); SET LOCAL stockade.fencing_token = 99",
                       ['98']],
                      ["SELECT set_config('stockade.fencing_token', '98', true); SET LOCAL stockade.fencing_token = 99;"
                       + " UPDATE jobs SET state = 'x' WHERE id = $1", [700]]]) {
                    try {
                      await client.query('BEGIN');
                      await client.query(sql, values);
                      console.log('relayed');
                    } catch (e) {
                      console.log('refused ' + e.code + ' ' + e.message);
                      await client.query('ROLLBACK');
                    }
                  }
                  const r = await client.query('SELECT 1 AS one');
                  console.log('then ' + r.rows[0].one);
                  await client.end();
                })();
                """);
        Run node = run(List.of("/usr/bin/node", script.toString(), "postgresql://" + db.app + "@127.0.0.1:" + port
                + "/" + db.name), null, Map.of("NODE_PATH", SqlClients.nodeModules().toString()));
        String refused = "refused SF405 stockade: a prepared statement holds one command, and this one holds 2"
                + " statements setting stockade.fencing_token: send each in its own\n";
        assertEquals(refused + refused + "then 1\n", node.out(), node.err());
        assertEquals(fence, db.fence("jobs/700"), "the fence moved");
        assertFalse(rows("SELECT state FROM jobs WHERE id = 700").contains("x"), "the refused UPDATE ran");
    }

    @Test
    void pgBouncerInFrontOfTheListenerAndBehindItWithSetLocal() throws Exception {
        try (PgBouncer front = PgBouncer.forward("127.0.0.1", port, db.name, "transaction", 2, List.of(db.app))) {
            String url = "jdbc:postgresql://127.0.0.1:" + front.port() + "/" + db.name + "?user=" + db.app
                    + "&prepareThreshold=0";
            assertEquals("committed", setLocalWrite(url, 60, 800));
            assertEquals("SF409", setLocalWrite(url, 59, 800));
        }
        try (PgBouncer back = PgBouncer.forward("127.0.0.1", 5432, db.name, "transaction", 2, List.of(db.app));
             StockadeServer behind = StockadeServer.start(PolicyLoader.load(
                     db.policyFile("behind.yaml", back.port(), "")))) {
            String url = url(behind.sql().port(), null, "&prepareThreshold=0");
            assertEquals("committed", setLocalWrite(url, 61, 800));
            assertEquals("SF409", setLocalWrite(url, 60, 800));
        }
        assertEquals(List.of("61"), rows("SELECT state FROM jobs WHERE id = 800"));
        assertEquals(61L, db.fence("jobs/800"));
    }

    /** A transaction that sets its token with SET LOCAL and writes a row: "committed", or the refusal's SQLSTATE. */
    private static String setLocalWrite(String url, long token, int id) throws SQLException {
        try (Connection c = DriverManager.getConnection(url); Statement s = c.createStatement()) {
            c.setAutoCommit(false);
            try {
                s.execute("SET LOCAL stockade.fencing_token = " + token);
                s.executeUpdate("INSERT INTO jobs VALUES (" + id + ", '" + token + "') ON CONFLICT (id) DO UPDATE"
                        + " SET state = EXCLUDED.state");
                c.commit();
                return "committed";
            } catch (SQLException e) {
                c.rollback();
                return e.getSQLState();
            }
        }
    }

    @Test
    void fenceVerifyAsksTheLockServiceBeforeTheDatabaseSeesTheToken() throws Exception {
        db.execute("CREATE TABLE IF NOT EXISTS leases (name text PRIMARY KEY, token bigint, expires_at timestamptz);"
                + " INSERT INTO leases VALUES ('jobs-leader', 70, now() + interval '1 hour')");
        Path config = db.policyFile("verify.yaml", 5432, "");
        Files.writeString(config, Files.readString(config).replace("    - name: jobs\n      tables:", """
                    - name: jobs
                      lock: jobs-leader
                      fence:
                        verify:
                          kind: postgres
                          datasource: {url: "%s", user: postgres}
                          table: public.leases
                          cache: {enabled: false}
                      tables:""".formatted(SqlDatabase.SERVER + db.name).indent(4).stripTrailing()));
        try (StockadeServer verified = StockadeServer.start(PolicyLoader.load(config))) {
            String url = url(verified.sql().port(), null, "");
            try (Connection c = DriverManager.getConnection(url(verified.sql().port(), 70L, ""));
                 Statement s = c.createStatement()) {
                s.executeUpdate("INSERT INTO jobs VALUES (1000, 'leader70')");
            }
            SQLException startup = assertThrows(SQLException.class,
                    () -> DriverManager.getConnection(url(verified.sql().port(), 71L, "")));
            assertEquals("SF403", startup.getSQLState(), startup.getMessage());
            assertTrue(startup.getMessage().contains("is not genuine for lock 'jobs-leader'"), startup.getMessage());
            assertEquals("SF403", setLocalWrite(url, 71, 1000));
            db.execute("UPDATE leases SET expires_at = now() - interval '1 second'");
            assertEquals("SF403", setLocalWrite(url, 70, 1000));
        }
        assertEquals(List.of("leader70"), rows("SELECT state FROM jobs WHERE id = 1000"));
        assertEquals(70L, db.fence("jobs/1000"));
    }

    @Test
    void sqlFenceRaisesAScopeAndAFloorInTheDatabaseAndTheTriggersHonourThem() throws Exception {
        Path config = dir.resolve("stockade.yaml");
        String[] raise = SqlDatabase.command("fence", "--config", config.toString(), "raise", "--scope", "jobs/1100",
                "--token", "50");
        assertEquals("0", raise[0], raise[2]);
        String[] floor = SqlDatabase.command("fence", "--config", config.toString(), "raise", "--prefix",
                "accounts/9", "--token", "500");
        assertEquals("0", floor[0], floor[2]);
        String[] show = SqlDatabase.command("fence", "--config", config.toString(), "show", "jobs/1100");
        assertTrue(show[1].contains("\"token\":50"), show[1] + show[2]);
        assertTrue(psql(49L, null, "INSERT INTO jobs VALUES (1100, 'z49')").err().contains("stale fencing token 49"));
        assertEquals(List.of(), rows("SELECT state FROM jobs WHERE id = 1100"));
        assertEquals(0, psql(50L, null, "INSERT INTO jobs VALUES (1100, 'h50')").code());
        Run below = psql(499L, null, "INSERT INTO ledger VALUES (90, 1, 1)");
        assertTrue(below.err().contains("stale fencing token 499 for public.ledger scope 'accounts/90': the highest"
                + " accepted is 500"), below.err());
        assertEquals(0, psql(501L, null, "INSERT INTO ledger VALUES (90, 1, 1)").code());
        assertEquals(50L, db.fence("jobs/1100"));
        assertEquals(501L, db.fence("accounts/90"));
    }

    /**
     * The admin API on the SQL policies' scopes, through {@code sql.admin-datasource} (a login that is a member of
     * the fence role): a raise and a floor land in the database's fence table and the triggers honour them; show and
     * export name the keeper. Without that login every call on those scopes is refused (501) with the reason, and
     * nothing moves anywhere (before, such a raise went to the proxy's own store, which no trigger reads).
     */
    @Test
    void theAdminApiReachesTheFenceTableThroughTheAdminLoginAndRefusesWithoutOne() throws Exception {
        String login = "adm_" + db.name.substring("stockade_sql_".length());
        db.execute("CREATE ROLE " + login + " LOGIN; GRANT " + db.fenceRole + " TO " + login);
        Path with = db.policyFile("admin.yaml", 5432, "  admin-datasource: {url: \"" + SqlDatabase.SERVER + db.name
                + "\", user: " + login + "}\n");
        Files.writeString(with, Files.readString(with) + ADMIN);
        Map<String, String> auth = Map.of("Authorization", "Bearer admin-secret-0123456789",
                "Content-Type", "application/json");
        try (StockadeServer reaching = StockadeServer.start(PolicyLoader.load(with))) {
            URI base = URI.create("http://127.0.0.1:" + reaching.port());
            Http.Response raise = Http.send("POST", base.resolve("/admin/fences/raise"),
                    HttpRequest.BodyPublishers.ofString("{\"scope\":\"jobs/1300\",\"token\":80}"),
                    auth);
            assertEquals(200, raise.status(), raise.body());
            assertTrue(raise.body().contains("\"token\":80,\"raised\":true,\"keeper\":\"sql\",\"policy\":\"jobs\""),
                    raise.body());
            assertEquals(80L, db.fence("jobs/1300"));
            assertTrue(psql(79L, null, "INSERT INTO jobs VALUES (1300, 'z79')").err()
                    .contains("stale fencing token 79 for public.jobs scope 'jobs/1300': the highest accepted is 80"));
            Http.Response floor = Http.send("POST", base.resolve("/admin/fences/raise"),
                    HttpRequest.BodyPublishers.ofString("{\"prefix\":\"accounts/13\",\"token\":900,"
                            + "\"policy\":\"ledger\"}"), auth);
            assertEquals(200, floor.status(), floor.body());
            assertTrue(psql(899L, null, "INSERT INTO ledger VALUES (130, 1, 1)").err()
                    .contains("stale fencing token 899 for public.ledger scope 'accounts/130'"));
            assertEquals(List.of(), rows("SELECT entry FROM ledger WHERE account = 130"));
            assertEquals(0, psql(80L, null, "INSERT INTO jobs VALUES (1300, 'h80')").code());
            Http.Response show = Http.get(base.resolve("/admin/fences/scope?name=jobs/1300"), auth);
            assertTrue(show.body().contains("\"token\":80") && show.body().contains("\"keeper\":\"sql\""),
                    show.body());
            Http.Response export = Http.get(base.resolve("/admin/fences/export"), auth);
            assertTrue(export.body().contains("{\"kind\":\"floor\",\"prefix\":\"accounts/13\",\"token\":900,"
                    + "\"keeper\":\"sql\",\"policy\":\"jobs\"}"), export.body());
            assertTrue(export.body().contains("\"scope\":\"jobs/1300\",\"token\":80,\"keeper\":\"sql\""),
                    export.body());

            URI other = URI.create("http://127.0.0.1:" + proxy.port()); // the class's proxy: no admin login
            Http.Response refused = Http.send("POST", other.resolve("/admin/fences/raise"),
                    HttpRequest.BodyPublishers.ofString("{\"scope\":\"jobs/1300\",\"token\":99}"),
                    auth);
            assertEquals(501, refused.status(), refused.body());
            assertTrue(refused.body().contains("sql.admin-datasource is not set"), refused.body());
            Http.Response list = Http.get(other.resolve("/admin/fences/scopes?prefix=jobs/"), auth);
            assertTrue(list.body().contains("\"notCovered\":[{\"policy\":\"jobs\""), list.body());
        } finally {
            db.execute("DROP ROLE IF EXISTS " + login);
        }
        assertEquals(80L, db.fence("jobs/1300"));
        assertEquals(List.of("h80"), rows("SELECT state FROM jobs WHERE id = 1300"));
    }

    @Test
    void aCancelRequestReachesTheServerAndTransactionsAreCounted() throws Exception {
        try (Connection c = jdbc(null, ""); Statement s = c.createStatement()) {
            long start = System.nanoTime();
            Thread.ofVirtual().start(() -> {
                try {
                    Thread.sleep(300);
                    s.cancel();
                } catch (SQLException | InterruptedException e) {
                    throw new IllegalStateException(e);
                }
            });
            SQLException e = assertThrows(SQLException.class, () -> s.execute("SELECT pg_sleep(30)"));
            assertEquals("57014", e.getSQLState(), e.getMessage());
            assertTrue(System.nanoTime() - start < TimeUnit.SECONDS.toNanos(20));
        }
        assertEquals(0, psql(1L, null, "INSERT INTO jobs VALUES (900, 'counted')").code());
        assertNotEquals(0, psql(0L, null, "UPDATE jobs SET state = 'z' WHERE id = 900").code());
        String metrics = proxy.metrics().scrape();
        assertTrue(metrics.contains("stockade_sql_transactions_total{outcome=\"accepted\"}"), metrics);
        assertTrue(metrics.lines().anyMatch(l -> l.startsWith("stockade_sql_transactions_total{outcome=\"stale\"}")
                && !l.endsWith(" 0.0")), metrics);
    }
}
