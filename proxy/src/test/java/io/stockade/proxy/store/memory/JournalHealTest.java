package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.StoreUnavailableException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 46, item 4: a journal that failed on I/O heals by itself once the disk takes writes again, without a
 * restart and without ever losing or lowering an acknowledged fence; until then every call refuses, and after
 * {@code heal-within} the store says it has not healed ({@code /health/live}). The faults are injected in the
 * channels ({@link FaultyChannel}); JournalHealIT makes a real full filesystem and a real read-only one.
 */
class JournalHealTest {
    private static final FenceState NEVER = new FenceState(-1, null);

    @TempDir
    Path dir;

    private MemoryFenceStore open(Journal.ChannelOpener opener, Duration healWithin) throws IOException {
        return MemoryFenceStore.open(new StoreConfig.Memory(dir, StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES,
                StoreConfig.Memory.UNLIMITED_SCOPES, StoreConfig.ScopeMemory.DEFAULT, healWithin), opener);
    }

    @Test
    void aWriteFailureHealsOnceTheDiskTakesWritesAgainAndKeepsEveryAcknowledgedFence() throws Exception {
        FaultyChannel.Faults faults = new FaultyChannel.Faults();
        long a;
        try (MemoryFenceStore store = open(faults, Duration.ofMillis(1))) {
            store.advance("a", 1, false);
            store.recordVersion("a", 1, "v1");
            store.advance("c", 7, false);
            faults.failWrite = true;
            StoreUnavailableException e =
                    assertThrows(StoreUnavailableException.class, () -> store.advance("a", 2, false));
            assertTrue(e.getMessage().contains("injected write failure"), e.getMessage());
            // While the disk refuses, every call refuses (a heal is tried, and fails, meanwhile) ...
            assertThrows(StoreUnavailableException.class, () -> store.advance("b", 1, false));
            assertThrows(StoreUnavailableException.class, () -> store.get("c"));
            // ... and past heal-within the store says so, for /health/live.
            String unhealed = awaitUnhealed(store, "injected write failure");
            assertTrue(unhealed.contains("has not healed within heal-within"), unhealed);

            faults.failWrite = false;
            assertEquals(new Advance.Accepted(NEVER), awaitAdvance(store, "b", 1));
            assertEquals(Optional.empty(), store.unhealed());
            assertEquals(1, store.journalHeals());
            assertEquals(0.0, store.journalFailedSeconds());
            // The acknowledged fences hold. Token 2 of "a" was never acknowledged; it may stand (the heal makes
            // every state in memory durable), never anything below 1.
            a = store.get("a").orElseThrow().token();
            assertTrue(a == 1 || a == 2, "a is at " + a);
            assertEquals(new Advance.Stale(a), store.advance("a", 0, true));
            assertEquals(new FenceState(7, null), store.get("c").orElseThrow());
            assertEquals(new Advance.Stale(7), store.advance("c", 6, true));
            // and writes go on, through a compaction too
            assertEquals(new Advance.Accepted(new FenceState(7, null)), store.advance("c", 8, false));
        }
        try (MemoryFenceStore again = open(Journal.ChannelOpener.DEFAULT, Duration.ofSeconds(30))) {
            assertEquals(a, again.get("a").orElseThrow().token());
            assertEquals(new FenceState(1, null), again.get("b").orElseThrow());
            assertEquals(new FenceState(8, null), again.get("c").orElseThrow());
        }
    }

    @Test
    void anFsyncFailureFailsTheWaitersThenHealsWithTheirStateDurable() throws Exception {
        FaultyChannel.Faults faults = new FaultyChannel.Faults();
        try (MemoryFenceStore store = open(faults, Duration.ofSeconds(30));
             ExecutorService pool = Executors.newVirtualThreadPerTaskExecutor()) {
            store.advance("durable", 3, false);
            faults.forceGate = new CountDownLatch(1);
            Future<Advance> raise = pool.submit(() -> store.advance("s", 5, false));
            assertTrue(faults.forceArrived.await(10, TimeUnit.SECONDS));
            faults.failForce = true;
            faults.forceGate.countDown();
            faults.forceGate = null;
            Exception e = assertThrows(Exception.class, () -> raise.get(10, TimeUnit.SECONDS));
            assertTrue(e.getCause() instanceof StoreUnavailableException, e.toString());
            assertThrows(StoreUnavailableException.class, () -> store.advance("durable", 3, true));
            assertEquals(Optional.empty(), store.unhealed(), "within heal-within: still healing, alive");

            faults.failForce = false; // a new file's fsync succeeds; the failed one is never retried
            assertEquals(new Advance.Accepted(new FenceState(3, null)), awaitAdvance(store, "durable", 3));
            // The raise that failed was never acknowledged; the heal made it durable (never lower than asked).
            assertEquals(new Advance.Stale(5), store.advance("s", 4, true));
        }
        try (MemoryFenceStore again = open(Journal.ChannelOpener.DEFAULT, Duration.ofSeconds(30))) {
            assertEquals(3, again.get("durable").orElseThrow().token());
            assertEquals(5, again.get("s").orElseThrow().token());
        }
    }

    /** An operator's reset on disk lowers its scope on purpose: the heal's check takes it as covering the past. */
    @Test
    void aJournalWithAResetHeals() throws Exception {
        FaultyChannel.Faults faults = new FaultyChannel.Faults();
        try (MemoryFenceStore store = open(faults, Duration.ofSeconds(30))) {
            store.advance("a", Long.MAX_VALUE, false);
            assertEquals(Long.MAX_VALUE, store.reset("a", Long.MAX_VALUE, 4));
            faults.failWrite = true;
            assertThrows(StoreUnavailableException.class, () -> store.advance("b", 1, false));
            faults.failWrite = false;
            assertEquals(new Advance.Accepted(new FenceState(4, null)), awaitAdvance(store, "a", 5));
        }
        try (MemoryFenceStore again = open(Journal.ChannelOpener.DEFAULT, Duration.ofSeconds(30))) {
            assertEquals(5, again.get("a").orElseThrow().token());
        }
    }

    /** A heal never writes a state lower than the disk's: a record on disk memory does not cover stops it. */
    @Test
    void aJournalWhoseDiskHoldsMoreThanMemoryDoesNotHealInPlace() throws Exception {
        FaultyChannel.Faults faults = new FaultyChannel.Faults();
        try (MemoryFenceStore store = open(faults, Duration.ofMillis(1))) {
            store.advance("a", 1, false);
            faults.failWrite = true;
            assertThrows(StoreUnavailableException.class, () -> store.advance("a", 2, false));
            // What no code path of the store makes: a record on disk above the state in memory.
            Files.write(Segments.path(dir, 1), RecordCodec.encode("a", 99, null), StandardOpenOption.APPEND);
            faults.failWrite = false;
            String unhealed = awaitUnhealed(store, "scopes on disk are higher than the state in memory");
            assertTrue(unhealed.contains("a at 99"), unhealed);
            assertThrows(StoreUnavailableException.class, () -> store.advance("b", 1, false));
        }
        try (MemoryFenceStore again = open(Journal.ChannelOpener.DEFAULT, Duration.ofSeconds(30))) {
            assertEquals(99, again.get("a").orElseThrow().token(), "a restart replays the disk: never lower");
        }
    }

    private static String awaitUnhealed(MemoryFenceStore store, String containing) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        Optional<String> why = store.unhealed();
        while ((why.isEmpty() || !why.get().contains(containing)) && System.nanoTime() < deadline) {
            Thread.sleep(10);
            why = store.unhealed();
        }
        assertTrue(why.isPresent() && why.get().contains(containing), "unhealed: " + why);
        return why.get();
    }

    /** Advances once the journal has healed (the store refuses until then), within 10 s. */
    private static Advance awaitAdvance(MemoryFenceStore store, String scope, long token) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (true) {
            try {
                return store.advance(scope, token, true);
            } catch (StoreUnavailableException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(10);
            }
        }
    }
}
