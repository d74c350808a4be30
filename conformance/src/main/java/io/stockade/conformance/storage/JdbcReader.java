package io.stockade.conformance.storage;

import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

import io.stockade.client.PostgresPooling;
import io.stockade.conformance.Template;

import org.jspecify.annotations.Nullable;

/**
 * Runs a query with one parameter ({@code ?}: the key, or what the {@code param} template makes of it, e.g.
 * {@code {id}}) and takes the first column of the first row as the value (no row: absent). E.g.
 * {@code select body from documents where id = ?}, {@code select value from jobs where id = ?}.
 */
public final class JdbcReader implements StorageReader {

    private final String url;
    private final @Nullable String user;
    private final @Nullable String password;
    private final String sql;
    private final String param;
    private @Nullable Connection connection;

    public JdbcReader(String url, @Nullable String user, @Nullable String password, String sql) {
        this(url, user, password, sql, "{key}");
    }

    /** {@code param}: the parameter's template, {@code {key}} or {@code {id}} (with text around it if need be). */
    public JdbcReader(String url, @Nullable String user, @Nullable String password, String sql,
                      String param) {
        this.url = PostgresPooling.url(url);  // unnamed statements only: safe behind PgBouncer
        this.user = user;
        this.password = password;
        this.sql = sql;
        this.param = param;
    }

    @Override
    public synchronized @Nullable String read(String key) throws IOException {
        try {
            if (connection == null || connection.isClosed()) {
                connection = DriverManager.getConnection(url, user, password);
            }
            try (PreparedStatement st = connection.prepareStatement(sql)) {
                st.setQueryTimeout(5);   // a hung database fails the read instead of stalling the sampler
                st.setString(1, Template.expand(param, key));
                try (ResultSet rs = st.executeQuery()) {
                    return rs.next() ? rs.getString(1) : null;
                }
            }
        } catch (SQLException e) {
            close();
            throw new IOException("query failed: " + e.getMessage(), e);
        }
    }

    @Override
    public String describe() {
        return "jdbc " + url + " " + sql + " (? = " + param + ")";
    }

    @Override
    public synchronized void close() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // closing
            }
            connection = null;
        }
    }
}
