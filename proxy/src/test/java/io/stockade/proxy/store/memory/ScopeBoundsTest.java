package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.nio.file.Path;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.ScopeLimitException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The memory store's bounds: a new scope over them is refused, never an eviction; a journal too large refuses. */
class ScopeBoundsTest {
    @TempDir
    Path dir;

    private MemoryFenceStore open(long maxScopes, StoreConfig.ScopeMemory memory) throws IOException {
        return MemoryFenceStore.open(new StoreConfig.Memory(dir, StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES,
                maxScopes, memory));
    }

    @Test
    void aNewScopePastMaxScopesIsRefusedAndKnownScopesGoOn() throws Exception {
        try (MemoryFenceStore store = open(3, StoreConfig.ScopeMemory.DEFAULT)) {
            for (String s : new String[] {"a", "b", "c"}) {
                assertInstanceOf(Advance.Accepted.class, store.advance(s, 5, true));
            }
            ScopeLimitException e = assertThrows(ScopeLimitException.class, () -> store.advance("d", 5, true));
            assertTrue(e.getMessage().contains("max-scopes (3)"), e.getMessage());
            assertEquals(3, store.scopeCount());
            assertTrue(store.get("d").isEmpty(), "the refused scope was not kept");
            // known scopes: raised, equal, stale, exactly as before the bound was reached
            assertInstanceOf(Advance.Accepted.class, store.advance("a", 9, true));
            assertEquals(new Advance.Stale(9), store.advance("a", 4, true));
            assertEquals(9, store.get("a").orElseThrow().token(), "no fence was forgotten");
        }
        // the bound holds after a restart: the replayed scopes count
        try (MemoryFenceStore store = open(3, StoreConfig.ScopeMemory.DEFAULT)) {
            assertEquals(3, store.scopeCount());
            assertThrows(ScopeLimitException.class, () -> store.advance("d", 5, true));
            assertEquals(new Advance.Stale(9), store.advance("a", 8, true));
        }
    }

    @Test
    void aNewScopePastMaxScopeMemoryIsRefusedAndTheMemoryStaysWithinIt() throws Exception {
        long limit = 1L << 20;
        String longName = "x".repeat(4000);
        try (MemoryFenceStore store = open(StoreConfig.Memory.UNLIMITED_SCOPES,
                new StoreConfig.ScopeMemory(limit, 0))) {
            int accepted = 0;
            ScopeLimitException refused = null;
            for (int i = 0; i < 1000 && refused == null; i++) {
                try {
                    store.advance(longName + i, 1, true);
                    accepted++;
                } catch (ScopeLimitException e) {
                    refused = e;
                }
            }
            assertTrue(refused != null, "1000 scopes of 4000 bytes fit in 1 MiB?");
            assertTrue(refused.getMessage().contains("max-scope-memory"), refused.getMessage());
            assertTrue(store.memoryUsed() <= limit, store.memoryUsed() + " > " + limit);
            // each accepted scope is counted at no less than its characters
            assertTrue(accepted > 50 && accepted < 1L * limit / 4000, "accepted " + accepted);
            assertEquals(accepted, store.scopeCount());
            assertInstanceOf(Advance.Accepted.class, store.advance(longName + 0, 2, true));
        }
    }

    @Test
    void aJournalLargerThanTheBudgetRefusesTheStartNamingTheHeapItNeeds() throws Exception {
        String longName = "y".repeat(10_000); // long names: few fsync'd advances for many bytes
        try (MemoryFenceStore store = open(StoreConfig.Memory.UNLIMITED_SCOPES, StoreConfig.ScopeMemory.DEFAULT)) {
            for (int i = 0; i < 3_000; i++) {
                store.advance(longName + i, 1, true);
            }
        }
        // ~30 MB of scopes: the replay's arena and slots go over a 16 MiB budget while it runs
        IOException e = assertThrows(IOException.class, () -> open(StoreConfig.Memory.UNLIMITED_SCOPES,
                new StoreConfig.ScopeMemory(16L << 20, 0)));
        assertTrue(e.getMessage().contains("nothing was replayed and the proxy does not start")
                && e.getMessage().contains("heap of at least"), e.getMessage());
        // with room, the same journal replays whole
        try (MemoryFenceStore store = open(StoreConfig.Memory.UNLIMITED_SCOPES,
                new StoreConfig.ScopeMemory(256L << 20, 0))) {
            assertEquals(3_000, store.scopeCount());
            assertEquals(new Advance.Stale(1), store.advance(longName + 7, 0, true));
        }
    }

    @Test
    void aJournalWhoseIncompressiblePartIsOverTheBudgetIsRefusedBeforeReading() throws Exception {
        String longName = "z".repeat(10_000);
        StoreConfig.Memory small = new StoreConfig.Memory(dir, 1L << 20, StoreConfig.Memory.UNLIMITED_SCOPES,
                StoreConfig.ScopeMemory.DEFAULT);
        try (MemoryFenceStore store = MemoryFenceStore.open(small)) {
            for (int i = 0; i < 2_000; i++) {
                store.advance(longName + i, 1, true);
            }
        }
        IOException e = assertThrows(IOException.class, () -> MemoryFenceStore.open(new StoreConfig.Memory(dir,
                1L << 20, StoreConfig.Memory.UNLIMITED_SCOPES, new StoreConfig.ScopeMemory(4L << 20, 0))));
        assertTrue(e.getMessage().contains("beyond what a compaction could remove"), e.getMessage());
    }
}
