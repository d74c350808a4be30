package io.stockade.client;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * PostgreSQL: one row per lease name in {@code stockade_leases}. Expiry is decided by the database's clock
 * ({@code now()}), never by comparing this machine's clock with it. Every acquisition raises the row's token by one;
 * rows are never deleted, so the token never goes back. Renewal and release are compare-and-set on token and holder.
 */
final class PostgresLeaseService implements LeaseService {

    /** Opens a connection; the caller closes it. */
    @FunctionalInterface
    interface Connections {
        Connection open() throws SQLException;
    }

    static final String DDL = """
            CREATE TABLE IF NOT EXISTS stockade_leases (
                name       text PRIMARY KEY,
                holder     text NOT NULL,
                token      bigint NOT NULL,
                expires_at timestamptz NOT NULL
            )""";

    private static final String ACQUIRE = """
            INSERT INTO stockade_leases AS l (name, holder, token, expires_at)
            VALUES (?, ?, 1, now() + ? * interval '1 microsecond')
            ON CONFLICT (name) DO UPDATE
               SET token = l.token + 1, holder = EXCLUDED.holder, expires_at = EXCLUDED.expires_at
             WHERE l.expires_at < now() OR l.holder = EXCLUDED.holder
            RETURNING token""";

    private static final String RENEW = """
            UPDATE stockade_leases SET expires_at = now() + ? * interval '1 microsecond'
             WHERE name = ? AND token = ? AND holder = ?
            RETURNING token""";

    private static final String RELEASE = """
            UPDATE stockade_leases SET expires_at = '-infinity'
             WHERE name = ? AND token = ? AND holder = ?""";

    private static final String EXISTS = "SELECT 1 FROM stockade_leases WHERE name = ?";

    private final Connections connections;
    private final Ticker ticker;

    PostgresLeaseService(Connections connections, Ticker ticker) {
        this.connections = connections;
        this.ticker = ticker;
        try (Connection c = connections.open(); PostgresPooling.Unnamed u = PostgresPooling.unnamed(c);
                 Statement s = c.createStatement()) {
            s.execute(DDL);
        } catch (SQLException e) {
            throw new IllegalStateException("cannot create the table stockade_leases: " + e.getMessage(), e);
        }
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        long deadline = ticker.read() + timeout.toNanos();
        long poll = LeaseService.pollNanos(ttl);
        while (true) {
            long sent = ticker.read();
            try (Connection c = connections.open(); PostgresPooling.Unnamed u = PostgresPooling.unnamed(c);
                 PreparedStatement ps = c.prepareStatement(ACQUIRE)) {
                c.setAutoCommit(true);
                ps.setString(1, name);
                ps.setString(2, holder);
                ps.setLong(3, micros(ttl));
                ps.setQueryTimeout(seconds(timeout));
                try (ResultSet rs = ps.executeQuery()) {
                    if (rs.next()) {
                        return new Grant(rs.getLong(1), sent, Grant.NO_HANDLE);
                    }
                }
            }
            long left = deadline - ticker.read();
            if (left <= 0) {
                throw new TimeoutException("lease '" + name + "' is held by another holder; not acquired within "
                        + timeout);
            }
            TimeUnit.NANOSECONDS.sleep(Math.min(left, poll));
        }
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        try (Connection c = connections.open(); PostgresPooling.Unnamed u = PostgresPooling.unnamed(c);
                 PreparedStatement ps = c.prepareStatement(RENEW)) {
            c.setAutoCommit(true);
            ps.setLong(1, micros(ttl));
            ps.setString(2, name);
            ps.setLong(3, grant.token());
            ps.setString(4, holder);
            ps.setQueryTimeout(seconds(timeout));
            try (ResultSet rs = ps.executeQuery()) {
                if (rs.next()) {
                    return Renewal.RENEWED;
                }
            }
            try (PreparedStatement exists = c.prepareStatement(EXISTS)) {
                exists.setString(1, name);
                try (ResultSet rs = exists.executeQuery()) {
                    return rs.next() ? Renewal.REFUSED : Renewal.REVOKED;
                }
            }
        }
    }

    @Override
    public void release(String name, String holder, Grant grant) throws Exception {
        try (Connection c = connections.open(); PostgresPooling.Unnamed u = PostgresPooling.unnamed(c);
                 PreparedStatement ps = c.prepareStatement(RELEASE)) {
            c.setAutoCommit(true);
            ps.setString(1, name);
            ps.setLong(2, grant.token());
            ps.setString(3, holder);
            ps.setQueryTimeout(5);
            ps.executeUpdate();
        }
    }

    @Override
    public void close() {
    }

    private static long micros(Duration d) {
        return TimeUnit.NANOSECONDS.toMicros(d.toNanos());
    }

    /** JDBC query timeouts are whole seconds; 0 would mean "none". */
    private static int seconds(Duration d) {
        return (int) Math.max(1, Math.min(Integer.MAX_VALUE, (d.toMillis() + 999) / 1000));
    }
}
