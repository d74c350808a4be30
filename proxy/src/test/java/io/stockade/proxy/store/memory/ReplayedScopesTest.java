package io.stockade.proxy.store.memory;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceState;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link ReplayedScopes}, the compact table a replay builds, against a plain map fed the same records; and the store
 * on top of it: every operation on scopes that come from the replay, across reopens and a compaction.
 */
class ReplayedScopesTest {
    @TempDir
    Path dir;

    private static byte[] utf8(String s) {
        return s.getBytes(StandardCharsets.UTF_8);
    }

    private record Expected(long token, String version) {
    }

    @Test
    void theTableAgreesWithAMapFedTheSameRecordsThroughGrowthRetiresAndFreeze() {
        Random random = new Random(42);
        ReplayedScopes table = new ReplayedScopes(16); // far too small: it must grow
        Map<String, Expected> model = new HashMap<>();
        for (int i = 0; i < 200_000; i++) {
            String scope = "t-" + random.nextInt(50_000) + (random.nextInt(10) == 0 ? "/ü/日本" : "");
            byte[] padded = utf8("xx" + scope + "yy"); // the scope sits inside a larger buffer, as in a replay
            int len = utf8(scope).length;
            if (random.nextInt(20) == 0) {
                table.retire(padded, 2, len);
                model.remove(scope);
                continue;
            }
            long token = random.nextInt(1000);
            String version = random.nextBoolean() ? null : "v" + i;
            table.put(padded, 2, len, token, version);
            Expected old = model.get(scope);
            if (old == null || token >= old.token()) { // the later record wins an equal token
                model.put(scope, new Expected(token, version));
            }
        }
        table.freeze();
        assertEquals(model.size(), table.size());
        for (Map.Entry<String, Expected> e : model.entrySet()) {
            int slot = table.slotOf(utf8(e.getKey()));
            assertTrue(slot >= 0, e.getKey());
            assertEquals(e.getValue().token(), table.tokenAt(slot), e.getKey());
            assertEquals(e.getValue().version(), table.versionAt(slot), e.getKey());
        }
        Map<String, Expected> listed = new HashMap<>();
        table.forEach((scope, token, version) -> listed.put(scope, new Expected(token, version)));
        assertEquals(model, listed);
        assertEquals(-1, table.slotOf(utf8("never-seen")));
        assertThrows(IllegalStateException.class, () -> table.put(utf8("late"), 0, 4, 1, null));
    }

    @Test
    void aRetiredScopeIsGoneUntilALaterStateBringsItBackWithThatStatesToken() {
        ReplayedScopes table = new ReplayedScopes(4);
        byte[] k = utf8("docs/a/1");
        table.put(k, 0, k.length, 9, "e9");
        table.retire(k, 0, k.length);
        assertEquals(0, table.size());
        table.put(k, 0, k.length, 3, null); // lower than before the retire: a retire resets the scope
        table.freeze();
        assertEquals(1, table.size());
        assertEquals(3, table.tokenAt(table.slotOf(k)));
    }

    private MemoryFenceStore open(long compactAfterBytes) throws Exception {
        return MemoryFenceStore.open(new StoreConfig.Memory(dir, compactAfterBytes));
    }

    @Test
    void everyOperationOnReplayedScopesAgreesWithTheStoreBeforeTheReopen() throws Exception {
        try (MemoryFenceStore s = open(StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES)) {
            for (int i = 0; i < 1000; i++) {
                s.advance("docs/a/" + i, 10 + i, false);
            }
            s.recordVersion("docs/a/1", 11, "\"etag-1\"");
            s.raiseFloor("docs/a/9", 5_000);
            assertEquals(FenceAdmin.Retired.RETIRED, s.retire("docs/a/9"));
            s.advance("other/x", 7, false);
        }
        try (MemoryFenceStore s = open(StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES)) {
            assertEquals(1000, s.stats().scopes()); // 1000 + other/x - docs/a/9
            assertEquals(Optional.of(new FenceState(11, "\"etag-1\"")), s.get("docs/a/1"));
            assertEquals(Optional.empty(), s.get("docs/a/9"));
            assertEquals(Optional.of(new FenceState(7, null)), s.get("other/x"));

            // a stale and an equal token against a replayed scope, without changing it
            assertInstanceOf(Advance.Stale.class, s.advance("docs/a/2", 11, false));
            assertInstanceOf(Advance.Accepted.class, s.advance("docs/a/2", 12, true));
            // the floor still covers the retired scope
            assertInstanceOf(Advance.Stale.class, s.advance("docs/a/9", 4_999, true));
            // a raise of a replayed scope, then its version
            assertEquals(new Advance.Accepted(new FenceState(13, null)), s.advance("docs/a/3", 20, false));
            assertTrue(s.recordVersion("docs/a/3", 20, "\"v20\""));
            assertTrue(s.recordVersion("docs/a/1", 11, "\"etag-1b\""));
            // retiring a replayed scope (covered by a floor) hides it; the count follows
            s.raiseFloor("docs/a/4", 100);
            assertEquals(FenceAdmin.Retired.RETIRED, s.retire("docs/a/4"));
            assertEquals(Optional.empty(), s.get("docs/a/4"));
            assertEquals(999, s.stats().scopes());
            assertEquals(FenceAdmin.Retired.NOT_COVERED, s.retire("docs/a/5"));
            // listings see replayed and changed scopes once each
            List<FenceAdmin.ScopeEntry> listed = s.scopes("docs/a/", 10_000);
            assertEquals(998, listed.size());
            assertEquals(1, listed.stream().filter(e -> e.scope().equals("docs/a/3")).count());
            assertEquals(20, listed.stream().filter(e -> e.scope().equals("docs/a/3")).findFirst().orElseThrow()
                    .token());
            long[] seen = {0};
            s.forEachScope(e -> seen[0]++);
            assertEquals(999, seen[0]);
            // a scope new since the open, retired again, is gone from the count too
            s.advance("docs/a/new", 1, false);
            s.raiseFloor("docs/a/new", 1);
            assertEquals(FenceAdmin.Retired.RETIRED, s.retire("docs/a/new"));
            assertEquals(999, s.stats().scopes());
        }
        // compaction writes replayed and changed scopes into one snapshot; a third open sees the same
        try (MemoryFenceStore s = open(1)) {
            assertEquals(999, s.stats().scopes());
            s.advance("trigger/compaction", 1, false);
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (s.stats().compactions() == 0 && System.nanoTime() < deadline) {
                s.advance("trigger/compaction", s.get("trigger/compaction").orElseThrow().token() + 1, false);
            }
            assertTrue(s.stats().compactions() > 0, "no compaction");
        }
        try (MemoryFenceStore s = open(StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES)) {
            assertEquals(1000, s.stats().scopes()); // 999 + trigger/compaction
            assertEquals(Optional.of(new FenceState(20, "\"v20\"")), s.get("docs/a/3"));
            assertEquals(Optional.of(new FenceState(11, "\"etag-1b\"")), s.get("docs/a/1"));
            assertEquals(Optional.of(new FenceState(12, null)), s.get("docs/a/2"));
            assertEquals(Optional.empty(), s.get("docs/a/4"));
            assertEquals(Optional.empty(), s.get("docs/a/9"));
            assertEquals(Optional.of(new FenceState(15, null)), s.get("docs/a/5"));
            assertEquals(1, s.stats().segments());
        }
    }
}
