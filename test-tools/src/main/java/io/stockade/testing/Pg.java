package io.stockade.testing;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ThreadLocalRandom;

import org.jspecify.annotations.Nullable;

/**
 * A schema of its own in the shared test PostgreSQL (127.0.0.1:5432, database {@code test}, trust auth), so tests
 * never see each other's tables. {@link #url()} puts the schema first on the search path; {@link #close()} drops it.
 */
public final class Pg implements AutoCloseable {
    public static final String SERVER = "jdbc:postgresql://127.0.0.1:5432/test";
    private final String base;
    private final String schema;

    private Pg(String base, String schema) {
        this.base = base;
        this.schema = schema;
    }

    /** A fresh schema in the shared server, created with {@code ddl} (run with the schema on the search path). */
    public static Pg create(String ddl) throws SQLException {
        return create(SERVER, ddl);
    }

    /** A fresh schema in the server at {@code base} (a {@code jdbc:postgresql://} URL without parameters). */
    public static Pg create(String base, String ddl) throws SQLException {
        String schema = "t_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        Pg pg = new Pg(base, schema);
        try (Connection c = DriverManager.getConnection(base + "?user=postgres");
             Statement s = c.createStatement()) {
            s.execute("CREATE SCHEMA " + schema);
        }
        if (!ddl.isBlank()) {
            pg.execute(ddl);
        }
        return pg;
    }

    /** The JDBC URL of this schema (for a policy's datasource url). */
    public String url() {
        return base + "?currentSchema=" + schema;
    }

    /** The server's URL without parameters ({@link #SERVER} unless created with another). */
    public String base() {
        return base;
    }

    public String schema() {
        return schema;
    }

    /**
     * A connection as {@code postgres} that never names a statement on the server ({@code prepareThreshold=0}, as
     * every PostgreSQL client of the project: safe behind a transaction-pooling PgBouncer). test-tools depends on
     * no module that holds the project's helper for it, so the parameter is written here.
     */
    public Connection connect() throws SQLException {
        return DriverManager.getConnection(url() + "&user=postgres&prepareThreshold=0");
    }

    /** One kept connection for {@link #execute} and {@link #column} (a new one per query cost ~50 ms each). */
    private @Nullable Connection kept;

    private interface Work<T> {
        T run(Connection c) throws SQLException;
    }

    /**
     * Runs {@code work} on the kept connection (autocommit: each statement sees what is committed when it runs),
     * opening it when there is none; a connection the server dropped (a restart test) is opened again once.
     */
    private synchronized <T> T onKept(Work<T> work) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            if (kept == null || kept.isClosed()) {
                kept = connect();
            }
            try {
                return work.run(kept);
            } catch (SQLException e) {
                boolean dropped = e.getSQLState() != null && e.getSQLState().startsWith("08");
                if (!dropped || attempt > 1) {
                    throw e;
                }
                closeKept();
            }
        }
    }

    private synchronized void closeKept() {
        if (kept != null) {
            try {
                kept.close();
            } catch (SQLException ignored) {
                // dropping it was the point
            }
            kept = null;
        }
    }

    public void execute(String sql) throws SQLException {
        onKept(c -> {
            try (Statement s = c.createStatement()) {
                return s.execute(sql); // onKept's value, not used
            }
        });
    }

    /** The first column of every row of a query with string parameters. */
    public List<String> column(String sql, Object... params) throws SQLException {
        return onKept(c -> {
            try (PreparedStatement ps = c.prepareStatement(sql)) {
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
        });
    }

    public Optional<String> single(String sql, Object... params) throws SQLException {
        List<String> all = column(sql, params);
        return all.isEmpty() ? Optional.empty() : Optional.ofNullable(all.getFirst());
    }

    /** The token {@code stockade_fences} holds for a scope. */
    public OptionalLong fence(String scope) throws SQLException {
        return single("SELECT token FROM stockade_fences WHERE scope = ?", scope)
                .map(t -> OptionalLong.of(Long.parseLong(t))).orElse(OptionalLong.empty());
    }

    @Override
    public void close() {
        closeKept();
        try (Connection c = DriverManager.getConnection(base + "?user=postgres");
             Statement s = c.createStatement()) {
            s.execute("DROP SCHEMA IF EXISTS " + schema + " CASCADE");
        } catch (SQLException e) {
            // the server may be gone (a restart test); the schema dies with its cluster
        }
    }
}
