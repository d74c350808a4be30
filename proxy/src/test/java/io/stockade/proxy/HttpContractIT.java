package io.stockade.proxy;

import io.stockade.proxy.testing.Http;
import io.stockade.proxy.testing.TestUpstream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The contract of DESIGN.md through the HTTP backend, serialized class, against a real upstream server:
 * every answer, every mode, and what reaches the upstream (and what must not).
 */
class HttpContractIT {
    static final String POLICY = """
            store:
              type: memory
              journal: ${JOURNAL}
            policies:
              - name: docs
                match:
                  path: /docs/{id}
                scope: docs/{id}
                backend:
                  type: http
                  url: ${UPSTREAM}
                  settle: 100ms
              - name: strict
                match:
                  path: /strict/{id}
                scope: strict/{id}
                fence:
                  equal: reject
                  header: X-Lease-Token
                backend:
                  type: http
                  url: ${UPSTREAM}
                  settle: 100ms
              - name: lenient
                match:
                  path: /lenient/{id}
                scope: lenient/{id}
                fence:
                  missing: allow
                backend:
                  type: http
                  url: ${UPSTREAM}
                  settle: 100ms
              - name: observed
                match:
                  path: /observed/{id}
                scope: observed/{id}
                fence:
                  mode: observe
                backend:
                  type: http
                  url: ${UPSTREAM}
                  settle: 100ms
              - name: plain
                match:
                  path: /plain/{id}
                scope: plain/{id}
                fence:
                  mode: off
                backend:
                  type: http
                  url: ${UPSTREAM}
                  settle: 100ms
            """;

    @TempDir
    Path dir;
    TestUpstream upstream;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("journal"), POLICY, Map.of("UPSTREAM", upstream.baseUri().toString()));
        Thread.sleep(150); // serialized policies open after their settle time (100 ms here)
    }

    @AfterEach
    void stop() {
        proxy.close();
        upstream.close();
    }

    Http.Response put(String path, String body, String token) throws Exception {
        return Http.put(proxy.uri(path), body, token == null ? Map.of() : Map.of("Fencing-Token", token));
    }

    @Test
    void acceptedWriteReachesUpstream() throws Exception {
        Http.Response r = put("/docs/a", "v5", "5");
        assertEquals(201, r.status(), r.body());
        assertEquals("v5", new String(upstream.content("/docs/a").orElseThrow()));
    }

    @Test
    void staleTokenIsRejectedWith409NamingScopeTokenAndHighest() throws Exception {
        assertEquals(201, put("/docs/a", "v5", "5").status());
        int before = upstream.requestCount();
        Http.Response r = put("/docs/a", "v4", "4");
        assertEquals(409, r.status());
        assertEquals("application/problem+json", r.header("Content-Type").orElseThrow());
        assertTrue(r.body().contains("\"scope\":\"docs/a\""), r.body());
        assertTrue(r.body().contains("\"token\":4"), r.body());
        assertTrue(r.body().contains("\"highest\":5"), r.body());
        assertTrue(r.body().contains("\"type\":\"urn:stockade:problem:stale-token\""), r.body());
        assertEquals(before, upstream.requestCount(), "a stale write must not reach the upstream");
        assertEquals("v5", new String(upstream.content("/docs/a").orElseThrow()));
    }

    @Test
    void equalTokenIsAcceptedByDefaultAndRejectedWhenThePolicySaysSo() throws Exception {
        assertEquals(201, put("/docs/a", "one", "7").status());
        assertEquals(204, put("/docs/a", "two", "7").status());
        assertEquals("two", new String(upstream.content("/docs/a").orElseThrow()));

        assertEquals(201, Http.put(proxy.uri("/strict/a"), "one", Map.of("X-Lease-Token", "7")).status());
        Http.Response again = Http.put(proxy.uri("/strict/a"), "two", Map.of("X-Lease-Token", "7"));
        assertEquals(409, again.status(), again.body());
        assertTrue(again.body().contains("equal to"), again.body());
        assertEquals("one", new String(upstream.content("/strict/a").orElseThrow()));
    }

    @Test
    void theTokenHeaderNameIsThePolicys() throws Exception {
        Http.Response r = Http.put(proxy.uri("/strict/b"), "x", Map.of("Fencing-Token", "3"));
        assertEquals(428, r.status(), "the strict policy reads X-Lease-Token, not Fencing-Token");
        assertTrue(r.body().contains("X-Lease-Token"), r.body());
    }

    @Test
    void missingTokenIsRejectedWith428AndNotForwarded() throws Exception {
        Http.Response r = put("/docs/a", "v?", null);
        assertEquals(428, r.status());
        assertTrue(r.body().contains("missing-token"), r.body());
        assertEquals(0, upstream.requestCount());
    }

    @Test
    void missingTokenIsForwardedWhenThePolicyAllowsIt() throws Exception {
        assertEquals(201, put("/lenient/a", "free", null).status());
        assertEquals("free", new String(upstream.content("/lenient/a").orElseThrow()));
        assertEquals(1, proxy.server().metrics().count("lenient",
                io.stockade.proxy.metrics.ProxyMetrics.Outcome.ALLOWED_WITHOUT_TOKEN));
    }

    @Test
    void malformedTokensAreRejectedWith400AndNotForwarded() throws Exception {
        for (String bad : List.of("5x", "-1", "+5", "5 5", "05", "", "9223372036854775808", "1e3", "0x10")) {
            Http.Response r = put("/docs/m", "v", bad);
            assertEquals(400, r.status(), "token '" + bad + "': " + r.body());
            assertTrue(r.body().contains("malformed-token"), r.body());
        }
        assertEquals(0, upstream.requestCount());
    }

    @Test
    void largestTokenIsAccepted() throws Exception {
        assertEquals(201, put("/docs/max", "v", Long.toString(Long.MAX_VALUE)).status());
    }

    @Test
    void twoTokenHeadersAreRejected() throws Exception {
        Http.Response r = RawHttp.send(proxy.server().port(), "PUT /docs/a HTTP/1.1\r\nHost: x\r\n"
                + "Fencing-Token: 5\r\nFencing-Token: 9\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
        assertEquals(400, r.status(), r.body());
        assertTrue(r.body().contains("2 Fencing-Token headers"), r.body());
        assertEquals(0, upstream.requestCount());
    }

    @Test
    void readsPassUnfenced() throws Exception {
        assertEquals(201, put("/docs/r", "content", "1").status());
        Http.Response r = Http.get(proxy.uri("/docs/r"));
        assertEquals(200, r.status());
        assertEquals("content", r.body());
    }

    @Test
    void observeModeForwardsStaleWritesCountsThemAndDoesNotRaiseTheFence() throws Exception {
        assertEquals(201, put("/observed/a", "v9", "9").status());
        assertEquals(204, put("/observed/a", "v3", "3").status(), "observe forwards what enforce would refuse");
        assertEquals(204, put("/observed/a", "none", null).status());
        assertEquals(204, put("/observed/a", "bad", "x").status());
        assertEquals("bad", new String(upstream.content("/observed/a").orElseThrow()));
        var metrics = proxy.server().metrics();
        assertEquals(3, metrics.count("observed", io.stockade.proxy.metrics.ProxyMetrics.Outcome.WOULD_REJECT));
        // observe keeps the high-water mark as enforce would, so a later switch to enforce starts from the truth
        assertEquals(9, proxy.server().store().get("observed/a").orElseThrow().token());
    }

    @Test
    void offModeIsAPlainProxy() throws Exception {
        assertEquals(201, put("/plain/a", "v", null).status());
        assertEquals(204, put("/plain/a", "w", "x").status());
        assertTrue(proxy.server().store().get("plain/a").isEmpty());
    }

    @Test
    void noPolicyIs404() throws Exception {
        Http.Response r = put("/nothing/here", "v", "1");
        assertEquals(404, r.status());
        assertTrue(r.body().contains("no-policy"), r.body());
        assertEquals(0, upstream.requestCount());
    }

    @Test
    void pathsWithTwoSpellingsAreRefused() throws Exception {
        for (String path : List.of("/docs/./a", "/docs/../docs/a", "/docs/a%2Fb", "/docs//a", "/docs/a/", "/docs/%2e%2e",
                "/docs/a%5Cb", "/docs/a%00", "/docs/%zz")) {
            Http.Response r = RawHttp.send(proxy.server().port(), "PUT " + path + " HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token: 5\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
            assertTrue(r.status() == 400 || r.status() == 404, path + " -> " + r.status() + " " + r.body());
        }
        assertEquals(0, upstream.requestCount());
    }

    @Test
    void hopByHopHeadersStayAndForwardedHeadersAreAdded() throws Exception {
        Http.Response r = RawHttp.send(proxy.server().port(), "PUT /docs/h HTTP/1.1\r\nHost: example.test\r\n"
                + "Fencing-Token: 5\r\nConnection: close, X-Secret-Hop\r\nX-Secret-Hop: no\r\nKeep-Alive: timeout=5\r\n"
                + "X-App: yes\r\nContent-Length: 1\r\n\r\nx");
        assertEquals(201, r.status(), r.body());
        Map<String, List<String>> headers = upstream.receivedHeaders().getLast();
        assertFalse(headers.containsKey("x-secret-hop"), headers.toString());
        assertFalse(headers.containsKey("keep-alive"), headers.toString());
        assertEquals(List.of("yes"), headers.get("x-app"));
        assertEquals(List.of("127.0.0.1"), headers.get("x-forwarded-for"));
        assertEquals(List.of("example.test"), headers.get("x-forwarded-host"));
        assertEquals(List.of("http"), headers.get("x-forwarded-proto"));
        assertTrue(headers.get("forwarded").getFirst().contains("for=127.0.0.1"), headers.toString());
    }

    @Test
    void storeUnavailableIs503WithRetryAfterAndNothingForwarded() throws Exception {
        proxy.server().store().close();
        Http.Response r = put("/docs/u", "v", "5");
        assertEquals(503, r.status(), r.body());
        assertTrue(r.header("Retry-After").isPresent());
        assertTrue(r.body().contains("store-unavailable"), r.body());
        assertEquals(0, upstream.requestCount());
    }

    @Test
    void upstreamDownIs502AndTheScopeStaysOpen() throws Exception {
        upstream.close();
        Http.Response r = put("/docs/d", "v", "5");
        assertEquals(502, r.status(), r.body());
        // nothing was sent, so nothing can land late: no quarantine
        assertEquals(0, proxy.server().metrics().count("docs",
                io.stockade.proxy.metrics.ProxyMetrics.Outcome.QUARANTINED));
        upstream = TestUpstream.start(); // for @AfterEach
    }

}
