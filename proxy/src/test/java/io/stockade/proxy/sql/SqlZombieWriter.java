package io.stockade.proxy.sql;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

/**
 * The pgjdbc holder {@link SqlZombieIT} pauses, run as a JVM of its own: takes the lease LEASE from the lease table
 * (through the listener: the table is not fenced), opens its writing connection with the lease's token in the
 * startup {@code options} (pgjdbc's {@code options=-c stockade.fencing_token=N}, {@code autosave=always}), writes row
 * ID, prints {@code WROTE <token>}, and waits for a line on standard input: by then it has been stopped past its
 * lease and continued. It then writes again on the same connection, as a holder that does not know it lost its
 * lease, and prints {@code COMMITTED} or {@code REFUSED <SQLSTATE>}.
 *
 * <p>Args: LISTENER_JDBC_URL (with {@code user=}) LEASE ID.
 */
final class SqlZombieWriter {
    private SqlZombieWriter() {
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String lease = args[1];
        int id = Integer.parseInt(args[2]);
        long token;
        try (Connection c = DriverManager.getConnection(url);
             PreparedStatement acquire = c.prepareStatement(SqlZombieIT.ACQUIRE)) {
            acquire.setString(1, lease);
            acquire.setString(2, "pgjdbc");
            try (ResultSet r = acquire.executeQuery()) {
                if (!r.next()) {
                    throw new IllegalStateException("the lease " + lease + " is held by another");
                }
                token = r.getLong(1);
            }
        }
        try (Connection c = DriverManager.getConnection(url + "&autosave=always&options=-c%20stockade.fencing_token="
                + token)) {
            c.setAutoCommit(false);
            write(c, id, "pgjdbc-holder");
            System.out.println("WROTE " + token);
            System.out.flush();
            new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
            try {
                write(c, id, "pgjdbc-zombie");
                System.out.println("COMMITTED");
            } catch (SQLException e) {
                c.rollback();
                System.out.println("REFUSED " + e.getSQLState());
            }
        }
    }

    private static void write(Connection c, int id, String state) throws SQLException {
        try (PreparedStatement job = c.prepareStatement("INSERT INTO jobs VALUES (?, ?) ON CONFLICT (id) DO UPDATE"
                + " SET state = EXCLUDED.state");
             PreparedStatement run = c.prepareStatement("INSERT INTO runs (job_id, note) VALUES (?, ?)")) {
            job.setInt(1, id);
            job.setString(2, state);
            job.executeUpdate();
            run.setInt(1, id);
            run.setString(2, state);
            run.executeUpdate();
        }
        c.commit();
    }
}
