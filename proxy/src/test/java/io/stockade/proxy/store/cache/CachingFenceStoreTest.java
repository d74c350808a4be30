package io.stockade.proxy.store.cache;

import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;

class CachingFenceStoreTest {
    /** A store that can be switched off; counts calls. */
    static final class Fake implements FenceStore {
        final Map<String, Long> tokens = new HashMap<>();
        boolean down;
        int calls;

        @Override
        public synchronized Advance advance(String scope, long token, boolean acceptEqual)
                throws StoreUnavailableException {
            calls++;
            if (down) {
                throw new StoreUnavailableException("down");
            }
            long h = tokens.getOrDefault(scope, -1L);
            if (token > h || token == h && acceptEqual) {
                tokens.put(scope, Math.max(h, token));
                return new Advance.Accepted(new FenceState(h, null));
            }
            return new Advance.Stale(h);
        }

        @Override
        public Optional<FenceState> get(String scope) {
            return Optional.empty();
        }

        @Override
        public boolean recordVersion(String scope, long token, String version) {
            return false;
        }

        @Override
        public void close() {
        }
    }

    @Test
    void staleTokensAreRefusedFromTheCacheAndEverythingElseAsksTheStore() throws Exception {
        Fake store = new Fake();
        CachingFenceStore cache = new CachingFenceStore(store, 100);
        assertInstanceOf(Advance.Accepted.class, cache.advance("s", 10, true));
        store.down = true;
        assertEquals(new Advance.Stale(10), cache.advance("s", 9, true));
        assertEquals(new Advance.Stale(10), cache.advance("s", 10, false));
        assertEquals(2, cache.hits());
        assertThrows(StoreUnavailableException.class, () -> cache.advance("s", 10, true));  // equal: the store decides
        assertThrows(StoreUnavailableException.class, () -> cache.advance("s", 11, true));
        assertThrows(StoreUnavailableException.class, () -> cache.advance("other", 1, true));
    }

    @Test
    void anEvictionOnlyCostsARoundTripNeverAnAccept() throws Exception {
        Fake store = new Fake();
        CachingFenceStore cache = new CachingFenceStore(store, 1);
        for (int i = 0; i < 50; i++) {
            cache.advance("s" + i, 100, true);
        }
        assertEquals(true, cache.evictions() > 0, "evictions " + cache.evictions());
        for (int i = 0; i < 50; i++) {
            assertEquals(new Advance.Stale(100), cache.advance("s" + i, 99, true));
        }
    }

    @Test
    void theCachedValueOnlyRises() throws Exception {
        Fake store = new Fake();
        CachingFenceStore cache = new CachingFenceStore(store, 100);
        cache.advance("s", 20, true);
        cache.advance("s", 5, true);   // stale, answered from the cache
        int before = store.calls;
        assertEquals(new Advance.Stale(20), cache.advance("s", 19, true));
        assertEquals(before, store.calls);
    }
}
