package io.stockade.proxy;

import java.util.List;
import java.util.Map;
import java.util.logging.LogRecord;

import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.testing.LogLines;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.proxy.testing.Warnings;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The contract through the HTTP backend, serialized class, plus what is particular to proxying HTTP. */
class HttpContractIT extends UpstreamContractIT {
    @Override
    String backendYaml() {
        return "    backend:\n      type: http\n      url: ${UPSTREAM}\n      settle: 100ms\n";
    }

    @Test
    void refusedRequestsNeverReachTheUpstream() throws Exception {
        assert2xx(put("/docs/a", "v5", "5"));
        int before = upstream.requestCount();
        put("/docs/a", "v4", "4");
        put("/docs/a", "v?", null);
        put("/docs/a", "v?", "x");
        put("/docs/a/", "v?", "9");
        assertEquals(before, upstream.requestCount());
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
    void upstreamDownIs502AndTheScopeStaysOpen() throws Exception {
        int port = upstream.port();
        upstream.close();
        List<LogRecord> warned = Warnings.during("io.stockade", () -> {
            Http.Response r = put("/docs/d", "v", "5");
            assertEquals(502, r.status(), r.body());
            // The answer and the log line name the upstream and say that nothing reached it.
            assertTrue(r.body().contains("upstream 127.0.0.1:" + port + ": refused the connection; nothing was sent"),
                    r.body());
        });
        assertEquals(1, warned.size(), warned.toString());
        assertNull(warned.getFirst().getThrown(), "no stack trace at WARNING");
        assertTrue(warned.getFirst().getMessage().contains("policy 'docs': PUT /docs/d: upstream 127.0.0.1:" + port
                + ": refused the connection; nothing was sent"), warned.getFirst().getMessage());
        // nothing was sent, so nothing can land late: no quarantine
        Http.Response again = put("/docs/d", "v", "6");
        assertEquals(502, again.status(), again.body());
        assertEquals(0, proxy.server().metrics().count("docs", Outcome.QUARANTINED));
        upstream = TestUpstream.start(); // for stopStorage
    }

    @Test
    void anUpstreamUnreachableAtStartIsOneWarnLineNamingIt() throws Exception {
        int dead = io.stockade.testing.FreePorts.next();
        String expected = "policy 'docs': at start, upstream 127.0.0.1:" + dead + ": refused the connection";
        try (LogLines log = Warnings.capture("io.stockade");
             ProxyFixture other = ProxyFixture.start(dir.resolve("other"), policyYaml(), withUpstream(dead))) {
            // the check runs in the background, beside the start
            assertTrue(log.await(expected, java.time.Duration.ofSeconds(10)),
                    log.records().stream().map(LogRecord::getMessage).toList().toString());
            // one line per policy (this file's policies share the upstream), each naming it
            List<LogRecord> atStart = log.records().stream()
                    .filter(r -> r.getMessage().contains("policy 'docs': at start")).toList();
            assertEquals(1, atStart.size(), log.records().stream().map(LogRecord::getMessage).toList().toString());
            assertNull(atStart.getFirst().getThrown(), "no stack trace");
            assertEquals(2, put("/docs/x", "v", "1").status() / 100, "this class's proxy, reachable upstream");
        }
    }

    /** This class's variables (subclasses add their store's) with the upstream moved to a dead port. */
    private Map<String, String> withUpstream(int port) {
        Map<String, String> moved = new java.util.HashMap<>(vars);
        moved.put("UPSTREAM", "http://127.0.0.1:" + port);
        return moved;
    }
}
