package io.stockade.proxy.store.etcd;

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

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

import static io.stockade.proxy.testing.Racers.raceOnReplicas;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Three proxy processes share one etcd. Writers race with interleaved tokens (holders, takeovers, zombies); the
 * history of what each writer was told is checked per scope against what the storage applied, in order.
 */
@RequiresTools(Tools.Tool.ETCD)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class EtcdReplicasIT {
    static final int REPLICAS = 3;
    static EtcdServer etcd;
    static TestUpstream upstream;
    /** One set of replicas for the class (child JVMs are the slow part), each test on scopes of its own. */
    static List<ChildProxy> replicas = List.of();

    @TempDir
    static Path dir;

    @BeforeAll
    static void start() throws Exception {
        etcd = EtcdServer.single();
        upstream = TestUpstream.start();
        replicas = startReplicas();
    }

    @AfterAll
    static void stop() throws Exception {
        replicas.forEach(ChildProxy::close);
        if (upstream != null) {
            upstream.close();
        }
        if (etcd != null) {
            etcd.close();
        }
    }

    /** Atomic class (If-Match upstream): any writer may go through any replica, the storage settles the race. */
    @Test
    @Order(1)
    void threeReplicasInFrontOfAnAtomicBackend() throws Exception {
        History history = new History();
        raceOnReplicas(history, "atomic/race", i -> replicas.get(i % REPLICAS).baseUri().resolve("/atomic/race"));
        check(history, upstream, List.of("atomic/race"));
    }

    /**
     * Serialized class (plain HTTP upstream) with the documented deployment: a load balancer routes each scope to one
     * replica (consistent hashing, docs/replicas.md). Three scopes race at once, each through its own replica.
     */
    @Test
    @Order(2)
    void threeReplicasSerializedWithEachScopeRoutedToOneReplica() throws Exception {
        History history = new History();
        List<String> scopes = List.of("docs/a", "docs/b", "docs/c");
        ExecutorService pool = Executors.newFixedThreadPool(scopes.size());
        List<Future<?>> runs = new ArrayList<>();
        for (String scope : scopes) {
            // the load balancer's choice: one replica per scope
            ChildProxy owner = replicas.get(Math.floorMod(scope.hashCode(), REPLICAS));
            runs.add(pool.submit(() -> {
                raceOnReplicas(history, scope, i -> owner.baseUri().resolve("/" + scope));
                return null;
            }));
        }
        for (Future<?> f : runs) {
            f.get();
        }
        pool.shutdown();
        check(history, upstream, scopes);
    }

    /**
     * A replica is killed -9 while writes go through it: no acknowledged write lost, no stale accept after. Last: it
     * leaves the class two replicas.
     */
    @Test
    @Order(3)
    void aReplicaKilledMidWriteLosesNoAcknowledgedWriteAndAcceptsNothingStale() throws Exception {
        upstream.delayWrites(java.time.Duration.ofMillis(5));
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
        raceOnReplicas(history, "atomic/k", i -> replicas.get(i % REPLICAS).baseUri().resolve("/atomic/k"));
        killer.join();
        assertTrue(!replicas.getFirst().isAlive());
        // after the kill: the survivors still refuse every stale token (same history, higher leases)
        raceOnReplicas(history, "atomic/k", i -> replicas.get(1 + i % 2).baseUri().resolve("/atomic/k"));
        check(history, upstream, List.of("atomic/k"));
    }

    /**
     * Three replicas on one etcd prefix, started at once: the policy {@code atomic} in front of the upstream's
     * If-Match (the atomic class), {@code docs} without it (the serialized class).
     */
    private static List<ChildProxy> startReplicas() throws Exception {
        String prefix = "/replicas/" + UUID.randomUUID() + "/";
        Path config = dir.resolve("replica.yaml");
        Files.writeString(config, """
                server:
                  port: 0
                store:
                  type: etcd
                  endpoints: %s
                  prefix: %s
                  timeout: 2s
                policies:
                  - name: atomic
                    match:
                      path: /atomic/{id}
                    scope: atomic/{id}
                    backend:
                      type: http
                      url: %s
                      conditional: if-match
                  - name: docs
                    match:
                      path: /docs/{id}
                    scope: docs/{id}
                    backend:
                      type: http
                      url: %s
                      settle: 50ms
                """.formatted(etcd.endpoints(), prefix, upstream.baseUri(), upstream.baseUri()));
        ExecutorService starting = Executors.newFixedThreadPool(REPLICAS);
        try {
            List<Future<ChildProxy>> started = new ArrayList<>();
            for (int i = 0; i < REPLICAS; i++) {
                started.add(starting.submit(() -> ChildProxy.start(config, List.of("-Xmx256m"))));
            }
            List<ChildProxy> all = new ArrayList<>();
            java.util.concurrent.ExecutionException failed = null;
            for (Future<ChildProxy> f : started) {
                try {
                    all.add(f.get());
                } catch (java.util.concurrent.ExecutionException e) {
                    failed = e;
                }
            }
            if (failed != null) {
                all.forEach(ChildProxy::close); // none is left running when one did not start
                throw failed;
            }
            return all;
        } finally {
            starting.shutdown();
        }
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
}
