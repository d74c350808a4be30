package io.stockade.proxy.backend.postgres;

import java.io.IOException;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.ScopeShape;

/**
 * The postgres backend: with {@code fence: table} its database keeps the fence (in each write's transaction); with
 * {@code fence: column} the user's own rows do, where the proxy has nothing to show or raise.
 */
public record PostgresType(Policy policy, BackendConfig.Postgres config) implements BackendType {

    @Override
    public Backend open() throws IOException {
        return PostgresBackend.open(config, policy.scope().variables());
    }

    @Override
    public FencePlace fencePlace() {
        if (config.fence() == BackendConfig.FenceMode.COLUMN) {
            return new FencePlace.Elsewhere("keeps its fence in a token column of its own rows (postgres backend, "
                    + "fence: column): its statements compare that column with the token, so the proxy has no table "
                    + "of tokens to show, list, raise or retire, and no prefix floor applies to it",
                    "To fence a writer out, raise the token column of the row itself in the database (e.g. UPDATE"
                            + " ... SET token = GREATEST(token, N) WHERE ...), or use fence: table, whose fence "
                            + "these operations reach");
        }
        return new FencePlace.Database(config.datasource(), config.migrate());
    }

    @Override
    public ScopeShape scopes() {
        return ScopeShape.of(policy.scope());
    }
}
