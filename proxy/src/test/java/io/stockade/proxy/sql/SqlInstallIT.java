package io.stockade.proxy.sql;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code stockade sql install|uninstall} on a real PostgreSQL, and the privileges model docs/sql.md states: what an
 * application role that owns no fenced table cannot do, and what a table owner still can (only the database's
 * privileges keep it away). No listener: these are the database's own answers.
 */
class SqlInstallIT {
    @TempDir
    static Path dir;
    static SqlDatabase db;
    static Path config;

    @BeforeAll
    static void create() throws Exception {
        db = SqlDatabase.create(dir);
        config = db.policyFile("stockade.yaml", 5432, "");
    }

    @AfterAll
    static void drop() throws Exception {
        if (db != null) {
            db.close();
        }
    }

    private static String[] sql(String... args) {
        return SqlDatabase.command(args);
    }

    private static Connection asApp() throws SQLException {
        return DriverManager.getConnection(SqlDatabase.SERVER + db.name + "?user=" + db.app);
    }

    private static List<String> triggers() throws SQLException {
        return db.column("SELECT tgrelid::regclass::text || ':' || tgname || ':' || tgenabled::text FROM pg_trigger"
                + " WHERE tgname LIKE 'stockade%' AND tgparentid = 0 ORDER BY 1");
    }

    @Test
    void installIsIdempotentUninstallKeepsTheFencesAndTheApplicationCannotTouchThem() throws Exception {
        String[] dry = sql("install", "--config", config.toString(), "--dry-run");
        assertEquals("0", dry[0], dry[2]);
        assertTrue(dry[1].contains("CREATE TRIGGER stockade_fence_row AFTER INSERT OR UPDATE OR DELETE ON public.jobs"),
                dry[1]);
        assertFalse(dry[1].contains("inner_key) VALUES"), "a printed script must not hold the key");
        assertEquals(List.of(), db.column("SELECT nspname FROM pg_namespace WHERE nspname = 'stockade'"));

        assertEquals("0", sql("install", "--config", config.toString())[0]);
        String[] again = sql("install", "--config", config.toString());
        assertEquals("0", again[0], again[2]);
        // every trigger fires whatever session_replication_role says ('A'), on each partition too (TRUNCATE)
        assertEquals(List.of("events:stockade_fence_row:A", "events:stockade_fence_truncate:A",
                "events_2024:stockade_fence_truncate:A", "events_2025:stockade_fence_truncate:A",
                "jobs:stockade_fence_row:A", "jobs:stockade_fence_truncate:A", "ledger:stockade_fence_row:A",
                "ledger:stockade_fence_truncate:A", "logs:stockade_fence_row:A", "logs:stockade_fence_truncate:A",
                "logs_2024:stockade_fence_truncate:A", "runs:stockade_fence_row:A",
                "runs:stockade_fence_truncate:A"), triggers());
        db.execute("INSERT INTO stockade.stockade_fences (scope, token) VALUES ('jobs/1', 5)");

        try (Connection c = asApp(); Statement s = c.createStatement()) {
            for (String attempt : List.of("INSERT INTO stockade.stockade_fences (scope, token) VALUES ('jobs/2', 1)",
                    "UPDATE stockade.stockade_fences SET token = 0", "SELECT * FROM stockade.stockade_secret",
                    "SELECT stockade.admit('public.jobs', 'jobs/1', 99, true, 1)",
                    "ALTER TABLE jobs DISABLE TRIGGER stockade_fence_row", "DROP TRIGGER stockade_fence_row ON jobs",
                    "SET session_replication_role = replica", "ALTER TABLE jobs OWNER TO " + db.app)) {
                SQLException e = assertThrows(SQLException.class, () -> s.execute(attempt), attempt);
                assertTrue(e.getSQLState().equals("42501") || e.getSQLState().equals("42P01"),
                        attempt + ": " + e.getSQLState() + " " + e.getMessage());
            }
        }
        assertEquals(5L, db.fence("jobs/1"));

        // the guard (an event trigger): not even a role that owns a fenced table can switch its triggers off
        String owner = "owner_" + db.app;
        db.execute("CREATE ROLE " + owner + "; ALTER TABLE ledger OWNER TO " + owner);
        try (Connection c = db.admin(); Statement s = c.createStatement()) {
            s.execute("SET ROLE " + owner);
            for (String attempt : List.of("ALTER TABLE ledger DISABLE TRIGGER stockade_fence_row",
                    "ALTER TABLE ledger DISABLE TRIGGER ALL", "ALTER TABLE ledger ENABLE REPLICA TRIGGER"
                            + " stockade_fence_truncate", "DROP TRIGGER stockade_fence_row ON ledger",
                    "ALTER TRIGGER stockade_fence_truncate ON ledger RENAME TO t")) {
                SQLException e = assertThrows(SQLException.class, () -> s.execute(attempt), attempt);
                assertEquals("SF405", e.getSQLState(), attempt + ": " + e.getMessage());
            }
        } finally {
            db.execute("ALTER TABLE ledger OWNER TO postgres; DROP ROLE " + owner);
        }
        assertTrue(triggers().containsAll(List.of("ledger:stockade_fence_row:A", "ledger:stockade_fence_truncate:A")),
                triggers().toString());

        // a table the file no longer names loses its triggers at the next install
        Path fewer = dir.resolve("fewer.yaml");
        Files.writeString(fewer, Files.readString(config).replace("        - {table: logs, scope: \"logs/{id}\"}\n",
                ""));
        assertEquals("0", sql("install", "--config", fewer.toString())[0]);
        assertTrue(triggers().stream().noneMatch(t -> t.startsWith("logs")), triggers().toString());

        assertEquals("0", sql("uninstall", "--config", config.toString())[0]);
        assertEquals("0", sql("uninstall", "--config", config.toString())[0]);
        assertEquals(List.of(), triggers());
        assertEquals(List.of(), db.column("SELECT evtname FROM pg_event_trigger"));
        assertEquals(5L, db.fence("jobs/1"), "uninstall keeps every scope's highest token");
        assertEquals("0", sql("uninstall", "--config", config.toString(), "--drop-fences")[0]);
        assertEquals(List.of(), db.column("SELECT nspname FROM pg_namespace WHERE nspname = 'stockade'"));
    }

    @Test
    void aFileWithoutSqlOrAnUnreachableDatabaseIsAClearError() throws Exception {
        Path none = dir.resolve("none.yaml");
        Files.writeString(none, "store: {type: memory, journal: " + dir.resolve("j") + "}\npolicies:\n  - name: f\n"
                + "    match: {path: \"/f/{p...}\"}\n    scope: f/{p}\n    backend: {type: file, root: " + dir + "}\n");
        String[] noSql = sql("install", "--config", none.toString());
        assertEquals("2", noSql[0]);
        assertTrue(noSql[2].contains("has no 'sql' section"), noSql[2]);
        String[] down = sql("install", "--config", config.toString(), "--url", "jdbc:postgresql://127.0.0.1:1/x");
        assertEquals("1", down[0]);
        assertTrue(down[2].contains("nothing was changed"), down[2]);
    }
}
