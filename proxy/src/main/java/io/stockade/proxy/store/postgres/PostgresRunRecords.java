package io.stockade.proxy.store.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import io.stockade.proxy.fence.RunRecords;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.postgres.PostgresPools;

import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;

/**
 * The registry of runs in {@code stockade_runs} ({@code stockade-fences.sql}): a row per run ({@code beat} rises at
 * each heartbeat), and the row with the empty name marking the registry as started. Each call one autocommit
 * statement.
 */
final class PostgresRunRecords implements RunRecords {
    private static final String EXISTS = "SELECT EXISTS (SELECT 1 FROM stockade_runs WHERE run = '')";
    private static final String LIST = "SELECT run, beat, settle_ms FROM stockade_runs WHERE run <> ''";
    private static final String BEAT = "INSERT INTO stockade_runs AS r (run, beat, settle_ms) VALUES ('', 0, 0),"
            + " (?, 1, ?) ON CONFLICT (run) DO UPDATE SET beat = r.beat + 1, settle_ms = EXCLUDED.settle_ms,"
            + " updated_at = now() WHERE r.run <> ''";
    private static final String REMOVE = "DELETE FROM stockade_runs WHERE run = ? AND run <> ''";
    private static final String REMOVE_IF = "DELETE FROM stockade_runs WHERE run = ? AND beat = ? AND run <> ''";

    private final HikariDataSource pool;

    PostgresRunRecords(HikariDataSource pool) {
        this.pool = pool;
    }

    @Override
    public boolean exists() throws StoreUnavailableException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(EXISTS);
             ResultSet r = ps.executeQuery()) {
            r.next();
            return r.getBoolean(1);
        } catch (SQLException e) {
            throw unavailable("reading the registry of runs", e);
        }
    }

    @Override
    public Map<String, Run> list() throws StoreUnavailableException {
        Map<String, Run> found = new LinkedHashMap<>();
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(LIST);
             ResultSet r = ps.executeQuery()) {
            while (r.next()) {
                found.put(r.getString(1), new Run(r.getLong(2), Duration.ofMillis(r.getLong(3))));
            }
            return found;
        } catch (SQLException e) {
            throw unavailable("listing the runs", e);
        }
    }

    @Override
    public void beat(String run, Duration settle) throws StoreUnavailableException {
        update(BEAT, "recording this run", run, settle.toMillis());
    }

    @Override
    public void remove(String run) throws StoreUnavailableException {
        update(REMOVE, "removing this run's record", run, null);
    }

    @Override
    public void removeIf(String run, long version) throws StoreUnavailableException {
        update(REMOVE_IF, "removing a dead run's record", run, version);
    }

    private void update(String sql, String what, String run, @Nullable Long number) throws StoreUnavailableException {
        try (Connection c = pool.getConnection(); PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, run);
            if (number != null) {
                ps.setLong(2, number);
            }
            ps.executeUpdate();
        } catch (SQLException e) {
            throw unavailable(what, e);
        }
    }

    private static StoreUnavailableException unavailable(String what, SQLException e) {
        return new StoreUnavailableException("postgres fence store: " + what + " failed: " + PostgresPools.why(e), e);
    }
}
