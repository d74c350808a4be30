package io.stockade.proxy.store.memory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 46, item 5: any client could fill the memory store's scope bound with junk scopes, after which every new
 * resource of every policy answered 503 until an operator acted (on main: /docs/new got 503 scope-limit once the
 * junk filled max-scopes). Each policy now holds at most its share: by default 80 % of the bound with two policies
 * or more, or its {@code limits.max-scopes}; the junk policy's client is refused at its share and the others keep
 * their room, also after a restart (the share counts the replayed scopes).
 */
class ScopeSharesIT {
    @TempDir
    Path dir;

    private String policy(String junkLimits) {
        return TestPolicies.on("""
                store:
                  type: memory
                  journal: ${JOURNAL}
                  max-scopes: 100
                """)
                .policy("junk", "/junk/{id}", "junk/{id}").file("${ROOT}").limits(junkLimits)
                .policy("docs", "/docs/{id}", "docs/{id}").file("${ROOT}")
                .yaml();
    }

    @Test
    void oneClientFillsOnlyItsPolicysShareOfTheStore() throws Exception {
        Path root = Files.createDirectories(dir.resolve("data"));
        Map<String, String> vars = Map.of("ROOT", root.toString());
        int refusedAt = -1;
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy("max-body-bytes: 1MiB"), vars)) {
            for (int i = 0; i < 120 && refusedAt < 0; i++) {
                Http.Response r = Http.put(proxy.uri("/junk/" + i), "x", Map.of("Fencing-Token", "1"));
                if (r.status() == 503) {
                    assertTrue(r.body().contains("scope-limit"), r.body());
                    assertTrue(r.body().contains("policy 'junk'"), r.body());
                    assertFalse(Files.exists(root.resolve("junk/" + i)), "a refused write reached the storage");
                    refusedAt = i;
                } else {
                    assertEquals(201, r.status(), r.body());
                }
            }
            assertEquals(80, refusedAt, "80 % of max-scopes 100");
            for (int i = 0; i < 10; i++) {
                assertEquals(201, Http.put(proxy.uri("/docs/" + i), "d", Map.of("Fencing-Token", "1")).status(),
                        "the other policy keeps its room");
            }
            // known scopes of the full policy go on
            assertEquals(204, Http.put(proxy.uri("/junk/0"), "y", Map.of("Fencing-Token", "2")).status());
        }
        // a restart counts the replayed scopes into the shares; a policy's own limits.max-scopes is its share
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy("max-scopes: 82"), vars)) {
            assertEquals(201, Http.put(proxy.uri("/junk/a"), "x", Map.of("Fencing-Token", "1")).status());
            assertEquals(201, Http.put(proxy.uri("/junk/b"), "x", Map.of("Fencing-Token", "1")).status());
            Http.Response full = Http.put(proxy.uri("/junk/c"), "x", Map.of("Fencing-Token", "1"));
            assertEquals(503, full.status(), full.body());
            assertTrue(full.body().contains("its limits.max-scopes (82)"), full.body());
            assertEquals(201, Http.put(proxy.uri("/docs/more"), "d", Map.of("Fencing-Token", "1")).status());
        }
    }
}
