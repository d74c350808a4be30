package io.stockade.proxy.backend.http;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The atomic class through an HTTP upstream that honours If-Match: the upstream itself refuses a write based on
 * a version a newer write has replaced, so no scope is held in the proxy and a late write cannot land.
 */
class IfMatchIT {
    static final String POLICY = TestPolicies.docsOverHttp("conditional: if-match");

    @TempDir
    Path dir;
    TestUpstream upstream;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("UPSTREAM", upstream.baseUri().toString()));
    }

    @AfterEach
    void stop() {
        proxy.close();
        upstream.close();
    }

    Http.Response put(String body, long token) throws Exception {
        return Http.put(proxy.uri("/docs/a"), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    @Test
    void firstWriteCreatesWithIfNoneMatchAndLaterWritesCarryTheRecordedEtag() throws Exception {
        assertEquals(201, put("v1", 1).status());
        Map<String, List<String>> first = upstream.receivedHeaders().getLast();
        assertEquals(List.of("*"), first.get("if-none-match"), first.toString());
        String etag = upstream.etag("/docs/a").orElseThrow();

        assertEquals(204, put("v2", 2).status());
        Map<String, List<String>> second = upstream.receivedHeaders().getLast();
        assertEquals(List.of(etag), second.get("if-match"), second.toString());
        assertEquals("v2", upstream.contentText("/docs/a").orElseThrow());
    }

    @Test
    void aStaleWriteThatReachesTheUpstreamLateIsRefusedByTheUpstreamAndAnswered409() throws Exception {
        assertEquals(201, put("v1", 1).status());
        // Holder 7's write is admitted, then held up on its way into the storage.
        upstream.delayWrites(Duration.ofMillis(800));
        CompletableFuture<Http.Response> zombie = CompletableFuture.supplyAsync(() -> {
            try {
                return put("zombie", 7);
            } catch (Exception e) {
                throw new RuntimeException(e);
            }
        });
        Thread.sleep(200);
        upstream.delayWrites(Duration.ZERO);
        // Holder 8 writes meanwhile; with no scope held in the proxy it is not blocked by 7.
        Http.Response fresh = put("fresh", 8);
        assertEquals(204, fresh.status(), fresh.body());

        Http.Response late = zombie.get();
        assertEquals(409, late.status(), late.body());
        assertTrue(late.body().contains("stale-token"), late.body());
        assertTrue(late.body().contains("\"highest\":8"), late.body());
        upstream.awaitQuiet(Duration.ofSeconds(2));
        assertEquals("fresh", upstream.contentText("/docs/a").orElseThrow());
        assertEquals(List.of("v1", "fresh"), upstream.appliedBodies("/docs/a"));
    }

    /**
     * A change outside the proxy makes the upstream refuse the recorded version (412) under a token no newer holder
     * raised: nothing was written, and the client is told to retry (503 slow-down, never the 409 a client takes for
     * "fenced"); the retry succeeds. A request without a body is sent again by the proxy itself.
     */
    @Test
    void aChangeOutsideTheProxyIsRetriedAndNeverAnsweredAsFenced() throws Exception {
        assertEquals(201, put("v1", 1).status());
        // Somebody writes straight to the storage, bypassing the fence.
        assertEquals(204, Http.put(upstream.uri("/docs/a"), "outside", Map.of()).status());

        Http.Response r = put("v2", 2);
        assertEquals(503, r.status(), r.body());
        assertTrue(r.body().contains("slow-down") && r.body().contains("nothing was written"), r.body());
        assertTrue(r.header("Retry-After").isPresent(), r.toString());
        assertEquals("outside", upstream.contentText("/docs/a").orElseThrow());

        Http.Response retry = put("v2", 2);
        assertEquals(204, retry.status(), retry.body());
        assertEquals("v2", upstream.contentText("/docs/a").orElseThrow());
    }

    /** A DELETE carries no body: after a 412 the proxy reads the version afresh and sends it once more itself. */
    @Test
    void aDeleteAfterAChangeOutsideTheProxyIsSentAgainByTheProxy() throws Exception {
        assertEquals(201, put("v1", 1).status());
        assertEquals(204, Http.put(upstream.uri("/docs/a"), "outside", Map.of()).status());
        Http.Response r = Http.delete(proxy.uri("/docs/a"), Map.of("Fencing-Token", "2"));
        assertEquals(2, r.status() / 100, r.toString());
        assertTrue(upstream.contentText("/docs/a").isEmpty(), "deleted");
    }

    @Test
    void staleTokenIsRefusedBeforeReachingTheUpstream() throws Exception {
        assertEquals(201, put("v5", 5).status());
        int before = upstream.requestCount();
        Http.Response r = put("v4", 4);
        assertEquals(409, r.status());
        assertEquals(before, upstream.requestCount());
    }
}
