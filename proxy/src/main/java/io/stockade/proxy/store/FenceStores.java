package io.stockade.proxy.store;

import java.io.IOException;
import java.util.Optional;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceStore;
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

    /** The fence-state operations of a store opened here, if its type offers them. */
    public static Optional<FenceAdmin> admin(FenceStore store) {
        return unwrapped(store) instanceof FenceAdmin a ? Optional.of(a) : Optional.empty();
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
