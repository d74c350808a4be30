package io.stockade.proxy.store.postgres;

import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceAdmin.Retired;
import io.stockade.proxy.fence.FenceState;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link FenceAdmin} on the postgres store: floors reach new scopes in the store's {@code advance} and in the
 * backend's {@code stockade_fence} function, a prefix is a plain string (no LIKE wildcards), nothing lowers a token,
 * retire needs a covering floor.
 */
class PostgresFenceStoreAdminIT {

    @Test
    void floorsRaiseAndRetireOnTheStore() throws Exception {
        try (Pg pg = Pg.create("");
             PostgresFenceStore store = PostgresFenceStore.open(PostgresFenceStoreIT.config(pg))) {
            assertEquals(new Advance.Accepted(new FenceState(-1, null)), store.advance("a/1", 5, true));
            assertEquals(5, store.raise("a/1", 2), "raise never lowers");
            assertEquals(8, store.raise("a/1", 8));
            assertEquals(Retired.NOT_COVERED, store.retire("a/1"));
            assertEquals(Retired.NOT_FOUND, store.retire("a/none"));

            assertEquals(100, store.raiseFloor("a/", 100));
            assertEquals(100, store.raiseFloor("a/", 3), "a floor never goes down");
            assertEquals(new Advance.Stale(100), store.advance("a/new", 99, true));
            assertEquals(new Advance.Stale(100), store.advance("a/new", 100, false));
            assertEquals(new Advance.Accepted(new FenceState(-1, null)), store.advance("a/new", 100, true));
            assertEquals(new Advance.Stale(100), store.advance("a/1", 50, true));
            assertEquals(new Advance.Accepted(new FenceState(-1, null)), store.advance("b/1", 1, true));

            // a prefix is not a LIKE pattern
            store.raiseFloor("x_%", 40);
            assertEquals(new Advance.Accepted(new FenceState(-1, null)), store.advance("xy", 1, true));
            assertEquals(new Advance.Stale(40), store.advance("x_%z", 39, true));

            assertEquals(List.of(new FenceAdmin.Floor("a/", 100), new FenceAdmin.Floor("x_%", 40)), store.floors());
            assertEquals(Retired.RETIRED, store.retire("a/1"));
            assertEquals(Optional.empty(), store.scope("a/1"));
            assertEquals(new Advance.Stale(100), store.advance("a/1", 9, true), "the floor fences a retired scope");

            store.raise("b/2", 7);
            List<FenceAdmin.ScopeEntry> recent = store.scopes("b/", 10);
            assertEquals(List.of("b/2", "b/1"), recent.stream().map(FenceAdmin.ScopeEntry::scope).toList());
            assertTrue(recent.get(0).activity() >= recent.get(1).activity());
            assertEquals(1, store.scopes("b/", 1).size());
            List<String> all = new ArrayList<>();
            store.forEachScope(e -> all.add(e.scope()));
            assertEquals(List.of("a/new", "b/1", "b/2", "xy"), all);
        }
    }

    /** An operator's reset lowers a scope, only from the token it was checked at (issue 46, item 5). */
    @Test
    void resetLowersAScopeByCompareAndSet() throws Exception {
        try (Pg pg = Pg.create("");
             PostgresFenceStore store = PostgresFenceStore.open(PostgresFenceStoreIT.config(pg))) {
            store.advance("r/1", Long.MAX_VALUE, true);
            assertEquals(-1, store.reset("r/none", 5, 1));
            assertEquals(Long.MAX_VALUE, store.reset("r/1", 99, 4), "not the token checked: nothing lowered");
            assertEquals(Long.MAX_VALUE, store.scope("r/1").orElseThrow().token());
            assertEquals(Long.MAX_VALUE, store.reset("r/1", Long.MAX_VALUE, 4));
            assertEquals(4, store.scope("r/1").orElseThrow().token());
            assertEquals(new Advance.Stale(4), store.advance("r/1", 3, true));
            assertEquals(new Advance.Accepted(new FenceState(4, null)), store.advance("r/1", 5, true));
            // the postgres backend's fence function reads the same row
            pg.execute("SELECT stockade_fence('r/1', 6, true, 1000)");
            assertEquals(6, pg.fence("r/1").orElseThrow());
        }
    }

    @Test
    void theBackendsFenceFunctionHonoursFloors() throws Exception {
        try (Pg pg = Pg.create("");
             PostgresFenceStore store = PostgresFenceStore.open(PostgresFenceStoreIT.config(pg))) {
            store.raiseFloor("t/", 10);
            SQLException stale = assertThrows(SQLException.class,
                    () -> pg.execute("SELECT stockade_fence('t/new', 9, true, 1000)"));
            assertEquals("SF409", stale.getSQLState());
            assertTrue(stale.getMessage().contains("10"), stale.getMessage());
            assertThrows(SQLException.class, () -> pg.execute("SELECT stockade_fence('t/new', 10, false, 1000)"));
            pg.execute("SELECT stockade_fence('t/new', 10, true, 1000)");
            assertEquals(10, pg.fence("t/new").orElseThrow());
            pg.execute("SELECT stockade_fence('u/new', 1, true, 1000)");
            assertEquals(Optional.of("10"), pg.single("SELECT stockade_fence_observe('t/other', 3)::text"));
        }
    }
}
