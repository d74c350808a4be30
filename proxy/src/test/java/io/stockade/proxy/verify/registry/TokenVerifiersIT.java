package io.stockade.proxy.verify.registry;

import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.stockade.policy.Policy;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The verifiers a reload leaves unused are closed (their pools give their connections back), with a real
 * PostgreSQL: each verifier's pool is told apart by its {@code ApplicationName} in {@code pg_stat_activity}.
 */
class TokenVerifiersIT {
    private static final String LEASES = """
            CREATE TABLE stockade_leases (
                name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL)""";

    private static String policy(String name, String app) {
        return """
                  - name: %s
                    match: {path: "/%s/{id}"}
                    scope: %s/{id}
                    fence:
                      verify:
                        kind: postgres
                        datasource: {url: "${PG}&ApplicationName=%s", user: postgres, pool-size: 2}
                    backend: {type: file, root: /tmp/unused}
                """.formatted(name, name, name, app);
    }

    @Test
    void closeUnusedClosesTheVerifierOfARemovedBlockAndKeepsTheOthers() throws Exception {
        String gone = "stockade-verify-gone-" + ProcessHandle.current().pid();
        String kept = "stockade-verify-kept-" + ProcessHandle.current().pid();
        try (Pg pg = Pg.create(LEASES)) {
            StockadeConfig config = PolicyLoader.parse("""
                    store: {type: memory, journal: /tmp/unused}
                    policies:
                    """ + policy("a", gone) + policy("b", kept), Path.of("test.yaml"), Map.of("PG", pg.url()));
            Policy a = config.policies().get(0);
            Policy b = config.policies().get(1);
            TokenVerifiers verifiers = new TokenVerifiers(Clock.systemUTC());
            try {
                verifiers.open(config.policies());
                assertTrue(awaitConnections(pg, gone, n -> n > 0), "the verifier of policy a opened no connection");
                assertTrue(awaitConnections(pg, kept, n -> n > 0));

                // A reload that removed a's verify block: only b's is in force.
                assertEquals(1, verifiers.closeUnused(List.of(b)));
                assertTrue(awaitConnections(pg, gone, n -> n == 0), "the removed verifier's pool is still open");
                assertThrows(IllegalStateException.class, () -> verifiers.of(a));

                // The kept one still answers (no lease: refused, not unavailable) and still holds its connections.
                TokenVerifier.Verdict verdict = verifiers.of(b).verify(new TokenVerifier.Claim("b/x", 7,
                        h -> List.of()));
                assertInstanceOf(TokenVerifier.Refused.class, verdict);
                assertTrue(count(pg, kept) > 0);
                assertEquals(0, verifiers.closeUnused(List.of(b)), "nothing more to close");
            } finally {
                verifiers.close();
            }
            assertTrue(awaitConnections(pg, kept, n -> n == 0), "close() closes the rest");
        }
    }

    private static boolean awaitConnections(Pg pg, String app, java.util.function.IntPredicate ok) throws Exception {
        long end = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (!ok.test(count(pg, app))) {
            if (System.nanoTime() > end) {
                return false;
            }
            Thread.sleep(50);
        }
        return true;
    }

    private static int count(Pg pg, String app) throws Exception {
        return Integer.parseInt(pg.single("SELECT count(*) FROM pg_stat_activity WHERE application_name = ?", app)
                .orElseThrow());
    }
}
