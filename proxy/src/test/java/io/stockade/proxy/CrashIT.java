package io.stockade.proxy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.testing.ChildProxy;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The durable high-water mark: the proxy runs as a child process, is killed with SIGKILL in the middle of a
 * stream of accepted writes, and after a restart a token below the last acknowledged one is still refused.
 */
class CrashIT {
    @TempDir
    Path dir;

    @Test
    void killMinus9NeverLowersTheHighestToken() throws Exception {
        Path config = dir.resolve("stockade.yaml");
        Files.writeString(config, """
                server:
                  host: 127.0.0.1
                  port: 0
                store:
                  type: memory
                  journal: %s
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    backend:
                      type: file
                      root: %s
                """.formatted(dir.resolve("journal"), dir.resolve("files")));

        long floor = 0;
        for (int round = 0; round < 3; round++) {
            long lastAcked;
            ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx128m"));
            try {
                lastAcked = streamUntilKilled(proxy, floor, 400 + 300L * round);
            } finally {
                proxy.close();
            }
            assertTrue(lastAcked > floor, "round " + round + ": no write was acknowledged before the kill");

            try (ChildProxy restarted = ChildProxy.start(config, List.of("-Xmx128m"))) {
                URI uri = restarted.baseUri().resolve("/files/report.txt");
                Http.Response stale = Http.put(uri, "zombie", Map.of("Fencing-Token", Long.toString(lastAcked - 1)));
                assertEquals(409, stale.status(), "round " + round + ": " + stale.body());
                long highest = highest(stale.body());
                assertTrue(highest >= lastAcked, "round " + round + ": highest " + highest
                        + " after restart is below the last acknowledged token " + lastAcked);
                // Acknowledged writes are durable: the file holds the last acknowledged write or a later one
                // (a write admitted just before the kill may have landed without its answer reaching us).
                long inFile = Long.parseLong(Http.get(uri).body().substring(1));
                assertTrue(inFile >= lastAcked && inFile <= highest,
                        "round " + round + ": file holds t" + inFile + ", acked " + lastAcked + ", highest " + highest);
                floor = highest;
            }
        }
    }

    /** Writes with rising tokens from several threads until the child is killed; returns the highest acked token. */
    private static long streamUntilKilled(ChildProxy proxy, long floor, long killAfterMillis) throws Exception {
        URI uri = proxy.baseUri().resolve("/files/report.txt");
        AtomicLong next = new AtomicLong(floor + 1);
        AtomicLong acked = new AtomicLong(floor);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> writers = new java.util.ArrayList<>();
            for (int i = 0; i < 4; i++) {
                writers.add(pool.submit(() -> {
                    while (!Thread.currentThread().isInterrupted()) {
                        long token = next.getAndIncrement();
                        try {
                            Http.Response r = Http.put(uri, "t" + token, Map.of("Fencing-Token", Long.toString(token)));
                            if (r.status() / 100 == 2) {
                                acked.accumulateAndGet(token, Math::max);
                            }
                        } catch (Exception e) {
                            return; // the proxy is gone
                        }
                    }
                }));
            }
            // Kill in the middle of the stream: after some acknowledged writes (a loaded machine may need longer
            // than killAfterMillis to get there), and at a different point each round.
            long deadline = System.nanoTime() + java.time.Duration.ofSeconds(20).toNanos();
            Thread.sleep(killAfterMillis);
            while (acked.get() < floor + 10 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            proxy.kill9();
            for (Future<?> f : writers) {
                f.get(15, TimeUnit.SECONDS);
            }
            return acked.get();
        } finally {
            pool.shutdownNow();
        }
    }

    private static long highest(String problem) {
        Matcher m = Pattern.compile("\"highest\":(\\d+)").matcher(problem);
        assertTrue(m.find(), problem);
        return Long.parseLong(m.group(1));
    }
}
