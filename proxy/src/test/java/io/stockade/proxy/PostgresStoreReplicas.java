package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.Pg;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Proxy processes sharing the PostgreSQL fence store in front of one HTTP upstream, and the check of a race through
 * them (PostgresStoreReplicasIT, and PgBouncerIT through PgBouncer).
 */
public final class PostgresStoreReplicas {
    public static final int REPLICAS = 2;

    private PostgresStoreReplicas() {
    }

    /** {@value #REPLICAS} proxy processes on the PostgreSQL store at {@code url} (user postgres). */
    public static List<ChildProxy> start(Path dir, String url, TestUpstream upstream, String backendOption)
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

    public static void check(History history, TestUpstream upstream, Pg pg, List<String> scopes) throws Exception {
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
