package io.stockade.proxy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.testing.ChildProxy;
import io.stockade.proxy.testing.Racers;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three proxy processes share one etcd. Writers race with interleaved tokens (holders, takeovers, zombies); the
 * history of what each writer was told is checked per scope against what the storage applied, in order.
 */
@RequiresTools(Tools.Tool.ETCD)
class EtcdReplicasIT {
    static final int REPLICAS = 3;
    static final int WRITERS = 12;
    static final int OPS_PER_WRITER = 30;
    static EtcdServer etcd;

    @TempDir
    Path dir;

    @BeforeAll
    static void startEtcd() {
        etcd = EtcdServer.single();
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    /** Atomic class (If-Match upstream): any writer may go through any replica, the storage settles the race. */
    @Test
    void threeReplicasInFrontOfAnAtomicBackend() throws Exception {
        try (TestUpstream upstream = TestUpstream.start()) {
            List<ChildProxy> replicas = startReplicas(upstream, "conditional: if-match");
            try {
                History history = new History();
                race(history, "docs/race", i -> replicas.get(i % REPLICAS).baseUri().resolve("/docs/race"));
                check(history, upstream, List.of("docs/race"));
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    /**
     * Serialized class (plain HTTP upstream) with the documented deployment: a load balancer routes each scope to one
     * replica (consistent hashing, docs/replicas.md). Three scopes race at once, each through its own replica.
     */
    @Test
    void threeReplicasSerializedWithEachScopeRoutedToOneReplica() throws Exception {
        try (TestUpstream upstream = TestUpstream.start()) {
            List<ChildProxy> replicas = startReplicas(upstream, "settle: 50ms");
            Thread.sleep(100);
            try {
                History history = new History();
                List<String> scopes = List.of("docs/a", "docs/b", "docs/c");
                ExecutorService pool = Executors.newFixedThreadPool(scopes.size());
                List<Future<?>> runs = new ArrayList<>();
                for (String scope : scopes) {
                    // the load balancer's choice: one replica per scope
                    ChildProxy owner = replicas.get(Math.floorMod(scope.hashCode(), REPLICAS));
                    runs.add(pool.submit(() -> {
                        race(history, scope, i -> owner.baseUri().resolve("/" + scope));
                        return null;
                    }));
                }
                for (Future<?> f : runs) {
                    f.get();
                }
                pool.shutdown();
                check(history, upstream, scopes);
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    /** A replica is killed -9 while writes go through it: no acknowledged write lost, no stale accept after. */
    @Test
    void aReplicaKilledMidWriteLosesNoAcknowledgedWriteAndAcceptsNothingStale() throws Exception {
        try (TestUpstream upstream = TestUpstream.start()) {
            upstream.delayWrites(java.time.Duration.ofMillis(5));
            List<ChildProxy> replicas = startReplicas(upstream, "conditional: if-match");
            try {
                History history = new History();
                Thread killer = new Thread(() -> {
                    try {
                        Thread.sleep(400);
                    } catch (InterruptedException e) {
                        return;
                    }
                    replicas.getFirst().kill9();
                });
                killer.start();
                race(history, "docs/k", i -> replicas.get(i % REPLICAS).baseUri().resolve("/docs/k"));
                killer.join();
                assertTrue(!replicas.getFirst().isAlive());
                // after the kill: the survivors still refuse every stale token (same history, higher leases)
                race(history, "docs/k", i -> replicas.get(1 + i % 2).baseUri().resolve("/docs/k"));
                check(history, upstream, List.of("docs/k"));
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    private List<ChildProxy> startReplicas(TestUpstream upstream, String backendOption) throws Exception {
        String prefix = "/replicas/" + UUID.randomUUID() + "/";
        List<ChildProxy> replicas = new ArrayList<>();
        for (int i = 0; i < REPLICAS; i++) {
            Path config = dir.resolve("replica-" + i + ".yaml");
            Files.writeString(config, """
                    server:
                      port: 0
                    store:
                      type: etcd
                      endpoints: %s
                      prefix: %s
                      timeout: 2s
                    policies:
                      - name: docs
                        match:
                          path: /docs/{id}
                        scope: docs/{id}
                        backend:
                          type: http
                          url: %s
                          %s
                    """.formatted(etcd.endpoints(), prefix, upstream.baseUri(), backendOption));
            replicas.add(ChildProxy.start(config, List.of("-Xmx256m")));
        }
        return replicas;
    }

    private static void check(History history, TestUpstream upstream, List<String> scopes) {
        Map<String, String> last = new HashMap<>();
        Map<String, List<String>> applied = new HashMap<>();
        for (String scope : scopes) {
            last.put(scope, upstream.contentText("/" + scope).orElse(null));
            applied.put(scope, upstream.appliedBodies("/" + scope));
        }
        HistoryChecker.Result result = HistoryChecker.check(history, last, applied);
        assertTrue(result.ok(), result.toString());
    }

    /** {@link #WRITERS} writers on one scope; writer {@code w} sends its n-th request to {@code target(w + n)}. */
    static void race(History history, String scope, IntFunction<URI> target) throws Exception {
        AtomicLong lease = new AtomicLong(1 + history.ops().stream().mapToLong(History.Op::token).max().orElse(0));
        Racers.race(history, WRITERS, OPS_PER_WRITER, (writer, n) -> {
            long token = Racers.token(lease);
            return new Racers.Write(scope, target.apply(writer + n), token,
                    scope + "-w" + writer + "-n" + n + "-t" + token + "-" + UUID.randomUUID());
        });
    }
}
