package io.stockade.proxy.store.etcd;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.store.cache.CachingFenceStore;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Http;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** etcd going away under a running proxy: outages, restarts, a lost cluster member, and the token cache. */
@RequiresTools(Tools.Tool.ETCD)
class EtcdFaultsIT {
    static final String YAML = TestPolicies.docsOverHttpOn("""
            store:
              type: etcd
              endpoints: ${ETCD}
              prefix: /faults/
              timeout: 1s
            """, "conditional: if-match");

    @TempDir
    Path dir;

    @BeforeEach
    void needEtcd() {
    }

    static Http.Response put(ProxyFixture proxy, String path, String body, long token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    /** Writers keep going while etcd is killed and started again; the proxy is never restarted. */
    @Test
    void etcdKilledAndRestartedUnderLoad() throws Exception {
        try (EtcdServer etcd = EtcdServer.single(); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), YAML,
                     Map.of("ETCD", etcd.endpoints(), "UPSTREAM", upstream.baseUri().toString()))) {
            History history = new History();
            AtomicLong lease = new AtomicLong(1);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicInteger unavailable = new AtomicInteger();
            AtomicInteger okAfterRestart = new AtomicInteger();
            AtomicBoolean restarted = new AtomicBoolean();
            ExecutorService pool = Executors.newFixedThreadPool(6);
            List<Future<?>> writers = new ArrayList<>();
            for (int w = 0; w < 6; w++) {
                int writer = w;
                writers.add(pool.submit(() -> {
                    int n = 0;
                    while (!stop.get()) {
                        double dice = Math.random();
                        long token = dice < 0.2 ? lease.incrementAndGet()
                                : dice < 0.4 ? Math.max(0, lease.get() - 2) : lease.get();
                        String value = "w" + writer + "-n" + (n++) + "-t" + token;
                        History.Op op = history.invoke("docs/x", token, value);
                        try {
                            Http.Response r = Http.put(proxy.uri("/docs/x"), value,
                                    Map.of("Fencing-Token", Long.toString(token)));
                            if (r.status() / 100 == 2) {
                                op.ok(r.status());
                                if (restarted.get()) {
                                    okAfterRestart.incrementAndGet();
                                }
                            } else if (r.status() == 409 || r.status() == 412) {
                                op.fail(r.status());
                            } else if (r.status() == 503) {
                                // refused before anything was forwarded: no trace (the fence may have risen)
                                op.fail(r.status());
                                unavailable.incrementAndGet();
                            } else {
                                op.unknown("status " + r.status());
                            }
                        } catch (Exception e) {
                            op.unknown(e.toString());
                        }
                        Thread.sleep(2);
                    }
                    return null;
                }));
            }
            Thread.sleep(700);
            etcd.kill(0);
            Thread.sleep(2500);
            int during = unavailable.get();
            etcd.restart(0);
            restarted.set(true);
            long deadline = System.nanoTime() + 20_000_000_000L;
            while (okAfterRestart.get() < 20 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            stop.set(true);
            for (Future<?> f : writers) {
                f.get();
            }
            pool.shutdown();
            assertTrue(during > 0, "no 503 while etcd was down");
            assertTrue(okAfterRestart.get() >= 20, "writes did not recover after etcd came back: "
                    + okAfterRestart.get());
            HistoryChecker.Result result = HistoryChecker.check(history,
                    Map.of("docs/x", upstream.contentText("/docs/x").orElse(null)),
                    Map.of("docs/x", upstream.appliedBodies("/docs/x")));
            assertTrue(result.ok(), result.toString());
        }
    }

    /** The token cache answers stale tokens while the store is gone; anything it cannot refuse is a 503. */
    @Test
    void withTheStoreStoppedTheCacheRefusesStaleTokensAndFreshOnesGet503() throws Exception {
        try (EtcdServer etcd = EtcdServer.single(); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), YAML,
                     Map.of("ETCD", etcd.endpoints(), "UPSTREAM", upstream.baseUri().toString()))) {
            assertEquals(2, put(proxy, "/docs/c", "v10", 10).status() / 100);
            etcd.kill(0);
            Http.Response stale = put(proxy, "/docs/c", "v9", 9);
            assertEquals(409, stale.status(), stale.body());
            assertTrue(stale.body().contains("\"highest\":10"), stale.body());
            Http.Response fresh = put(proxy, "/docs/c", "v11", 11);
            assertEquals(503, fresh.status(), fresh.body());
            Http.Response equal = put(proxy, "/docs/c", "v10b", 10);
            assertEquals(503, equal.status(), "an equal token needs the store: " + equal.body());
            assertEquals("v10", upstream.contentText("/docs/c").orElseThrow());
            CachingFenceStore cache = (CachingFenceStore) proxy.server().store();
            assertTrue(cache.hits() >= 1, "hits " + cache.hits());
            String metrics = Http.get(proxy.uri("/metrics")).body();
            assertTrue(metrics.contains("stockade_token_cache_hits_total"), metrics);
            assertTrue(metrics.contains("stockade_token_cache_evictions_total"), metrics);
        }
    }

    /**
     * A deadline below jetcd's default retry delay (500 ms): jetcd refuses a retry budget that is not above its
     * retry delay, and every call failed with "maxDuration must be > the delay" (every write a 503). The delay is
     * now derived from the deadline, so 300 ms decides like any other deadline.
     */
    @Test
    void aTimeoutBelowJetcdsRetryDelayStillDecides() throws Exception {
        try (EtcdServer etcd = EtcdServer.single(); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), YAML.replace("timeout: 1s", "timeout: 300ms"),
                     Map.of("ETCD", etcd.endpoints(), "UPSTREAM", upstream.baseUri().toString()))) {
            // the very first call also connects (and loads gRPC) on a busy machine: it may miss 300 ms, once
            Http.Response first = put(proxy, "/docs/short", "v1", 1);
            for (int i = 0; i < 20 && first.status() == 503; i++) {
                Thread.sleep(100);
                first = put(proxy, "/docs/short", "v1", 1);
            }
            assertEquals(2, first.status() / 100, first.body());
            Http.Response second = put(proxy, "/docs/short", "v2", 2);
            assertEquals(2, second.status() / 100, second.body());
            assertEquals("v2", upstream.contentText("/docs/short").orElseThrow());
            // the store recorded the fence
            assertEquals(2, proxy.server().store().get("docs/short").orElseThrow().token());
            Http.Response stale = put(proxy, "/docs/short", "v0", 0);
            assertEquals(409, stale.status(), stale.body());
        }
    }

    /** Three members; the one holding nothing special is stopped: the quorum keeps deciding. */
    @Test
    void aThreeMemberClusterWithOneMemberStoppedKeepsServing() throws Exception {
        try (EtcdServer etcd = EtcdServer.cluster(3); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), YAML,
                     Map.of("ETCD", etcd.endpoints(), "UPSTREAM", upstream.baseUri().toString()))) {
            assertEquals(2, put(proxy, "/docs/q", "v1", 1).status() / 100);
            for (int stopped = 0; stopped < 3; stopped++) {
                etcd.kill(stopped);
                // a few 503s while the client notices the member is gone are allowed; then it must serve
                int consecutive = 0;
                long token = 10L * (stopped + 2);
                long deadline = System.nanoTime() + 15_000_000_000L;
                while (consecutive < 20 && System.nanoTime() < deadline) {
                    Http.Response r = put(proxy, "/docs/q", "v" + token, token);
                    consecutive = r.status() / 100 == 2 ? consecutive + 1 : 0;
                    token++;
                }
                assertTrue(consecutive >= 20, "no steady service with member " + stopped + " stopped");
                assertEquals(409, put(proxy, "/docs/q", "old", 1).status());
                etcd.restart(stopped);
            }
        }
    }

}
