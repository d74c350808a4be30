package io.stockade.proxy.store.postgres;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import io.stockade.conformance.check.History;
import io.stockade.proxy.PostgresStoreReplicas;
import io.stockade.proxy.testing.Racers;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two proxy processes share the PostgreSQL fence store ({@code store: {type: postgres}}) in front of one HTTP
 * upstream. Writers with interleaved tokens (holders, takeovers, zombies) race across both replicas; the history of
 * what each writer was told is checked per scope against what the upstream applied, in order, and the shared
 * {@code stockade_fences} row ends at the highest accepted token. As the guarantee matrix promises: the atomic
 * ({@code If-Match}) backend with any writer on any replica; the serialized backend with each scope routed to one
 * replica (docs/replicas.md).
 */
class PostgresStoreReplicasIT {
    @TempDir
    Path dir;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void twoReplicasSharingThePostgresStoreInFrontOfAnAtomicBackend() throws Exception {
        try (Pg pg = Pg.create(""); TestUpstream upstream = TestUpstream.start()) {
            List<ChildProxy> replicas = PostgresStoreReplicas.start(dir, pg.url(), upstream, "conditional: if-match");
            try {
                History history = new History();
                // writer w sends its n-th write to replica (w + n) % 2: every writer alternates replicas
                Racers.raceOnReplicas(history, "docs/race",
                        i -> replicas.get(i % PostgresStoreReplicas.REPLICAS).baseUri().resolve("/docs/race"));
                PostgresStoreReplicas.check(history, upstream, pg, List.of("docs/race"));
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void twoReplicasSharingThePostgresStoreSerializedWithEachScopeRoutedToOneReplica() throws Exception {
        try (Pg pg = Pg.create(""); TestUpstream upstream = TestUpstream.start()) {
            List<ChildProxy> replicas = PostgresStoreReplicas.start(dir, pg.url(), upstream, "settle: 50ms");
            Thread.sleep(100); // past the settle time every serialized policy keeps after start
            try {
                History history = new History();
                List<String> scopes = List.of("docs/a", "docs/b", "docs/c", "docs/d");
                ExecutorService pool = Executors.newFixedThreadPool(scopes.size());
                try {
                    List<Future<?>> runs = new ArrayList<>();
                    for (String scope : scopes) {
                        // the load balancer's choice: one replica per scope; both replicas own some scopes
                        ChildProxy owner = replicas.get(scopes.indexOf(scope) % PostgresStoreReplicas.REPLICAS);
                        runs.add(pool.submit(() -> {
                            Racers.raceOnReplicas(history, scope, i -> owner.baseUri().resolve("/" + scope));
                            return null;
                        }));
                    }
                    for (Future<?> f : runs) {
                        f.get();
                    }
                } finally {
                    pool.shutdownNow();
                }
                PostgresStoreReplicas.check(history, upstream, pg, scopes);
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }
}
