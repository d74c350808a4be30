package io.stockade.client;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;

import org.jspecify.annotations.Nullable;
import org.postgresql.jdbc.PgConnection;

/**
 * PostgreSQL connections that are safe behind PgBouncer in transaction or statement pooling: pgjdbc sends every
 * statement, COMMIT and ROLLBACK as the unnamed statement (parsed again with each execution), never as a named
 * server-side prepared statement ({@code S_1}, {@code S_2} ...). A named statement stays on the server connection
 * after the transaction, and the pooler hands that server connection to another client next: the statement is then
 * missing ({@code 26000}), already there ({@code 42P05}), or another client's of the same name, run with this
 * client's parameters. The SDK's PostgreSQL lease provider, {@code lease run} and {@link PostgresLocks} use it on
 * every connection; use {@link #url} on your own JDBC URL when your application goes through a pooler too.
 * <p>
 * pgjdbc names a statement from its {@code prepareThreshold}-th execution (5 by default), COMMIT and ROLLBACK from
 * the first unless the connection's threshold is 0, and every statement with {@code prepareThreshold=-1} or
 * {@code -Dorg.postgresql.forceBinary=true}; with a threshold of 0 and binary transfer not forced, never (checked
 * with pgjdbc 42.7 in {@code pg_prepared_statements}, a fetch-size cursor in a transaction included).
 */
public final class PostgresPooling {
    private static final String FORCE_BINARY = "org.postgresql.forceBinary";

    private PostgresPooling() {
    }

    /**
     * {@code jdbcUrl} with {@code prepareThreshold=0} in place of any {@code prepareThreshold} it gives. pgjdbc
     * reads the URL's parameters over the {@code Properties} it is given, and of two equal parameters the last,
     * so the setting has to be the URL's last. Another driver's URL is returned as it is.
     *
     * @param jdbcUrl a {@code jdbc:postgresql:} URL
     * @return the URL without named server-side statements
     * @throws IllegalStateException when the JVM forces binary transfer ({@code -Dorg.postgresql.forceBinary=true})
     */
    public static String url(String jdbcUrl) {
        if (!jdbcUrl.startsWith("jdbc:postgresql:")) {
            return jdbcUrl;
        }
        refuseForcedBinary();
        int q = jdbcUrl.indexOf('?');
        StringBuilder out = new StringBuilder(q < 0 ? jdbcUrl : jdbcUrl.substring(0, q)).append('?');
        if (q >= 0) {
            for (String param : jdbcUrl.substring(q + 1).split("&", -1)) {
                String name = param.contains("=") ? param.substring(0, param.indexOf('=')) : param;
                try {
                    name = URLDecoder.decode(name, StandardCharsets.UTF_8);
                } catch (IllegalArgumentException e) {
                    // kept as written: pgjdbc refuses it, and the parameter appended last wins anyway
                }
                if (!param.isEmpty() && !name.strip().equalsIgnoreCase("prepareThreshold")) {
                    out.append(param).append('&');
                }
            }
        }
        return out.append("prepareThreshold=0").toString();
    }

    /**
     * Turns named statements off on {@code connection} (a pgjdbc connection, also through a pool's wrapper) until
     * {@link Unnamed#close}, which puts the connection's own settings back: statements created meanwhile, and the
     * COMMIT or ROLLBACK sent meanwhile, are unnamed. A connection that is not pgjdbc's is left as it is.
     *
     * @param connection the connection
     * @return what restores the connection's settings
     * @throws SQLException          if the connection is closed
     * @throws IllegalStateException when the JVM forces binary transfer ({@code -Dorg.postgresql.forceBinary=true})
     */
    public static Unnamed unnamed(Connection connection) throws SQLException {
        refuseForcedBinary();
        try {
            if (!connection.isWrapperFor(PgConnection.class)) {
                return new Unnamed(null, 0, false);
            }
        } catch (LinkageError e) {  // pgjdbc is optional: another driver's connection
            return new Unnamed(null, 0, false);
        }
        PgConnection pg = connection.unwrap(PgConnection.class);
        Unnamed restore = new Unnamed(pg, pg.getPrepareThreshold(), pg.getForceBinary());
        pg.setPrepareThreshold(0);
        pg.setForceBinary(false);
        return restore;
    }

    private static void refuseForcedBinary() {
        if (Boolean.getBoolean(FORCE_BINARY)) {
            throw new IllegalStateException("the JVM runs with -D" + FORCE_BINARY + "=true, which makes pgjdbc"
                    + " prepare every statement by name on the server: unsafe behind a pooler (PgBouncer) and"
                    + " refused; remove the property");
        }
    }

    /** Restores a connection's {@code prepareThreshold} and binary-transfer setting. */
    public static final class Unnamed implements AutoCloseable {
        private final @Nullable PgConnection connection;
        private final int threshold;
        private final boolean forceBinary;

        private Unnamed(@Nullable PgConnection connection, int threshold, boolean forceBinary) {
            this.connection = connection;
            this.threshold = threshold;
            this.forceBinary = forceBinary;
        }

        @Override
        public void close() {
            if (connection != null) {
                connection.setPrepareThreshold(threshold);
                connection.setForceBinary(forceBinary);
            }
        }
    }
}
