package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** kill -9 of a process in the middle of advancing: every token it reported as accepted survives. */
class JournalCrashTest {

    @TempDir
    Path dir;

    @Test
    void everyTokenAcknowledgedBeforeSigkillSurvivesReopen() throws Exception {
        for (long delayMillis : new long[] {50, 300, 1200}) {
            crashOnce(dir.resolve("kill-after-" + delayMillis + "ms"), delayMillis);
        }
    }

    private void crashOnce(Path journal, long delayMillis) throws Exception {
        long start = System.nanoTime();
        Path stderr = dir.resolve("child-" + delayMillis + ".err");
        Process child = new ProcessBuilder(ProcessHandle.current().info().command().orElseThrow(),
                "-cp", System.getProperty("java.class.path"), "-Xshare:auto",
                JournalCrashChild.class.getName(), journal.toString())
                .redirectError(stderr.toFile())
                .start();
        Map<String, Long> acknowledged = new ConcurrentHashMap<>();
        CountDownLatch firstLine = new CountDownLatch(1);
        Thread reader = Thread.ofPlatform().daemon().start(() -> readLines(child.getInputStream(), acknowledged,
                firstLine));
        try {
            assertTrue(firstLine.await(8, TimeUnit.SECONDS),
                    () -> "child printed nothing: " + read(stderr));
            Thread.sleep(delayMillis);
            assertTrue(child.isAlive(), () -> "child died on its own: " + read(stderr));
            child.destroyForcibly();  // SIGKILL
            assertTrue(child.waitFor(5, TimeUnit.SECONDS));
            reader.join(TimeUnit.SECONDS.toMillis(2));  // lines already in the pipe were acknowledged too
            assertFalse(reader.isAlive());
        } finally {
            child.destroyForcibly();
        }
        assertEquals(JournalCrashChild.THREADS, acknowledged.size(), acknowledged.toString());

        Map<String, Long> reopened = new TreeMap<>();
        try (MemoryFenceStore store = MemoryFenceStoreTest.open(journal)) {
            for (Map.Entry<String, Long> e : acknowledged.entrySet()) {
                long highest = store.get(e.getKey()).orElseThrow().token();
                reopened.put(e.getKey(), highest);
                assertTrue(highest >= e.getValue(),
                        e.getKey() + ": reopened at " + highest + " below acknowledged " + e.getValue());
            }
            System.out.printf("kill after %d ms: acknowledged %s, reopened %s, %d segment(s)%n", delayMillis,
                    new TreeMap<>(acknowledged), reopened, store.stats().segments());
        }
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertTrue(elapsedMillis < 10_000, "run took " + elapsedMillis + " ms");
    }

    /** Parses complete ({@code \n}-terminated) lines only: a line cut by the kill was never fully printed. */
    private static void readLines(InputStream in, Map<String, Long> acknowledged, CountDownLatch firstLine) {
        StringBuilder line = new StringBuilder();
        try (in) {
            int c;
            while ((c = in.read()) >= 0) {
                if (c != '\n') {
                    line.append((char) c);
                    continue;
                }
                String[] parts = line.toString().split(" ");
                acknowledged.merge(parts[0], Long.parseLong(parts[1]), Math::max);
                line.setLength(0);
                firstLine.countDown();
            }
        } catch (IOException e) {
            // the pipe closes when the child dies
        }
    }

    private static String read(Path p) {
        try {
            return Files.readString(p);
        } catch (IOException e) {
            return e.toString();
        }
    }
}
