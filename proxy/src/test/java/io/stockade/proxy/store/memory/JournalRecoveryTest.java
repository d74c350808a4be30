package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reopening a journal after torn writes, corruption and compaction. */
class JournalRecoveryTest {

    /** Every record written by {@link #writeTen}: 8 header + 17 fixed + 3 scope bytes. */
    private static final int RECORD = 28;

    @TempDir
    Path dir;

    private Path segment(long seq) {
        return Segments.path(dir, seq);
    }

    /** Ten raises of scopes s00..s09 to tokens 100..109, one record each, in segment 1. */
    private void writeTen() throws Exception {
        try (MemoryFenceStore store = MemoryFenceStoreTest.open(dir)) {
            for (int i = 0; i < 10; i++) {
                store.advance(String.format("s%02d", i), 100 + i, false);
            }
        }
        assertEquals(10L * RECORD, Files.size(segment(1)));
    }

    private static void assertTen(MemoryFenceStore store, int complete) throws Exception {
        for (int i = 0; i < 10; i++) {
            Optional<FenceState> s = store.get(String.format("s%02d", i));
            assertEquals(i < complete ? Optional.of(new FenceState(100 + i, null)) : Optional.empty(), s, "s" + i);
        }
    }

    private void appendAfterRecoveryAndReopen(int complete) throws Exception {
        try (MemoryFenceStore store = MemoryFenceStoreTest.open(dir)) {
            assertTen(store, complete);
            assertEquals(new Advance.Accepted(new FenceState(-1, null)), store.advance("after", 1, false));
        }
        try (MemoryFenceStore store = MemoryFenceStoreTest.open(dir)) {
            assertTen(store, complete);
            assertEquals(1, store.get("after").orElseThrow().token());
        }
    }

    // ---- torn tails -----------------------------------------------------------------------------------------

    @Test
    void garbageAfterTheLastRecordIsTruncatedAway() throws Exception {
        writeTen();
        Files.write(segment(1), "garbage garbage garbage".getBytes(), StandardOpenOption.APPEND);
        List<LogRecord> logged = new CopyOnWriteArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord r) {
                logged.add(r);
            }

            @Override
            public void flush() {
            }

            @Override
            public void close() {
            }
        };
        Logger log = Logger.getLogger(Segments.class.getName());
        log.addHandler(handler);
        try (MemoryFenceStore store = MemoryFenceStoreTest.open(dir)) {
            assertTen(store, 10);
        } finally {
            log.removeHandler(handler);
        }
        assertTrue(logged.stream().anyMatch(r -> r.getLevel() == Level.WARNING
                && r.getMessage().contains("journal-0000000000000001.log: torn record at offset " + 10 * RECORD)
                && r.getMessage().contains("truncating the last 23 bytes")
                // issue 46: the replay cannot know whether the torn record was acknowledged, and says so
                && r.getMessage().contains("the replay cannot tell whether this one's did")
                && !r.getMessage().contains("never acknowledged")), logged.toString());
        assertEquals(10L * RECORD, Files.size(segment(1)), "the torn tail was truncated on open");
        appendAfterRecoveryAndReopen(10);
    }

    @Test
    void aZeroFilledTailIsTruncatedAway() throws Exception {
        writeTen();
        Files.write(segment(1), new byte[4096], StandardOpenOption.APPEND);  // what a power loss can leave
        appendAfterRecoveryAndReopen(10);
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 4, 7, 8, 9, 20, RECORD - 1})
    void aLastRecordCutMidwayIsDroppedAndEveryCompleteOneKept(int keptBytesOfLast) throws Exception {
        writeTen();
        try (RandomAccessFile f = new RandomAccessFile(segment(1).toFile(), "rw")) {
            f.setLength(9L * RECORD + keptBytesOfLast);
        }
        appendAfterRecoveryAndReopen(9);
    }

    // ---- corruption that is not a torn tail -----------------------------------------------------------------

    @Test
    void corruptionInANonLastSegmentFailsOpenNamingTheFileAndOffset() throws Exception {
        writeTen();
        flipByte(segment(1), 4L * RECORD + 12);  // inside the payload of record 4
        Files.createFile(segment(2));
        byte[] before = Files.readAllBytes(segment(1));
        IOException e = assertThrows(IOException.class, () -> MemoryFenceStoreTest.open(dir));
        assertTrue(e.getMessage().contains("journal-0000000000000001.log"), e.getMessage());
        assertTrue(e.getMessage().contains("offset " + 4 * RECORD), e.getMessage());
        assertTrue(e.getMessage().contains("checksum"), e.getMessage());
        assertEquals(List.of(before.length), List.of(Files.readAllBytes(segment(1)).length), "nothing truncated");
    }

    @Test
    void aTruncatedNonLastSegmentFailsOpen() throws Exception {
        writeTen();
        try (RandomAccessFile f = new RandomAccessFile(segment(1).toFile(), "rw")) {
            f.setLength(10L * RECORD - 3);
        }
        Files.createFile(segment(2));
        IOException e = assertThrows(IOException.class, () -> MemoryFenceStoreTest.open(dir));
        assertTrue(e.getMessage().contains("journal-0000000000000001.log"), e.getMessage());
    }

    @Test
    void aBadRecordFollowedByValidOnesInTheLastSegmentFailsOpen() throws Exception {
        writeTen();
        flipByte(segment(1), 2L * RECORD + 20);
        IOException e = assertThrows(IOException.class, () -> MemoryFenceStoreTest.open(dir));
        assertTrue(e.getMessage().contains("journal-0000000000000001.log"), e.getMessage());
        assertTrue(e.getMessage().contains("offset " + 2 * RECORD), e.getMessage());
        assertTrue(e.getMessage().contains("not a torn tail"), e.getMessage());
        assertEquals(10L * RECORD, Files.size(segment(1)), "nothing truncated");
    }

    @Test
    void aDamagedLengthFieldIsCaughtByTheChecksum() throws Exception {
        writeTen();
        // Record 3's length 20 -> 48: it would swallow record 4 and look complete; the CRC covers the length.
        flipByte(segment(1), 3L * RECORD + 3, (byte) 0x30);
        Files.createFile(segment(2));
        IOException e = assertThrows(IOException.class, () -> MemoryFenceStoreTest.open(dir));
        assertTrue(e.getMessage().contains("offset " + 3 * RECORD), e.getMessage());
    }

    private static void flipByte(Path file, long offset) throws IOException {
        flipByte(file, offset, (byte) 0x5a);
    }

    private static void flipByte(Path file, long offset, byte xor) throws IOException {
        try (RandomAccessFile f = new RandomAccessFile(file.toFile(), "rw")) {
            f.seek(offset);
            int b = f.read();
            f.seek(offset);
            f.write(b ^ xor);
        }
    }

    // ---- compaction -----------------------------------------------------------------------------------------

    @Test
    void compactionUnderConcurrentWritersKeepsExactlyTheFinalState() throws Exception {
        int threads = 8;
        int perThread = 3_000;
        int scopes = 50;
        Map<String, Long> accepted = new ConcurrentHashMap<>();  // the highest token any caller saw accepted
        Map<String, FenceState> finalState = new HashMap<>();
        MemoryFenceStore.Stats stats;
        StoreConfig.Memory config = new StoreConfig.Memory(dir, 4096);
        try (MemoryFenceStore store = MemoryFenceStore.open(config)) {
            CountDownLatch go = new CountDownLatch(1);
            List<Future<?>> done = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
                for (int i = 0; i < threads; i++) {
                    done.add(pool.submit(() -> {
                        go.await();
                        ThreadLocalRandom r = ThreadLocalRandom.current();
                        for (int j = 0; j < perThread; j++) {
                            String scope = "scope-" + r.nextInt(scopes);
                            long token = j + r.nextInt(200);
                            if (store.advance(scope, token, r.nextBoolean()) instanceof Advance.Accepted) {
                                accepted.merge(scope, token, Math::max);
                                if (r.nextInt(3) == 0) {
                                    store.recordVersion(scope, token, "etag-" + token + "-" + j);
                                }
                            }
                        }
                        return null;
                    }));
                }
                go.countDown();
                for (Future<?> f : done) {
                    f.get(120, TimeUnit.SECONDS);
                }
            }
            for (String scope : accepted.keySet()) {
                finalState.put(scope, store.get(scope).orElseThrow());
            }
            stats = store.stats();
        }
        System.out.println("compaction: " + stats);
        assertTrue(stats.compactions() > 0, stats.toString());
        assertFalse(Files.exists(segment(1)), "the first segment was compacted away");
        List<Segments.Segment> left = Segments.list(dir);
        assertEquals(1, left.size(), left.toString());
        assertTrue(Files.size(left.getFirst().path()) < 3 * 4096 + scopes * 64L, "segment stays small");

        try (MemoryFenceStore store = MemoryFenceStore.open(config)) {
            assertEquals(accepted.size(), store.stats().scopes());
            for (Map.Entry<String, Long> e : accepted.entrySet()) {
                FenceState s = store.get(e.getKey()).orElseThrow();
                assertEquals(e.getValue(), s.token(), e.getKey() + ": highest accepted token");
                assertEquals(finalState.get(e.getKey()), s, e.getKey() + ": state before close");
            }
        }
    }

    /**
     * The race the compaction barrier closes: {@code compute} queues a record before it installs the new value. If
     * the writer wrote that record to the old segment and snapshotted the map before the value was installed, the
     * snapshot would miss it and deleting the old segment would lose an acknowledged raise.
     */
    @Test
    void compactionWaitsForAnUpdateWhoseRecordIsQueuedButWhoseValueIsNotInstalledYet() throws Exception {
        // 3 records of 28 bytes stay under 100 bytes; the 4th crosses it and compacts right after its fsync.
        StoreConfig.Memory config = new StoreConfig.Memory(dir, 100);
        try (MemoryFenceStore store = MemoryFenceStore.open(config)) {
            for (int i = 0; i < 3; i++) {
                store.advance(String.format("s%02d", i), 1, false);
            }
            assertEquals(0, store.stats().compactions());
            store.afterQueueingRaise = scope -> {
                long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(500);
                // Without the barrier the compaction finishes in here, with "vic" not yet in the map.
                while (store.stats().compactions() == 0 && System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                }
            };
            store.advance("vic", 7, false);
            store.afterQueueingRaise = null;
            store.advance("s00", 2, false);  // after the compaction: the writer is done with it
            assertEquals(1, store.stats().compactions());
        }
        assertFalse(Files.exists(segment(1)));
        try (MemoryFenceStore store = MemoryFenceStore.open(config)) {
            assertEquals(Optional.of(new FenceState(7, null)), store.get("vic"));
            assertEquals(2, store.get("s00").orElseThrow().token());
        }
    }

    @Test
    void aSnapshotLargerThanTheThresholdDoesNotCompactOnEveryBatch() throws Exception {
        StoreConfig.Memory config = new StoreConfig.Memory(dir, 1024);
        try (MemoryFenceStore store = MemoryFenceStore.open(config)) {
            for (int i = 0; i < 500; i++) {  // ~16 KiB of state, 16x the threshold
                store.advance("scope-" + i, 1, false);
            }
            long before = store.stats().compactions();
            for (int t = 2; t < 12; t++) {    // 10 small records: ~300 bytes, under the threshold
                store.advance("scope-0", t, false);
            }
            assertTrue(store.stats().compactions() <= before + 1, store.stats().toString());
        }
        try (MemoryFenceStore store = MemoryFenceStore.open(config)) {
            assertEquals(500, store.stats().scopes());
            assertEquals(11, store.get("scope-0").orElseThrow().token());
        }
    }
}
