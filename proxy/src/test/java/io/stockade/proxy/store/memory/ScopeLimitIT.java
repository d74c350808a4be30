package io.stockade.proxy.store.memory;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.stockade.testing.ChildProxy;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The hostile-load report's first item, replayed as it was found: a client sends writes of new scopes with
 * 4000-byte names to a proxy with a 64 MiB heap. Before the bound, the heap ran out, the process stayed up answering
 * every request (liveness included) with 400, and a restart with the same heap died replaying the journal. Now the
 * store refuses new scopes past {@code max-scope-memory} (503 {@code scope-limit}), the process stays whole, known
 * scopes keep their fences, a restart with the same heap replays, and one with too small a heap refuses to start
 * naming the heap it needs.
 */
class ScopeLimitIT {
    private static final String NAME = "n".repeat(3990);

    @TempDir
    Path dir;

    @Test
    void newScopesPastTheBoundAre503AndTheProxyNeverRunsOutOfHeap() throws Exception {
        Path config = dir.resolve("stockade.yaml");
        // an upstream nobody listens on: every admitted write answers 502 after its token was made durable, so
        // the store grows exactly as it would with a real upstream
        Files.writeString(config, """
                server: {host: 127.0.0.1, port: 0}
                store: {type: memory, journal: %s}
                policies:
                  - name: s
                    match: {path: "/s/{name}"}
                    scope: "s/{name}"
                    backend: {type: http, url: "http://127.0.0.1:%d", settle: 200ms}
                """.formatted(dir.resolve("journal"), FreePorts.next()));
        Map<Integer, AtomicInteger> statuses = new ConcurrentHashMap<>();
        try (ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx64m"))) {
            URI base = proxy.baseUri();
            Thread.sleep(300); // past the serialized class's settle time after a start
            ExecutorService pool = Executors.newFixedThreadPool(8);
            try {
                List<Future<?>> sent = new ArrayList<>();
                for (int t = 0; t < 8; t++) {
                    int thread = t;
                    sent.add(pool.submit(() -> {
                        for (int i = thread; i < 6000; i += 8) {
                            Http.Response r = Http.put(base.resolve("/s/" + NAME + i), "v", Map.of("Fencing-Token",
                                    "5"));
                            statuses.computeIfAbsent(r.status(), k -> new AtomicInteger()).incrementAndGet();
                            if (r.status() == 503) {
                                assertTrue(r.body().contains("urn:stockade:problem:scope-limit"), r.body()
                                        .substring(0, 200));
                                assertTrue(r.header("Retry-After").isPresent());
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : sent) {
                    f.get(5, TimeUnit.MINUTES);
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(java.util.Set.of(502, 503), statuses.keySet(), "only admitted (502: no upstream) or refused"
                    + " for the bound (503): " + statuses);
            assertTrue(statuses.get(503).get() > 500, "the bound was reached: " + statuses);
            assertTrue(proxy.isAlive(), "the proxy exited:\n" + proxy.log());
            assertFalse(proxy.log().contains("OutOfMemoryError"), proxy.log());
            assertEquals(200, Http.get(base.resolve("/health/live")).status());
            // a scope the store holds keeps its fence: a lower token is refused, its own token still admitted
            assertEquals(409, Http.put(base.resolve("/s/" + NAME + 0), "z", Map.of("Fencing-Token", "4")).status());
            assertEquals(502, Http.put(base.resolve("/s/" + NAME + 0), "v", Map.of("Fencing-Token", "6")).status());
            String metrics = Http.get(base.resolve("/metrics")).body();
            assertTrue(metrics.contains("outcome=\"scope_limit\""), "counted as scope_limit");
            assertTrue(metrics.contains("stockade_store_scope_memory_limit_bytes"), "the bound is a metric");
        }
        // a restart with the same heap replays what was admitted
        try (ChildProxy restarted = ChildProxy.start(config, List.of("-Xmx64m"))) {
            URI base = restarted.baseUri();
            Thread.sleep(300);
            assertEquals(409, Http.put(base.resolve("/s/" + NAME + 0), "z", Map.of("Fencing-Token", "5")).status());
            assertEquals(409, Http.put(base.resolve("/s/" + NAME + 8), "z", Map.of("Fencing-Token", "4")).status());
        }
        // with too small a heap it refuses to start, naming the heap it needs, and never runs out of it
        ChildProxy.Exit small = ChildProxy.runToExit(config, List.of("-Xmx24m"), Duration.ofSeconds(60));
        assertEquals(1, small.code(), small.output());
        assertTrue(small.output().contains("heap of at least") && !small.output().contains("OutOfMemoryError"),
                small.output());
    }
}
