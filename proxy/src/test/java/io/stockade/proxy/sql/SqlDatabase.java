package io.stockade.proxy.sql;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.StockadeServer;
import io.stockade.proxy.sql.install.SqlCommand;

import org.jspecify.annotations.Nullable;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A database of its own on the shared test PostgreSQL (127.0.0.1:5432, trust), with an application role that owns
 * none of the tables (as docs/sql.md asks), a fence role of its own (roles are cluster-wide), the tables the SQL
 * tests fence, and the fence installed by {@code stockade sql install}. {@link #close()} drops the database and the
 * roles.
 */
final class SqlDatabase implements AutoCloseable {
    static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/";
    static final String TABLES = """
            CREATE TABLE jobs (id int PRIMARY KEY, state text);
            CREATE TABLE runs (id serial PRIMARY KEY, job_id int NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
                               note text);
            CREATE TABLE events (id int, day date, payload text) PARTITION BY RANGE (day);
            CREATE TABLE events_2024 PARTITION OF events FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
            CREATE TABLE events_2025 PARTITION OF events FOR VALUES FROM ('2025-01-01') TO ('2026-01-01');
            CREATE TABLE logs (id int, day date, line text) PARTITION BY RANGE (day);
            CREATE TABLE logs_2024 PARTITION OF logs FOR VALUES FROM ('2024-01-01') TO ('2025-01-01');
            CREATE TABLE ledger (account int, entry int, amount int, PRIMARY KEY (account, entry));
            CREATE FUNCTION set_state(p_id int, p_state text) RETURNS void LANGUAGE sql
                AS 'UPDATE jobs SET state = p_state WHERE id = p_id';
            """;

    final String server;
    final String maintenance;
    final String name;
    final String app;
    final String fenceRole;
    final Path dir;
    final Path secret;

    private SqlDatabase(String server, String maintenance, String suffix, Path dir) {
        this.server = server;
        this.maintenance = maintenance;
        this.name = "stockade_sql_" + suffix;
        this.app = "app_" + suffix;
        this.fenceRole = "fence_" + suffix;
        this.dir = dir;
        this.secret = dir.resolve("sql.key");
    }

    /** Creates the database, the roles and the tables; writes the key. */
    static SqlDatabase create(Path dir) throws SQLException, IOException {
        return create(dir, SERVER, "test", null);
    }

    /**
     * On another server ({@code jdbc:postgresql://HOST:PORT/}, {@code maintenance} the database to connect to for
     * creating this one), the application role logging in with {@code password} when not null.
     */
    static SqlDatabase create(Path dir, String server, String maintenance, String password)
            throws SQLException, IOException {
        SqlDatabase db = new SqlDatabase(server, maintenance,
                Long.toHexString(ThreadLocalRandom.current().nextLong() & 0xffffffffL), dir);
        Files.writeString(db.secret, "0123456789abcdef0123456789abcdef-" + db.name + "\n");
        try (Connection c = DriverManager.getConnection(server + maintenance + "?user=postgres");
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE " + db.name);
            s.execute("CREATE ROLE " + db.app + " LOGIN" + (password == null ? "" : " PASSWORD '" + password + "'"));
        }
        try (Connection c = db.admin(); Statement s = c.createStatement()) {
            s.execute(TABLES);
            s.execute("GRANT SELECT, INSERT, UPDATE, DELETE, TRUNCATE ON ALL TABLES IN SCHEMA public TO " + db.app);
            s.execute("GRANT USAGE ON ALL SEQUENCES IN SCHEMA public TO " + db.app);
        }
        return db;
    }

    /** The {@code sql} section for this database: jobs, runs, events and logs in one policy, ledger in another. */
    String sqlSection(int databasePort, String extra) {
        return """
                sql:
                  listen: {host: 127.0.0.1, port: 0}
                  database: {host: 127.0.0.1, port: %d, name: %s}
                  fence-role: %s
                  secret-file: %s
                %s  policies:
                    - name: jobs
                      tables:
                        - {table: jobs, scope: "jobs/{id}"}
                        - {table: public.runs, scope: "jobs/{job_id}"}
                        - {table: events, scope: "events/{id}"}
                        - {table: logs, scope: "logs/{id}"}
                    - name: ledger
                      fence: {equal: reject, max-advance: 100}
                      tables:
                        - {table: ledger, scope: "accounts/{account}"}
                """.formatted(databasePort, name, fenceRole, secret, extra);
    }

    /** A whole policy file holding only the {@code sql} section (a memory store in {@link #dir}). */
    Path policyFile(String fileName, int databasePort, String extra) throws IOException {
        Path file = dir.resolve(fileName);
        Files.writeString(file, "server: {host: 127.0.0.1, port: 0}\nstore: {type: memory, journal: "
                + dir.resolve(fileName + ".journal") + "}\n" + sqlSection(databasePort, extra));
        return file;
    }

    /**
     * {@link #policyFile} with more tables in the {@code jobs} policy, one {@code {table: T, scope: "S"}} each, as
     * {@code table, scope} pairs.
     */
    Path policyFileWith(String fileName, String... tablesAndScopes) throws IOException {
        Path file = policyFile(fileName, 5432, "");
        String logs = "        - {table: logs, scope: \"logs/{id}\"}\n";
        StringBuilder more = new StringBuilder(logs);
        for (int i = 0; i < tablesAndScopes.length; i += 2) {
            more.append("        - {table: ").append(tablesAndScopes[i]).append(", scope: \"")
                    .append(tablesAndScopes[i + 1]).append("\"}\n");
        }
        Files.writeString(file, Files.readString(file).replace(logs, more));
        return file;
    }

    /** Installs the fence {@code config} names ({@code stockade sql install}), then starts a proxy on it. */
    static StockadeServer installAndStart(Path config) throws Exception {
        String[] install = command("install", "--config", config.toString());
        assertEquals("0", install[0], install[2]);
        return StockadeServer.start(PolicyLoader.load(config));
    }

    /** Stops the proxy, then drops the database and its roles (either may be null: a start that failed). */
    static void stop(@Nullable StockadeServer proxy, @Nullable SqlDatabase db) throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        if (db != null) {
            db.close();
        }
    }

    /**
     * A pgjdbc connection through the listener on {@code port}, as the application's role, with {@code token} in
     * the startup options when not null and {@code more} (URL parameters, each starting with &amp;) appended.
     */
    Connection through(int port, @Nullable Long token, String more) throws SQLException {
        return DriverManager.getConnection("jdbc:postgresql://127.0.0.1:" + port + "/" + name + "?user=" + app
                + (token == null ? "" : "&options=-c%20stockade.fencing_token=" + token) + more);
    }

    /** Runs {@code stockade sql ARGS --config FILE}; its exit code, output and errors. */
    static String[] command(String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = SqlCommand.run(List.of(args), new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new String[] {Integer.toString(code), out.toString(StandardCharsets.UTF_8),
                err.toString(StandardCharsets.UTF_8)};
    }

    /** A superuser connection straight to the database (never through the listener). */
    Connection admin() throws SQLException {
        return DriverManager.getConnection(server + name + "?user=postgres");
    }

    /** The first column of each row of a query run straight on the database, as text. */
    List<String> column(String sql, Object... params) throws SQLException {
        try (Connection c = admin(); PreparedStatement ps = c.prepareStatement(sql)) {
            for (int i = 0; i < params.length; i++) {
                ps.setObject(i + 1, params[i]);
            }
            List<String> out = new ArrayList<>();
            try (ResultSet r = ps.executeQuery()) {
                while (r.next()) {
                    out.add(r.getString(1));
                }
            }
            return out;
        }
    }

    /** The fence row of a scope, or null. */
    Long fence(String scope) throws SQLException {
        List<String> token = column("SELECT token FROM stockade.stockade_fences WHERE scope = ?", scope);
        return token.isEmpty() ? null : Long.valueOf(token.getFirst());
    }

    void execute(String sql) throws SQLException {
        try (Connection c = admin(); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    @Override
    public void close() throws SQLException {
        try (Connection c = DriverManager.getConnection(server + maintenance + "?user=postgres");
             Statement s = c.createStatement()) {
            s.execute("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
            s.execute("DROP ROLE IF EXISTS " + app);
            s.execute("DROP ROLE IF EXISTS " + fenceRole);
        }
    }
}
