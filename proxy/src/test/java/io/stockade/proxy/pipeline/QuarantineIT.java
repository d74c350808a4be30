package io.stockade.proxy.pipeline;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Unknown outcomes in the serialized class: an upstream that times out may still apply the write later, so
 * the scope is quarantined until the settle time has passed, and only then does a newer token get through.
 */
class QuarantineIT {
    static final String POLICY = TestPolicies.docsOverHttp("timeout: 300ms", "settle: 1500ms");

    @TempDir
    Path dir;

    @Test
    void upstreamTimeoutQuarantinesTheScopeUntilSettleThenANewerTokenIsAccepted() throws Exception {
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY,
                     Map.of("UPSTREAM", upstream.baseUri().toString()))) {
            proxy.awaitDocsOpen();
            assertEquals(201, Http.put(proxy.uri("/docs/a"), "v1", Map.of("Fencing-Token", "1")).status());

            // The storage is slow: it applies the write 1 s after receiving it, long after the proxy gave up.
            upstream.delayWrites(Duration.ofMillis(1000));
            Http.Response slow = Http.put(proxy.uri("/docs/a"), "v5", Map.of("Fencing-Token", "5"));
            assertEquals(504, slow.status(), slow.body());
            assertTrue(slow.body().contains("unknown-outcome"), slow.body());
            long timedOutAt = System.nanoTime();
            upstream.delayWrites(Duration.ZERO);

            // A newer holder must not be let through while the old write may still land.
            Http.Response refused = Http.put(proxy.uri("/docs/a"), "v6", Map.of("Fencing-Token", "6"));
            assertEquals(503, refused.status(), refused.body());
            assertTrue(refused.body().contains("scope-quarantined"), refused.body());
            assertTrue(Long.parseLong(refused.header("Retry-After").orElseThrow()) >= 1);
            // Other scopes are not affected.
            assertEquals(201, Http.put(proxy.uri("/docs/b"), "b", Map.of("Fencing-Token", "6")).status());

            // The late write lands while the scope is closed.
            long landBy = System.nanoTime() + Duration.ofSeconds(5).toNanos();
            while (!"v5".equals(upstream.contentText("/docs/a").orElse(null)) && System.nanoTime() < landBy) {
                Thread.sleep(20);
            }
            assertEquals("v5", upstream.contentText("/docs/a").orElseThrow(), "the slow write should land");

            // After the settle time the newer token goes through, and it is the last word.
            long left = Duration.ofMillis(1500).toNanos() - (System.nanoTime() - timedOutAt);
            Thread.sleep(Math.max(0, left / 1_000_000) + 100);
            Http.Response later = Http.put(proxy.uri("/docs/a"), "v6", Map.of("Fencing-Token", "6"));
            assertTrue(later.status() / 100 == 2, later.status() + " " + later.body());
            assertEquals("v6", upstream.contentText("/docs/a").orElseThrow());
            assertEquals(List.of("v1", "v5", "v6"), upstream.appliedBodies("/docs/a"));
        }
    }
}
