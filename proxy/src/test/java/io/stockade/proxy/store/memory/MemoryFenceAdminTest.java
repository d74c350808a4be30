package io.stockade.proxy.store.memory;

import java.nio.file.Path;
import java.util.List;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceAdmin;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Floors, raise, retire and listing in the memory store, across reopen (the journal keeps them). */
class MemoryFenceAdminTest {
    @TempDir
    Path dir;

    MemoryFenceStore open() throws Exception {
        return MemoryFenceStore.open(new StoreConfig.Memory(dir, StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES));
    }

    @Test
    void floorsKeptOverSeveralOpens() throws Exception {
        try (MemoryFenceStore s = open()) {
            s.advance("docs/a/1", 5, true);
            s.raiseFloor("docs/z/", 9);
        }
        try (MemoryFenceStore s = open()) {
            s.raiseFloor("docs/a/", 20);
        }
        try (MemoryFenceStore s = open()) {
            assertEquals(FenceAdmin.Retired.RETIRED, s.retire("docs/a/1"));
        }
        try (MemoryFenceStore s = open()) {
            assertEquals(2, s.floors().size(), s.floors().toString());
            assertEquals(new Advance.Stale(20, true), s.advance("docs/a/1", 19, true));
        }
    }

    @Test
    void floorsRaisesAndRetirementsSurviveReopenAndNothingGoesDown() throws Exception {
        try (MemoryFenceStore s = open()) {
            assertInstanceOf(Advance.Accepted.class, s.advance("a/1", 5, true));
            assertEquals(5, s.raise("a/1", 2));
            assertEquals(30, s.raiseFloor("a/", 30));
            assertEquals(30, s.raiseFloor("a/", 10));
            assertEquals(new Advance.Stale(30, true), s.advance("a/new", 29, true));
            assertEquals(new Advance.Stale(30, true), s.advance("a/new", 30, false));
            assertInstanceOf(Advance.Accepted.class, s.advance("a/new", 30, true));
            assertEquals(FenceAdmin.Retired.NOT_FOUND, s.retire("zzz"));
            assertInstanceOf(Advance.Accepted.class, s.advance("b/1", 3, true));
            assertEquals(FenceAdmin.Retired.NOT_COVERED, s.retire("b/1"));
            assertEquals(FenceAdmin.Retired.RETIRED, s.retire("a/1"));
        }
        try (MemoryFenceStore s = open()) {
            assertEquals(List.of(new FenceAdmin.Floor("a/", 30)), s.floors());
            assertTrue(s.scope("a/1").isEmpty());
            assertEquals(new Advance.Stale(30, true), s.advance("a/1", 6, true));
            assertEquals(3, s.scope("b/1").orElseThrow().token());
            assertEquals(List.of("a/new", "b/1"), s.scopes("", 10).stream().map(FenceAdmin.ScopeEntry::scope)
                    .sorted().toList());
        }
    }

    /** An operator's reset (issue 46, item 5) is a compare-and-set, journaled: a reopen replays it, not the max. */
    @Test
    void aResetLowersByCompareAndSetAndSurvivesReopen() throws Exception {
        try (MemoryFenceStore s = open()) {
            s.advance("r/1", Long.MAX_VALUE, true);
            assertEquals(-1, s.reset("r/none", 1, 0));
            assertEquals(Long.MAX_VALUE, s.reset("r/1", 7, 4), "not the token checked: nothing lowered");
            assertEquals(Long.MAX_VALUE, s.scope("r/1").orElseThrow().token());
            assertEquals(Long.MAX_VALUE, s.reset("r/1", Long.MAX_VALUE, 4));
            assertEquals(new Advance.Stale(4), s.advance("r/1", 3, true));
        }
        try (MemoryFenceStore s = open()) {
            assertEquals(4, s.scope("r/1").orElseThrow().token());
            assertInstanceOf(Advance.Accepted.class, s.advance("r/1", 5, true));
        }
        try (MemoryFenceStore s = open()) {
            assertEquals(5, s.scope("r/1").orElseThrow().token());
        }
    }
}
