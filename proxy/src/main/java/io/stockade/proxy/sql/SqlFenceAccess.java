package io.stockade.proxy.sql;

import java.io.IOException;
import java.util.Objects;

import io.stockade.policy.Datasource;
import io.stockade.policy.SqlConfig;
import io.stockade.proxy.admin.FenceRouting;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.postgres.PostgresPools;
import io.stockade.proxy.store.postgres.PostgresFenceStore;

import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;

/**
 * The admin API's way into the SQL listener's fence table ({@code /admin/fences} on the {@code sql} policies'
 * scopes). The fence role owns the table and cannot log in, and the listener holds no login of its own (it relays
 * each client's), so the proxy needs one: {@code sql.admin-datasource}, a login that is a member of the fence role.
 * Each of its connections runs {@code SET ROLE <fence-role>; SET search_path = <schema>}, as {@code stockade sql
 * fence} does, so the postgres store's own statements run on {@code <schema>.stockade_fences} and
 * {@code stockade_floors}: a raise or a floor holds for the triggers' next check. The pool (at most two connections)
 * opens when a call first reaches it and closes with the listener. Without {@code sql.admin-datasource} the
 * {@code sql} policies' scopes are refused with the reason (docs/sql.md, docs/admin-api.md).
 */
final class SqlFenceAccess implements FenceRouting.SqlFence, AutoCloseable {
    private final SqlConfig config;
    /** Opened by the first {@link #open}; null until then. */
    private @Nullable HikariDataSource pool;
    private @Nullable FenceAdmin admin;
    private boolean closed;

    SqlFenceAccess(SqlConfig config) {
        this.config = config;
    }

    @Override
    public @Nullable String unreachable() {
        return config.admin() != null ? null : "keeps its fence in the SQL listener's database (" + config.schema()
                + ".stockade_fences in database '" + config.database().name() + "'), which the proxy reaches only"
                + " with a login of its own: the fence role '" + config.fenceRole() + "' cannot log in, and"
                + " sql.admin-datasource is not set";
    }

    @Override
    public String instead() {
        return "Set sql.admin-datasource to a login that is a member of the fence role (CREATE ROLE stockade_admin"
                + " LOGIN ...; GRANT " + config.fenceRole() + " TO stockade_admin), or run bin/stockade sql fence"
                + " --config FILE OPERATION";
    }

    @Override
    public synchronized FenceAdmin open() throws StoreUnavailableException {
        if (closed) {
            throw new StoreUnavailableException("the SQL listener is closed");
        }
        if (admin == null) {
            // FenceRouting opens the SQL fence table only when unreachable() is null: sql.admin-datasource is set
            Datasource ds = Objects.requireNonNull(config.admin(), "open() without sql.admin-datasource");
            Datasource small = new Datasource(ds.url(), ds.user(), ds.password(), ds.passwordFile(),
                    Math.min(2, ds.poolSize()), ds.statementTimeout(), ds.connectTimeout(), ds.statements());
            try {
                pool = PostgresPools.open(small, "stockade-sql-admin", true, "SET ROLE " + config.fenceRole()
                        + "; SET search_path = " + config.schema());
            } catch (IOException e) {
                throw new StoreUnavailableException("cannot open sql.admin-datasource: " + e.getMessage(), e);
            }
            admin = PostgresFenceStore.over(pool, ds.statementTimeout().plusSeconds(5));
        }
        return admin;
    }

    @Override
    public synchronized void close() {
        closed = true;
        if (pool != null) {
            pool.close();
        }
    }
}
