package io.stockade.proxy.store;

import java.io.IOException;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.store.cache.CachingFenceStore;
import io.stockade.proxy.store.etcd.EtcdFenceStore;
import io.stockade.proxy.store.memory.MemoryFenceStore;
import io.stockade.proxy.store.postgres.PostgresFenceStore;
import io.stockade.proxy.store.runs.RegisteredStore;
import io.stockade.proxy.store.runs.SharedRuns;

/**
 * Opens the fence store a policy file names. One case per store type; a shared store keeps a registry of runs
 * behind the token cache ({@link SharedRuns}); the token cache goes in front if enabled.
 */
public final class FenceStores {
    private FenceStores() {
    }

    public static FenceStore open(StoreConfig config) throws IOException {
        FenceStore store = switch (config) {
            case StoreConfig.Memory memory -> MemoryFenceStore.open(memory);
            case StoreConfig.Postgres postgres -> {
                PostgresFenceStore opened = PostgresFenceStore.open(postgres);
                yield opened.runs().<FenceStore>map(r -> new RegisteredStore(opened, new SharedRuns(r)))
                        .orElse(opened);
            }
            case StoreConfig.Etcd etcd -> {
                EtcdFenceStore opened = EtcdFenceStore.open(etcd);
                yield new RegisteredStore(opened, new SharedRuns(opened.runs()));
            }
        };
        StoreConfig.Cache cache = config.cache();
        return cache.enabled() ? new CachingFenceStore(store, cache.maxScopes()) : store;
    }

    /**
     * The fence-state operations of a store opened here, if its type offers them. Behind the token cache, a reset
     * also makes the cache forget the scope (it remembers tokens as never going down).
     */
    public static Optional<FenceAdmin> admin(FenceStore store) {
        if (!(unwrapped(store) instanceof FenceAdmin a)) {
            return Optional.empty();
        }
        return Optional.of(store instanceof CachingFenceStore cache ? new CacheForgetting(a, cache) : a);
    }

    /** A store's operations whose reset also clears the token cache's entry of the scope. */
    private record CacheForgetting(FenceAdmin admin, CachingFenceStore cache) implements FenceAdmin {
        @Override
        public Optional<ScopeEntry> scope(String scope) throws StoreUnavailableException {
            return admin.scope(scope);
        }

        @Override
        public List<ScopeEntry> scopes(String prefix, int limit) throws StoreUnavailableException {
            return admin.scopes(prefix, limit);
        }

        @Override
        public boolean listsByActivity() {
            return admin.listsByActivity();
        }

        @Override
        public void forEachScope(Consumer<ScopeEntry> sink) throws StoreUnavailableException {
            admin.forEachScope(sink);
        }

        @Override
        public List<Floor> floors() throws StoreUnavailableException {
            return admin.floors();
        }

        @Override
        public long raise(String scope, long token) throws StoreUnavailableException {
            return admin.raise(scope, token);
        }

        @Override
        public long raiseFloor(String prefix, long token) throws StoreUnavailableException {
            return admin.raiseFloor(prefix, token);
        }

        @Override
        public Retired retire(String scope) throws StoreUnavailableException {
            return admin.retire(scope);
        }

        @Override
        public long reset(String scope, long expected, long token) throws StoreUnavailableException {
            long before = admin.reset(scope, expected, token);
            cache.forget(scope);
            return before;
        }
    }

    /** The store behind the token cache and the registry of runs, where they are in front of it. */
    public static FenceStore unwrapped(FenceStore store) {
        FenceStore inner = store instanceof CachingFenceStore c ? c.delegate() : store;
        return inner instanceof RegisteredStore r ? r.delegate() : inner;
    }

    /** The registry of runs of a shared store opened here (etcd; PostgreSQL with its table), if it keeps one. */
    public static Optional<SharedRuns> runs(FenceStore store) {
        FenceStore inner = store instanceof CachingFenceStore c ? c.delegate() : store;
        return inner instanceof RegisteredStore r ? Optional.of(r.runs()) : Optional.empty();
    }
}
