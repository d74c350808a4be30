package io.stockade.proxy.store.memory;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;
import java.util.stream.Stream;

import io.stockade.policy.StoreConfig;

/**
 * Throughput of the memory fence store on this machine's disk; run by hand, not part of the build:
 * {@code java -cp proxy/target/classes:proxy/target/test-classes:policies/target/classes
 * io.stockade.proxy.store.memory.JournalBench [dir]}.
 */
public final class JournalBench {

    private JournalBench() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("scale")) {
            // bench/scale.sh: heap per scope and replay time at a given size (10 million by default)
            Path base = Files.createTempDirectory("journal-scale");
            try {
                int scopes = args.length > 1 ? Integer.parseInt(args[1]) : 10_000_000;
                if (args.length > 2 && args[2].equals("cache")) {
                    cacheMemory(base, scopes);
                } else {
                    replayAndMemory(base, scopes);
                }
            } finally {
                try (Stream<Path> files = Files.walk(base)) {
                    files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
                }
            }
            return;
        }
        Path base = args.length > 0 ? Path.of(args[0]) : Files.createTempDirectory("journal-bench");
        try {
            singleThreadedRaises(base.resolve("single"), 3);
            for (int threads : new int[] {4, 16, 64}) {
                concurrentRaises(base.resolve("threads-" + threads), threads, 3);
            }
            equalAcceptsInMemory(base.resolve("equal"));
            replayAndMemory(base.resolve("replay"), 1_000_000);
        } finally {
            try (Stream<Path> files = Files.walk(base)) {
                files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    private static MemoryFenceStore open(Path dir) throws IOException {
        return MemoryFenceStore.open(new StoreConfig.Memory(dir, StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES));
    }

    private static void singleThreadedRaises(Path dir, int seconds) throws Exception {
        try (MemoryFenceStore store = open(dir)) {
            for (int t = 0; t < 200; t++) {
                store.advance("warm", t, false);
            }
            MemoryFenceStore.Stats before = store.stats();
            long end = System.nanoTime() + seconds * 1_000_000_000L;
            long n = 0;
            long start = System.nanoTime();
            while (System.nanoTime() < end) {
                store.advance("s", n++, false);
            }
            report("1 thread, every advance a raise", store, before, n, System.nanoTime() - start);
        }
    }

    private static void concurrentRaises(Path dir, int threads, int seconds) throws Exception {
        try (MemoryFenceStore store = open(dir)) {
            LongAdder done = new LongAdder();
            AtomicBoolean stop = new AtomicBoolean();
            CountDownLatch go = new CountDownLatch(1);
            List<Thread> workers = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                String scope = "scope-" + i;
                workers.add(Thread.ofPlatform().start(() -> {
                    try {
                        go.await();
                        for (long t = 0; !stop.get(); t++) {
                            store.advance(scope, t, false);
                            done.increment();
                        }
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                }));
            }
            MemoryFenceStore.Stats before = store.stats();
            long start = System.nanoTime();
            go.countDown();
            Thread.sleep(seconds * 1000L);
            stop.set(true);
            for (Thread w : workers) {
                w.join();
            }
            report(threads + " threads, every advance a raise", store, before, done.sum(), System.nanoTime() - start);
        }
    }

    private static void equalAcceptsInMemory(Path dir) throws Exception {
        try (MemoryFenceStore store = open(dir)) {
            for (int i = 0; i < 1000; i++) {
                store.advance("scope-" + i, 5, false);
            }
            String[] scopes = new String[1000];
            for (int i = 0; i < scopes.length; i++) {
                scopes[i] = "scope-" + i;
            }
            for (int round = 0; round < 3; round++) {
                long n = 5_000_000;
                long start = System.nanoTime();
                for (long i = 0; i < n; i++) {
                    store.advance(scopes[(int) (i % scopes.length)], 5, true);
                }
                long nanos = System.nanoTime() - start;
                System.out.printf("1 thread, equal-token accepts (durable state, no journal): %.0f ns/op%n",
                        (double) nanos / n);
            }
        }
    }

    /** Writes a journal of {@code scopes} records directly, then times open() and the heap it takes. */
    private static void replayAndMemory(Path dir, int scopes) throws Exception {
        Files.createDirectories(dir);
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(Segments.path(dir, 1)), 1 << 20)) {
            for (int i = 0; i < scopes; i++) {
                out.write(RecordCodec.encode("tenant-" + (i % 100) + "/objects/key-" + i, 1_000L + i, null));
            }
        }
        long fileBytes = Files.size(Segments.path(dir, 1));
        long heapBefore = usedHeap();
        long start = System.nanoTime();
        MemoryFenceStore store = open(dir);
        long nanos = System.nanoTime() - start;
        long heapAfter = usedHeap();
        System.out.printf("replay: %,d scopes (%,d bytes) in %.0f ms; heap %.0f bytes per scope "
                        + "(scopes like \"tenant-42/objects/key-123456\")%n",
                store.stats().scopes(), fileBytes, nanos / 1e6, (double) (heapAfter - heapBefore) / scopes);
        store.close();
    }

    /** Heap per scope of the token cache (Caffeine) in front of a store that already holds the scopes. */
    private static void cacheMemory(Path dir, int scopes) throws Exception {
        Files.createDirectories(dir);
        try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(Segments.path(dir, 1)), 1 << 20)) {
            for (int i = 0; i < scopes; i++) {
                out.write(RecordCodec.encode("tenant-" + (i % 100) + "/objects/key-" + i, 1_000L + i, null));
            }
        }
        try (MemoryFenceStore store = open(dir)) {
            long before = usedHeap();
            io.stockade.proxy.store.cache.CachingFenceStore cache =
                    new io.stockade.proxy.store.cache.CachingFenceStore(store, scopes);
            long start = System.nanoTime();
            for (int i = 0; i < scopes; i++) {
                cache.advance("tenant-" + (i % 100) + "/objects/key-" + i, 1_000L + i, true); // equal: no write
            }
            long nanos = System.nanoTime() - start;
            long after = usedHeap();
            System.out.printf("token cache: %,d scopes (%,d held) filled in %.0f ms; heap %.0f bytes per cached "
                    + "scope%n", scopes, cache.size(), nanos / 1e6, (double) (after - before) / scopes);
        }
    }

    private static long usedHeap() throws InterruptedException {
        for (int i = 0; i < 3; i++) {
            System.gc();
            Thread.sleep(100);
        }
        return ManagementFactory.getMemoryMXBean().getHeapMemoryUsage().getUsed();
    }

    private static void report(String what, MemoryFenceStore store, MemoryFenceStore.Stats before, long n,
                               long nanos) {
        MemoryFenceStore.Stats after = store.stats();
        double secs = nanos / 1e9;
        long fsyncs = after.fsyncs() - before.fsyncs();
        long records = after.records() - before.records();
        System.out.printf("%-34s %,9.0f advances/s  %,7.0f fsyncs/s  %5.1f records/fsync%n",
                what + ":", n / secs, fsyncs / secs, (double) records / fsyncs);
    }
}
