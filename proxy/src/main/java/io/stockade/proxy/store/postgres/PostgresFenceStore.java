package io.stockade.proxy.store.postgres;

import java.io.IOException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Consumer;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.RunRecords;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.postgres.PostgresPools;

import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;

/**
 * The {@code postgres} fence store: the high-water marks in {@code stockade_fences}, shared by every proxy replica
 * that names the same database. Each call is one autocommit statement, so an answer is given only after its
 * transaction committed (durable, with the server's {@code synchronous_commit}). Any SQL error or timeout is a
 * {@link StoreUnavailableException}: the caller refuses the write (fail closed).
 * <p>
 * Implements {@link FenceAdmin} too: prefix floors live in {@code stockade_floors}, and {@code stockade_advance}
 * (like the backend's {@code stockade_fence}) reads the covering floors inside the same function call, after
 * locking the table against a floor being raised ({@code stockade_raise_floor} takes an EXCLUSIVE lock on
 * {@code stockade_fences} for the moment it writes the floor). "Recent activity" is a scope's {@code updated_at}
 * (its last raise or recorded version), in microseconds since the epoch.
 */
public final class PostgresFenceStore implements FenceStore, FenceAdmin {
    private static final String ADVANCE = "SELECT accepted, token, version FROM stockade_advance(?, ?, ?)";
    private static final String GET = "SELECT token, version FROM stockade_fences WHERE scope = ?";
    private static final String RECORD = "UPDATE stockade_fences SET version = ?, updated_at = now()"
            + " WHERE scope = ? AND token = ? AND version IS DISTINCT FROM ?";
    private static final String CURRENT = "SELECT 1 FROM stockade_fences WHERE scope = ? AND token = ?";

    private static final String ACTIVITY = "(extract(epoch FROM updated_at) * 1000000)::bigint";
    private static final String SCOPE = "SELECT scope, token, version, " + ACTIVITY
            + " FROM stockade_fences WHERE scope = ?";
    private static final String SCOPES = "SELECT scope, token, version, " + ACTIVITY
            + " FROM stockade_fences WHERE starts_with(scope, ?) ORDER BY updated_at DESC, scope LIMIT ?";
    private static final String ALL = "SELECT scope, token, version, " + ACTIVITY
            + " FROM stockade_fences ORDER BY scope";
    private static final String FLOORS = "SELECT prefix, token FROM stockade_floors ORDER BY prefix";
    private static final String RAISE = "INSERT INTO stockade_fences AS f (scope, token, updated_at)"
            + " VALUES (?, ?, now())"
            + " ON CONFLICT (scope) DO UPDATE SET token = EXCLUDED.token, version = NULL, updated_at = now()"
            + " WHERE f.token < EXCLUDED.token RETURNING f.token";
    private static final String RAISE_FLOOR = "SELECT stockade_raise_floor(?, ?)";
    /** Deletes the row only if a covering floor is at or above its token; says whether the row existed. */
    private static final String RETIRE = "WITH d AS (DELETE FROM stockade_fences f WHERE f.scope = ?"
            + " AND f.token <= stockade_floor_of(f.scope) RETURNING 1)"
            + " SELECT (SELECT count(*) FROM d), EXISTS (SELECT 1 FROM stockade_fences WHERE scope = ?)";
    private static final String RESET = "UPDATE stockade_fences SET token = ?, version = NULL, updated_at = now()"
            + " WHERE scope = ? AND token = ?";
    private static final int MAX_ATTEMPTS = 5;
    private static final int FETCH = 1000;

    private final HikariDataSource pool;
    /** Whether {@link #close} closes the pool (not when the pool is a postgres backend's). */
    private final boolean ownsPool;
    /** A bound on each read from the server, for a pool opened without one (the backend's); null: the pool's. */
    private final @Nullable Duration networkTimeout;

    private PostgresFenceStore(HikariDataSource pool, boolean ownsPool, @Nullable Duration networkTimeout) {
        this.pool = pool;
        this.ownsPool = ownsPool;
        this.networkTimeout = networkTimeout;
    }

    /**
     * The fence-state operations on the fence table of a database the proxy already has a pool for: a postgres
     * backend's ({@code fence: table}), whose {@code stockade_fence} reads the same table and floors, so a raise or a
     * floor here holds for its next write as it does for the store's {@code advance}. The pool stays its owner's
     * ({@link #close} leaves it open). The backend's pool has no driver socket timeout (its transactions have a
     * watchdog), so each operation's connection gets {@code networkTimeout} for the call, which the pool resets
     * when the connection comes back.
     */
    public static FenceAdmin over(HikariDataSource pool, Duration networkTimeout) {
        return new PostgresFenceStore(pool, false, Objects.requireNonNull(networkTimeout, "networkTimeout"));
    }

    /** Opens the pool and creates (or checks) the fence table. */
    public static PostgresFenceStore open(StoreConfig.Postgres config) throws IOException {
        HikariDataSource pool = PostgresPools.open(config.datasource(), "stockade-store");
        try {
            PostgresPools.prepare(pool, config.migrate(), config.datasource().url());
            return new PostgresFenceStore(pool, true, null);
        } catch (IOException | RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /**
     * The registry of runs in this database ({@code stockade_runs}), or empty when the table is missing (a schema
     * applied by hand from an earlier {@code stockade-fences.sql}, {@code migrate: false}): then every start settles.
     * The database answered at open, so the table's absence is known, not guessed.
     */
    public Optional<RunRecords> runs() {
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(
                "SELECT to_regclass('stockade_runs') IS NOT NULL"); ResultSet r = ps.executeQuery()) {
            r.next();
            return r.getBoolean(1) ? Optional.of(new PostgresRunRecords(pool)) : Optional.empty();
        } catch (SQLException e) {
            return Optional.of(new PostgresRunRecords(pool)); // cannot tell now: keep it (writes wait for it)
        }
    }

    @Override
    public Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(ADVANCE)) {
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
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(GET)) {
            ps.setString(1, scope);
            try (ResultSet r = ps.executeQuery()) {
                return r.next() ? Optional.of(new FenceState(r.getLong(1), r.getString(2))) : Optional.empty();
            }
        } catch (SQLException e) {
            throw unavailable("get", e);
        }
    }

    @Override
    public boolean recordVersion(String scope, long token, @Nullable String version) throws StoreUnavailableException {
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(RECORD)) {
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

    // ---- FenceAdmin ----

    @Override
    public Optional<ScopeEntry> scope(String scope) throws StoreUnavailableException {
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(SCOPE)) {
            ps.setString(1, scope);
            try (ResultSet r = ps.executeQuery()) {
                return r.next() ? Optional.of(entry(r)) : Optional.empty();
            }
        } catch (SQLException e) {
            throw unavailable("scope", e);
        }
    }

    @Override
    public List<ScopeEntry> scopes(String prefix, int limit) throws StoreUnavailableException {
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(SCOPES)) {
            ps.setString(1, prefix);
            ps.setInt(2, limit);
            List<ScopeEntry> out = new ArrayList<>();
            try (ResultSet r = ps.executeQuery()) {
                while (r.next()) {
                    out.add(entry(r));
                }
            }
            return out;
        } catch (SQLException e) {
            throw unavailable("scopes", e);
        }
    }

    @Override
    public boolean listsByActivity() {
        return true;  // by updated_at: a scope's last raise or recorded version
    }

    @Override
    public void forEachScope(Consumer<ScopeEntry> sink) throws StoreUnavailableException {
        try (Connection c = connection()) {
            c.setAutoCommit(false);  // pgjdbc streams with a fetch size only inside a transaction
            try (PreparedStatement ps = c.prepareStatement(ALL)) {
                ps.setFetchSize(FETCH);
                try (ResultSet r = ps.executeQuery()) {
                    while (r.next()) {
                        sink.accept(entry(r));
                    }
                }
                c.commit();
            } finally {
                c.rollback();
                c.setAutoCommit(true);
            }
        } catch (SQLException e) {
            throw unavailable("export", e);
        }
    }

    @Override
    public List<Floor> floors() throws StoreUnavailableException {
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(FLOORS);
             ResultSet r = ps.executeQuery()) {
            List<Floor> out = new ArrayList<>();
            while (r.next()) {
                out.add(new Floor(r.getString(1), r.getLong(2)));
            }
            return out;
        } catch (SQLException e) {
            throw unavailable("floors", e);
        }
    }

    @Override
    public long raise(String scope, long token) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        checkToken(token);
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(RAISE);
             PreparedStatement q = c.prepareStatement(GET)) {
            for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
                ps.setString(1, scope);
                ps.setLong(2, token);
                try (ResultSet r = ps.executeQuery()) {
                    if (r.next()) {
                        return r.getLong(1);  // inserted or raised
                    }
                }
                // Kept: the stored token was at least as high (a fresh read; tokens only rise). Retired (and
                // perhaps recreated) meanwhile: try again.
                q.setString(1, scope);
                try (ResultSet r = q.executeQuery()) {
                    if (r.next() && r.getLong(1) >= token) {
                        return r.getLong(1);
                    }
                }
            }
        } catch (SQLException e) {
            throw unavailable("raise", e);
        }
        throw new StoreUnavailableException("postgres fence store: scope '" + scope
                + "' kept changing; raise not done");
    }

    @Override
    public long raiseFloor(String prefix, long token) throws StoreUnavailableException {
        Objects.requireNonNull(prefix, "prefix");
        checkToken(token);
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(RAISE_FLOOR)) {
            ps.setString(1, prefix);
            ps.setLong(2, token);
            try (ResultSet r = ps.executeQuery()) {
                r.next();
                return r.getLong(1);
            }
        } catch (SQLException e) {
            throw unavailable("raiseFloor", e);
        }
    }

    @Override
    public long reset(String scope, long expected, long token) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        checkToken(token);
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(RESET);
             PreparedStatement q = c.prepareStatement(GET)) {
            ps.setLong(1, token);
            ps.setString(2, scope);
            ps.setLong(3, expected);
            if (ps.executeUpdate() == 1) {
                return expected;
            }
            q.setString(1, scope);
            try (ResultSet r = q.executeQuery()) {
                return r.next() ? r.getLong(1) : -1;
            }
        } catch (SQLException e) {
            throw unavailable("reset", e);
        }
    }

    @Override
    public Retired retire(String scope) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        try (Connection c = connection(); PreparedStatement ps = c.prepareStatement(RETIRE)) {
            ps.setString(1, scope);
            ps.setString(2, scope);
            try (ResultSet r = ps.executeQuery()) {
                r.next();
                if (r.getLong(1) == 1) {
                    return Retired.RETIRED;
                }
                return r.getBoolean(2) ? Retired.NOT_COVERED : Retired.NOT_FOUND;
            }
        } catch (SQLException e) {
            throw unavailable("retire", e);
        }
    }

    private Connection connection() throws SQLException {
        Connection c = pool.getConnection();
        if (networkTimeout != null) {
            try {
                c.setNetworkTimeout(Runnable::run, (int) Math.min(Integer.MAX_VALUE, networkTimeout.toMillis()));
            } catch (SQLException | RuntimeException e) {
                c.close();
                throw e;
            }
        }
        return c;
    }

    private static ScopeEntry entry(ResultSet r) throws SQLException {
        return new ScopeEntry(r.getString(1), r.getLong(2), r.getString(3), r.getLong(4));
    }

    private static void checkToken(long token) {
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
    }

    private static StoreUnavailableException unavailable(String what, SQLException e) {
        return new StoreUnavailableException("postgres fence store: " + what + " failed: " + PostgresPools.why(e),
                e);
    }

    @Override
    public void close() {
        if (ownsPool) {
            pool.close();
        }
    }
}
