package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.testing.ChildProxy;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two proxy processes share the PostgreSQL fence store ({@code store: {type: postgres}}) in front of one HTTP
 * upstream. Writers with interleaved tokens (holders, takeovers, zombies) race across both replicas; the history of
 * what each writer was told is checked per scope against what the upstream applied, in order, and the shared
 * {@code stockade_fences} row ends at the highest accepted token. As the guarantee matrix promises: the atomic
 * ({@code If-Match}) backend with any writer on any replica; the serialized backend with each scope routed to one
 * replica (docs/replicas.md).
 */
class PostgresStoreReplicasIT {
    static final int REPLICAS = 2;

    @TempDir
    Path dir;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void twoReplicasSharingThePostgresStoreInFrontOfAnAtomicBackend() throws Exception {
        try (Pg pg = Pg.create(""); TestUpstream upstream = TestUpstream.start()) {
            List<ChildProxy> replicas = startReplicas(dir, pg.url(), upstream, "conditional: if-match");
            try {
                History history = new History();
                // writer w sends its n-th write to replica (w + n) % 2: every writer alternates replicas
                EtcdReplicasIT.race(history, "docs/race",
                        i -> replicas.get(i % REPLICAS).baseUri().resolve("/docs/race"));
                check(history, upstream, pg, List.of("docs/race"));
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void twoReplicasSharingThePostgresStoreSerializedWithEachScopeRoutedToOneReplica() throws Exception {
        try (Pg pg = Pg.create(""); TestUpstream upstream = TestUpstream.start()) {
            List<ChildProxy> replicas = startReplicas(dir, pg.url(), upstream, "settle: 50ms");
            Thread.sleep(100); // past the settle time every serialized policy keeps after start
            try {
                History history = new History();
                List<String> scopes = List.of("docs/a", "docs/b", "docs/c", "docs/d");
                ExecutorService pool = Executors.newFixedThreadPool(scopes.size());
                try {
                    List<Future<?>> runs = new ArrayList<>();
                    for (String scope : scopes) {
                        // the load balancer's choice: one replica per scope; both replicas own some scopes
                        ChildProxy owner = replicas.get(scopes.indexOf(scope) % REPLICAS);
                        runs.add(pool.submit(() -> {
                            EtcdReplicasIT.race(history, scope, i -> owner.baseUri().resolve("/" + scope));
                            return null;
                        }));
                    }
                    for (Future<?> f : runs) {
                        f.get();
                    }
                } finally {
                    pool.shutdownNow();
                }
                check(history, upstream, pg, scopes);
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    /** {@value #REPLICAS} proxy processes on the PostgreSQL store at {@code url} (user postgres). */
    static List<ChildProxy> startReplicas(Path dir, String url, TestUpstream upstream, String backendOption)
            throws Exception {
        List<ChildProxy> replicas = new ArrayList<>();
        try {
            for (int i = 0; i < REPLICAS; i++) {
                Path config = dir.resolve("replica-" + i + ".yaml");
                Files.writeString(config, """
                        server:
                          port: 0
                        store:
                          type: postgres
                          datasource: {url: "%s", user: postgres, pool-size: 8}
                        policies:
                          - name: docs
                            match:
                              path: /docs/{id}
                            scope: docs/{id}
                            backend:
                              type: http
                              url: %s
                              %s
                        """.formatted(url, upstream.baseUri(), backendOption));
                replicas.add(ChildProxy.start(config, List.of("-Xmx256m")));
            }
            return replicas;
        } catch (RuntimeException e) {
            replicas.forEach(ChildProxy::close);
            throw e;
        }
    }

    static void check(History history, TestUpstream upstream, Pg pg, List<String> scopes) throws Exception {
        Map<String, String> last = new HashMap<>();
        Map<String, List<String>> applied = new HashMap<>();
        for (String scope : scopes) {
            last.put(scope, upstream.contentText("/" + scope).orElse(null));
            applied.put(scope, upstream.appliedBodies("/" + scope));
        }
        HistoryChecker.Result result = HistoryChecker.check(history, last, applied);
        assertTrue(result.ok(), result.toString());
        for (String scope : scopes) {
            long highestAccepted = history.ops(scope).stream().filter(o -> o.outcome() == History.Outcome.OK)
                    .mapToLong(History.Op::token).max().orElseThrow();
            long highestSent = history.ops(scope).stream().mapToLong(History.Op::token).max().orElseThrow();
            long fence = pg.fence(scope).orElseThrow();
            // the shared row is at least the highest acknowledged token, and never above any token sent
            assertTrue(fence >= highestAccepted && fence <= highestSent,
                    scope + ": fence " + fence + ", highest accepted " + highestAccepted + ", sent " + highestSent);
        }
        System.out.println("PostgresStoreReplicasIT: " + history.ops().size() + " writes on " + scopes);
    }
}
