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

/** Opens the fence store a policy file names. One line per store type; the token cache goes in front if enabled. */
public final class FenceStores {
    private FenceStores() {
    }

    public static FenceStore open(StoreConfig config) throws IOException {
        FenceStore store = switch (config) {
            case StoreConfig.Memory memory -> MemoryFenceStore.open(memory);
            case StoreConfig.Postgres postgres -> PostgresFenceStore.open(postgres);
            case StoreConfig.Etcd etcd -> EtcdFenceStore.open(etcd);
        };
        StoreConfig.Cache cache = config.cache();
        return cache.enabled() ? new CachingFenceStore(store, cache.maxScopes()) : store;
    }

    /** The fence-state operations of a store opened here, if its type offers them. */
    public static Optional<FenceAdmin> admin(FenceStore store) {
        return unwrapped(store) instanceof FenceAdmin a ? Optional.of(a) : Optional.empty();
    }

    /** The store behind the token cache, if there is one in front of it. */
    public static FenceStore unwrapped(FenceStore store) {
        return store instanceof CachingFenceStore c ? c.delegate() : store;
    }
}
