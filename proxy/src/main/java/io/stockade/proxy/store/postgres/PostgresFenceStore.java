package io.stockade.proxy.store.postgres;

import com.zaxxer.hikari.HikariDataSource;
import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.postgres.PostgresPools;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Objects;
import java.util.Optional;

/**
 * The {@code postgres} fence store: the high-water marks in {@code stockade_fences}, shared by every proxy replica
 * that names the same database. Each call is one autocommit statement, so an answer is given only after its
 * transaction committed (durable, with the server's {@code synchronous_commit}). Any SQL error or timeout is a
 * {@link StoreUnavailableException}: the caller refuses the write (fail closed).
 */
public final class PostgresFenceStore implements FenceStore {
    private static final String ADVANCE = "SELECT accepted, token, version FROM stockade_advance(?, ?, ?)";
    private static final String GET = "SELECT token, version FROM stockade_fences WHERE scope = ?";
    private static final String RECORD = "UPDATE stockade_fences SET version = ?, updated_at = now()"
            + " WHERE scope = ? AND token = ? AND version IS DISTINCT FROM ?";
    private static final String CURRENT = "SELECT 1 FROM stockade_fences WHERE scope = ? AND token = ?";

    private final HikariDataSource pool;

    private PostgresFenceStore(HikariDataSource pool) {
        this.pool = pool;
    }

    /** Opens the pool and creates (or checks) the fence table. */
    public static PostgresFenceStore open(StoreConfig.Postgres config) throws IOException {
        HikariDataSource pool = PostgresPools.open(config.datasource(), "stockade-store");
        try {
            PostgresPools.prepare(pool, config.migrate(), config.datasource().url());
            return new PostgresFenceStore(pool);
        } catch (IOException | RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    @Override
    public Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(ADVANCE)) {
            ps.setString(1, scope);
            ps.setLong(2, token);
            ps.setBoolean(3, acceptEqual);
            try (ResultSet r = ps.executeQuery()) {
                r.next();
                if (r.getBoolean(1)) {
                    return new Advance.Accepted(new FenceState(r.getLong(2), r.getString(3)));
                }
                return new Advance.Stale(r.getLong(2));
            }
        } catch (SQLException e) {
            throw unavailable("advance", e);
        }
    }

    @Override
    public Optional<FenceState> get(String scope) throws StoreUnavailableException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(GET)) {
            ps.setString(1, scope);
            try (ResultSet r = ps.executeQuery()) {
                return r.next() ? Optional.of(new FenceState(r.getLong(1), r.getString(2))) : Optional.empty();
            }
        } catch (SQLException e) {
            throw unavailable("get", e);
        }
    }

    @Override
    public boolean recordVersion(String scope, long token, String version) throws StoreUnavailableException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(RECORD)) {
            ps.setString(1, version);
            ps.setString(2, scope);
            ps.setLong(3, token);
            ps.setString(4, version);
            if (ps.executeUpdate() == 1) {
                return true;
            }
            try (PreparedStatement q = c.prepareStatement(CURRENT)) { // already recorded, or a higher token?
                q.setString(1, scope);
                q.setLong(2, token);
                try (ResultSet r = q.executeQuery()) {
                    return r.next();
                }
            }
        } catch (SQLException e) {
            throw unavailable("recordVersion", e);
        }
    }

    private static StoreUnavailableException unavailable(String what, SQLException e) {
        return new StoreUnavailableException("postgres fence store: " + what + " failed: " + e.getMessage()
                + " (SQLSTATE " + e.getSQLState() + ")", e);
    }

    @Override
    public void close() {
        pool.close();
    }
}
