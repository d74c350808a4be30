package io.stockade.proxy.store;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.store.memory.MemoryFenceStore;
import io.stockade.proxy.store.postgres.PostgresFenceStore;

import java.io.IOException;

/** Opens the fence store a policy file names. One line per store type. */
public final class FenceStores {
    private FenceStores() {
    }

    public static FenceStore open(StoreConfig config) throws IOException {
        return switch (config) {
            case StoreConfig.Memory memory -> MemoryFenceStore.open(memory);
            case StoreConfig.Postgres postgres -> PostgresFenceStore.open(postgres);
        };
    }
}
