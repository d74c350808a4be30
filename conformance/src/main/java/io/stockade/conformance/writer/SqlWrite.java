package io.stockade.conformance.writer;

import java.io.IOException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;
import java.util.List;
import java.util.Properties;

import org.jspecify.annotations.Nullable;

/**
 * One write of a SQL target: a connection of its own (no pool, no hidden retry), the token in its startup options
 * ({@code options=-c stockade.fencing_token=N}, as an unmodified client passes it to the PostgreSQL listener), one
 * statement with its parameters bound as text of unspecified type, autocommit. The answer, as the history reads an
 * HTTP status: 200 committed; a SQLSTATE of Stockade's own ({@code SFnnn}) as its number ({@code SF409} stale:
 * 409, {@code SF503} the listener could not check the token: 503, an unknown outcome); a serialization failure,
 * deadlock or cancelled statement ({@code 40xxx}, {@code 57014}): 503 (not written, tried again); any other error
 * of the database (a constraint, a syntax error): 400. A connection that breaks or times out before the answer is
 * an unknown outcome ({@link IOException}): the statement may have committed.
 */
public final class SqlWrite {
    /** The environment variable the writer takes the database password from (never the command line). */
    public static final String PASSWORD_ENV = "STOCKADE_CONFORMANCE_SQL_PASSWORD";

    private SqlWrite() {
    }

    /**
     * Runs the statement.
     *
     * @param url    {@code jdbc:postgresql://host:port/database[?...]}, without {@code options}
     * @param params the parameters, rendered
     * @return the status the history records
     * @throws IOException the outcome is unknown (the connection broke or timed out)
     */
    public static int send(String url, @Nullable String user, @Nullable String password, String statement,
                           List<String> params, long token, Duration timeout) throws IOException {
        int seconds = (int) Math.max(1, (timeout.toMillis() + 999) / 1000);
        String full = url + (url.contains("?") ? "&" : "?") + "options=-c%20stockade.fencing_token=" + token
                + "&stringtype=unspecified&connectTimeout=" + seconds + "&socketTimeout=" + seconds;
        Properties props = new Properties();
        if (user != null) {
            props.setProperty("user", user);
        }
        if (password != null) {
            props.setProperty("password", password);
        }
        try (Connection c = DriverManager.getConnection(full, props);
             PreparedStatement st = c.prepareStatement(statement)) {
            for (int i = 0; i < params.size(); i++) {
                st.setString(i + 1, params.get(i));
            }
            st.execute();
            return 200;
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            if (state.isEmpty() || state.startsWith("08") || state.startsWith("57P")) {
                // no answer (connection broken, timed out, server shutting down): it may have committed
                throw new IOException("SQLSTATE " + (state.isEmpty() ? "none" : state) + ": " + e.getMessage(), e);
            }
            if (state.matches("SF[1-5][0-9][0-9]")) {
                return Integer.parseInt(state.substring(2));
            }
            if (state.startsWith("40") || state.equals("57014")) {
                return 503;
            }
            return 400;
        }
    }
}
