package io.stockade.proxy.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLTransientConnectionException;
import java.sql.Statement;
import java.time.Duration;
import java.util.HexFormat;
import java.util.Properties;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;

import io.stockade.policy.Datasource;
import io.stockade.policy.Datasource.Statements;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.util.DriverDataSource;
import org.jspecify.annotations.Nullable;

/** Opens HikariCP pools over pgjdbc, and creates or checks Stockade's fence table and functions. */
public final class PostgresPools {
    /** The fence table and functions (also shipped for users who set {@code migrate: false}). */
    public static final String SCHEMA_RESOURCE = "stockade-fences.sql";
    private static final long MIGRATION_LOCK = 0x5354_4f43_4b41_4445L; // "STOCKADE"
    /**
     * How long start-up waits for a first connection that is on its way but slow (a database or a machine under
     * load, a cold driver): longer than a request's {@code connect-timeout}, which is meant for a pool under load.
     * A database that refuses, a TLS or password failure, a driver connect timeout: the first error stops the wait.
     */
    public static final Duration START_WAIT = Duration.ofSeconds(20);
    private static final Logger LOG = Logger.getLogger(PostgresPools.class.getName());

    private PostgresPools() {
    }

    /**
     * A pool for {@code ds}. Connections are autocommit, with the datasource's {@code statement_timeout}; the
     * socket timeout is the statement timeout plus 5 s, so a server that stops answering gives an error, not a
     * hang. The password is never logged.
     */
    public static HikariDataSource open(Datasource ds, String poolName) throws IOException {
        return open(ds, poolName, true);
    }

    /**
     * A pool for {@code ds}; without {@code socketTimeout}, the caller bounds a database that stops answering
     * itself (the postgres backend's transaction watchdog: a timed read costs a timer per read).
     */
    public static HikariDataSource open(Datasource ds, String poolName, boolean socketTimeout) throws IOException {
        return open(ds, poolName, socketTimeout, null);
    }

    /**
     * A pool for {@code ds} whose every new connection also runs {@code initSql} (after its
     * {@code statement_timeout}), e.g. a {@code SET ROLE}; a connection on which it fails is not handed out.
     */
    public static HikariDataSource open(Datasource ds, String poolName, boolean socketTimeout, @Nullable String initSql)
            throws IOException {
        HikariConfig c = new HikariConfig();
        c.setPoolName(poolName);
        String password = ds.password();
        if (password == null && ds.passwordFile() != null) {
            password = Files.readString(ds.passwordFile(), StandardCharsets.UTF_8).strip();
        }
        Properties driver = new Properties();
        if (socketTimeout) {
            driver.setProperty("socketTimeout", Long.toString(ds.statementTimeout().toSeconds() + 5));
        }
        driver.setProperty("connectTimeout", Long.toString(Math.max(1, ds.connectTimeout().toSeconds())));
        driver.setProperty("tcpKeepAlive", "true");
        driver.setProperty("ApplicationName", "stockade");
        String url = ds.statements() == Statements.NAMED ? ds.url() : unnamedStatements(ds.url());
        DataSource connections = new DriverDataSource(url, null, driver, ds.user(), password);
        if (ds.statements() == Statements.AUTO) {
            connections = new StatementsDataSource(connections, poolName, namedThreshold(ds.url()));
        }
        c.setDataSource(connections);
        c.setMaximumPoolSize(ds.poolSize());
        c.setMinimumIdle(Math.min(ds.poolSize(), 4));
        c.setConnectionTimeout(ds.connectTimeout().toMillis());
        c.setValidationTimeout(Math.min(ds.connectTimeout().toMillis(), 1000));
        c.setAutoCommit(true);
        c.setConnectionInitSql("SET statement_timeout = " + ds.statementTimeout().toMillis()
                + (initSql == null ? "" : "; " + initSql));
        // Start even if the database is down now (writes answer 503 until it is back); migrate() reports it.
        c.setInitializationFailTimeout(-1);
        return new HikariDataSource(c);
    }

    /**
     * The {@code prepareThreshold} {@code url} gives (a connection found to reach PostgreSQL directly runs with it),
     * else pgjdbc's default, 5.
     */
    static int namedThreshold(String url) {
        int q = url.indexOf('?');
        int threshold = 5;
        if (q >= 0) {
            for (String param : url.substring(q + 1).split("&", -1)) {
                int eq = param.indexOf('=');
                if (eq > 0 && decoded(param.substring(0, eq)).strip().equalsIgnoreCase("prepareThreshold")) {
                    try {
                        threshold = Integer.parseInt(decoded(param.substring(eq + 1)).strip());
                    } catch (NumberFormatException e) {
                        threshold = 5; // pgjdbc refuses the URL itself
                    }
                }
            }
        }
        return threshold;
    }

    private static String decoded(String text) {
        try {
            return URLDecoder.decode(text, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return text; // kept as written: pgjdbc refuses it
        }
    }

    /**
     * {@code url} with {@code prepareThreshold=0} in place of any {@code prepareThreshold} it gives: pgjdbc then
     * sends every statement, COMMIT and ROLLBACK as the unnamed statement, parsed again in the same message
     * sequence as its execution, never as a named server-side statement ({@code S_1}, {@code S_2} ...) that would
     * stay on the server connection after the transaction. Behind PgBouncer in transaction or statement pooling
     * that server connection goes to another client between transactions: a named statement would be missing
     * ({@code 26000}), already there ({@code 42P05}), or another client's with the same name, run with this
     * client's parameters. pgjdbc reads the URL's parameters over the properties it is given, and the last of two
     * equal parameters wins, so the URL is where the setting has to be. (A fetch size inside a transaction, as
     * the fence store's export uses, still runs the unnamed statement with pgjdbc 42.7: checked through PgBouncer
     * by {@code PgBouncerIT}.)
     *
     * @throws IOException when the JVM forces binary transfer ({@code -Dorg.postgresql.forceBinary=true}), which
     *                     makes pgjdbc name every statement whatever the threshold
     */
    public static String unnamedStatements(String url) throws IOException {
        if (Boolean.getBoolean("org.postgresql.forceBinary")) {
            throw new IOException("the JVM runs with -Dorg.postgresql.forceBinary=true, which makes pgjdbc prepare"
                    + " every statement by name on the server: unsafe behind a pooler (PgBouncer) and refused;"
                    + " remove the property, or set the datasource's 'statements: named' if no transaction pooler"
                    + " stands between the proxy and PostgreSQL");
        }
        int q = url.indexOf('?');
        StringBuilder out = new StringBuilder(q < 0 ? url : url.substring(0, q)).append('?');
        if (q >= 0) {
            for (String param : url.substring(q + 1).split("&", -1)) {
                String name = decoded(param.contains("=") ? param.substring(0, param.indexOf('=')) : param);
                if (!param.isEmpty() && !name.strip().equalsIgnoreCase("prepareThreshold")) {
                    out.append(param).append('&');
                }
            }
        }
        return out.append("prepareThreshold=0").toString();
    }

    /**
     * Creates or updates the fence table and functions ({@code migrate}), or checks that they exist. A database
     * whose fence table already carries this build's schema (its comment names the schema file's SHA-256) and has
     * every function is left as it is: the DDL, which takes a lock every other starting proxy waits on, runs once
     * per schema change, not once per policy and start (seven policies on one database started in ~0.9 s of DDL).
     *
     * @throws IOException naming what is missing, or why the database could not be reached
     */
    public static void prepare(HikariDataSource pool, boolean migrate, String url) throws IOException {
        try (Connection c = firstConnection(pool)) {
            if (migrate) {
                String ddl;
                try (InputStream in = PostgresPools.class.getResourceAsStream(SCHEMA_RESOURCE)) {
                    ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
                }
                String marker = schemaMarker(ddl);
                if (installed(c, marker)) {
                    return;
                }
                c.setAutoCommit(false);
                try (Statement s = c.createStatement()) {
                    // several proxies may start at once: CREATE OR REPLACE FUNCTION does not like company
                    s.execute("SELECT pg_advisory_xact_lock(" + MIGRATION_LOCK + ")");
                    s.execute(ddl);
                    s.execute("COMMENT ON TABLE stockade_fences IS '" + marker + "'");
                    c.commit();
                } catch (SQLException e) {
                    c.rollback();
                    throw e;
                } finally {
                    c.setAutoCommit(true);
                }
                return;
            }
            if (!installed(c, null)) {
                throw new IOException("the fence tables stockade_fences, stockade_floors or their functions are"
                        + " missing (or date from an older Stockade) in " + url
                        + " and the policy says 'migrate: false': apply proxy/src/main/resources/io/stockade/"
                        + "proxy/postgres/" + SCHEMA_RESOURCE + " (psql -f) or set 'migrate: true'");
            }
        } catch (SQLException e) {
            throw new IOException("cannot prepare the fence table in " + url + ": " + e.getMessage()
                    + " (SQLSTATE " + e.getSQLState() + ")" + cause(e), e);
        }
    }

    /** What {@link #prepare} writes on the fence table once the schema is applied: the schema file's digest. */
    static String schemaMarker(String ddl) {
        try {
            byte[] digest = MessageDigest.getInstance("SHA-256")
                    .digest(ddl.getBytes(StandardCharsets.UTF_8));
            return "stockade-fences.sql sha256:" + HexFormat.of().formatHex(digest);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every Java platform has SHA-256", e);
        }
    }

    /**
     * Whether the fence tables and every function exist, and (with a {@code marker}) the fence table's comment is
     * that marker: the schema of this build, applied.
     */
    private static boolean installed(Connection c, @Nullable String marker) throws SQLException {
        try (Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT to_regclass('stockade_fences') IS NOT NULL,"
                     + " to_regprocedure('stockade_fence(text,bigint,boolean,bigint)') IS NOT NULL,"
                     + " to_regprocedure('stockade_fence_observe(text,bigint,bigint,bigint)') IS NOT NULL,"
                     + " to_regprocedure('stockade_advance(text,bigint,boolean)') IS NOT NULL,"
                     + " to_regclass('stockade_floors') IS NOT NULL,"
                     + " to_regprocedure('stockade_floor_of(text)') IS NOT NULL,"
                     + " to_regprocedure('stockade_raise_floor(text,bigint)') IS NOT NULL,"
                     + " obj_description(to_regclass('stockade_fences'), 'pg_class')")) {
            r.next();
            boolean all = true;
            for (int i = 1; i <= 7; i++) {
                all &= r.getBoolean(i);
            }
            return all && (marker == null || marker.equals(r.getString(8)));
        }
    }

    /**
     * A connection for start-up: the pool's wait ({@code connect-timeout}) again while no attempt has failed yet (a
     * connection slow to open, no error), up to {@link #START_WAIT}; the first failure is thrown at once.
     */
    private static Connection firstConnection(HikariDataSource pool) throws SQLException {
        long deadline = System.nanoTime() + START_WAIT.toNanos();
        boolean told = false;
        while (true) {
            try {
                return pool.getConnection();
            } catch (SQLTransientConnectionException e) {
                // HikariCP gives the driver's last failure as the cause; none means an attempt is still under way
                if (e.getCause() != null || System.nanoTime() - deadline >= 0) {
                    throw e;
                }
                if (!told) {
                    told = true;
                    LOG.info(() -> "no connection to the database within " + pool.getConnectionTimeout()
                            + " ms and no error either: waiting on, up to " + START_WAIT.toSeconds()
                            + " s at start-up");
                }
            }
        }
    }

    /**
     * What went wrong with a database call, in words that name the cause: the pool says only that no connection
     * came within its timeout, and why (a refused connection or TLS certificate, a {@code pg_hba.conf} rule, a wrong
     * password) is in the driver's exception underneath, so "Connection is not available, request timed out after
     * 2002ms (total=0, active=0, idle=0, waiting=0)" becomes "no connection within 2002 ms: Connection to
     * 127.0.0.1:25432 refused ...", the driver's reason for the last failed attempt.
     */
    public static String why(SQLException e) {
        if (e instanceof SQLTransientConnectionException && e.getMessage() != null
                && e.getMessage().contains("Connection is not available")) {
            Matcher ms = Pattern.compile("after (\\d+)ms").matcher(e.getMessage());
            String within = ms.find() ? " within " + ms.group(1) + " ms" : "";
            for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
                if (t.getCause() == null && t.getMessage() != null) {
                    return "no database connection" + within + ": " + t.getMessage().lines().findFirst().orElse("");
                }
            }
            return "no database connection" + within + " (the pool found none free and could open none)";
        }
        return e.getMessage() + (e.getSQLState() == null ? "" : " (SQLSTATE " + e.getSQLState() + ")");
    }

    private static String cause(SQLException e) {
        StringBuilder why = new StringBuilder();
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            if (t.getMessage() != null && !t.getMessage().isBlank()) {
                why.append(why.isEmpty() ? ": caused by " : "; ").append(t.getMessage().lines().findFirst().orElse(""));
            }
        }
        return why.toString();
    }
}
