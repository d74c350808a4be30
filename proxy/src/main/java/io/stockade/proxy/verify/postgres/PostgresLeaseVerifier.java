package io.stockade.proxy.verify.postgres;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.concurrent.TimeUnit;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.postgres.PostgresPools;
import io.stockade.proxy.verify.TokenVerifier;

import com.zaxxer.hikari.HikariDataSource;

/**
 * A token is genuine when it is the one the lease table holds for the lease named {@code prefix + scope}: the
 * client SDK's PostgreSQL provider keeps one row per name in {@code stockade_leases(name, holder, token,
 * expires_at)} and raises the token by one on every acquisition, so the row's token is the current holder's —
 * while the lease is held: the SDK releases by setting {@code expires_at} to {@code -infinity} and keeps the row
 * (the token must never go back), and an expired lease is free for the next acquirer, so the row's token is
 * genuine only while {@code expires_at > now()}. Expiry is judged by the database's clock, as the SDK judges it.
 * A token above it was never issued; one below it belongs to an earlier holder (the fence refuses those as stale
 * before asking, once the newer holder has written). Any SQL error or timeout is {@link Unavailable}.
 */
public final class PostgresLeaseVerifier implements TokenVerifier {
    /** More time left than this is remembered as this (far above any cache ttl; keeps the nanoseconds in range). */
    private static final long DAY_MILLIS = TimeUnit.DAYS.toMillis(1);

    private final HikariDataSource pool;
    private final String query;
    private final String prefix;
    private final String table;

    private PostgresLeaseVerifier(HikariDataSource pool, TokenVerification.Postgres config) {
        this.pool = pool;
        this.table = config.table();
        // the table name was checked by the loader: lower-case identifier, optionally schema-qualified
        // the third column: the milliseconds the lease has left by the database's clock (null when infinite)
        this.query = "SELECT token, expires_at > now(), CASE WHEN isfinite(expires_at) THEN"
                + " floor((extract(epoch FROM expires_at) - extract(epoch FROM now())) * 1000)::bigint END FROM "
                + config.table() + " WHERE name = ?";
        this.prefix = config.prefix();
    }

    /**
     * Opens the pool. Does not check the table: while the database is unreachable every verdict is
     * {@link Unavailable}, and the proxy starts.
     *
     * @throws IOException when the password file cannot be read
     */
    public static PostgresLeaseVerifier open(TokenVerification.Postgres config) throws IOException {
        return new PostgresLeaseVerifier(PostgresPools.open(config.datasource(), "stockade-verify"), config);
    }

    @Override
    public Verdict verify(Claim claim) {
        String name = prefix + claim.scope();
        long sent = System.nanoTime();
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(query)) {
            ps.setString(1, name);
            try (ResultSet rs = ps.executeQuery()) {
                if (!rs.next()) {
                    return new Refused("no lease '" + name + "' in " + table);
                }
                long current = rs.getLong(1);
                if (!rs.getBoolean(2)) {
                    // released (expires_at = -infinity) or expired: nobody holds it, whatever the token
                    return new Refused("lease '" + name + "' in " + table + " expired or was released: nobody "
                            + "holds it");
                }
                if (current != claim.token()) {
                    // the holder's token stays out of the client's answer: a forger would send it back
                    return new Refused("not the token of the holder of lease '" + name + "' in " + table,
                            "the lease has token " + current);
                }
                long left = rs.getLong(3);
                return rs.wasNull() ? Genuine.noTimeLeftKnown(sent)
                        : Genuine.leaseLeft(sent, TimeUnit.MILLISECONDS.toNanos(Math.min(left, DAY_MILLIS)));
            }
        } catch (SQLException e) {
            return new Unavailable("PostgreSQL: " + PostgresPools.why(e));
        } catch (RuntimeException e) {
            return new Unavailable("PostgreSQL: " + e);
        }
    }

    @Override
    public String kind() {
        return "postgres";
    }

    @Override
    public void close() {
        pool.close();
    }
}
