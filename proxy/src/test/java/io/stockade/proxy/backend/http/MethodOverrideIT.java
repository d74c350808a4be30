package io.stockade.proxy.backend.http;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.ReceivedRequest;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Headers and a query parameter that make servers and frameworks run another method, or act on another target,
 * than the request line says: the http backend refuses them (400 {@code refused-header}) before the upstream sees
 * anything, whatever the method, so a fenced write cannot be hidden in a read and a write cannot be aimed past its
 * scope. A recording upstream shows nothing arrived; the fence and the stored content are read back. Before the
 * closed table, {@code GET /docs/a} with {@code X-HTTP-Method-Override: DELETE} reached the upstream as a read.
 */
class MethodOverrideIT {
    @TempDir
    Path dir;
    TestUpstream upstream;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies.docsOverHttp("settle: 1ms"),
                Map.of("UPSTREAM", upstream.baseUri().toString().replaceAll("/$", "")));
        Http.Response first = send("PUT", "/docs/a", "10", "holder");
        assertEquals(201, first.status(), first.body());
    }

    @AfterEach
    void stop() {
        proxy.close();
        upstream.close();
    }

    Http.Response send(String method, String target, String token, String body, String... headers) throws Exception {
        StringBuilder request = new StringBuilder(method + " " + target + " HTTP/1.1\r\nHost: t\r\n");
        if (token != null) {
            request.append("Fencing-Token: ").append(token).append("\r\n");
        }
        for (String header : headers) {
            request.append(header).append("\r\n");
        }
        request.append("Content-Length: ").append(body.length()).append("\r\nConnection: close\r\n\r\n").append(body);
        return RawHttp.send(proxy.server().port(), request.toString());
    }

    OptionalLong fence(String scope) throws Exception {
        return proxy.server().store().get(scope).map(s -> OptionalLong.of(s.token())).orElse(OptionalLong.empty());
    }

    void assertNothingMoved(int requestsBefore) throws Exception {
        assertEquals(requestsBefore, upstream.requestCount(), "the upstream saw nothing: " + upstream.received());
        assertEquals(Optional.of("holder"), upstream.contentText("/docs/a"));
        assertEquals(Optional.empty(), upstream.contentText("/docs/victim"));
        assertEquals(OptionalLong.of(10), fence("docs/a"));
        assertEquals(OptionalLong.empty(), fence("docs/victim"));
        int before = upstream.requestCount();
        assertEquals(409, send("PUT", "/docs/a", "9", "zombie").status(), "the fence still holds");
        assertEquals(before, upstream.requestCount());
    }

    @ParameterizedTest
    @ValueSource(strings = {"X-HTTP-Method-Override: DELETE", "x-http-method-override: PUT", "X-HTTP-Method: DELETE",
        "X-Method-Override: DELETE", "X-Original-URL: /docs/victim", "X-Rewrite-URL: /docs/victim",
        "x-original-url: /docs/victim"})
    void overrideAndRewriteHeadersAreRefusedOnEveryMethod(String header) throws Exception {
        int before = upstream.requestCount();
        // Formerly: the GET reached the upstream as a read, carrying the header.
        for (String method : List.of("GET", "HEAD", "PUT", "DELETE")) {
            Http.Response r = send(method, "/docs/a", method.equals("PUT") || method.equals("DELETE") ? "11" : null,
                    method.equals("PUT") ? "overridden" : "", header);
            assertEquals(400, r.status(), method + " with " + header + ": " + r.body());
            if (!method.equals("HEAD")) {
                assertTrue(r.body().contains("refused-header"), r.body());
                assertTrue(r.body().contains(header.substring(0, header.indexOf(':'))), r.body());
            }
        }
        assertNothingMoved(before);
    }

    @ParameterizedTest
    @ValueSource(strings = {"_method=DELETE", "x=1&_method=PUT", "%5Fmethod=DELETE", "%5fmethod=DELETE",
        "_METHOD=DELETE", ".method=DELETE", "+_method=DELETE", "_method%5B%5D=DELETE", "a=b;_method=DELETE", "_method",
        "_method="})
    void theMethodQueryParameterIsRefused(String query) throws Exception {
        int before = upstream.requestCount();
        for (String method : List.of("GET", "PUT")) {
            Http.Response r = send(method, "/docs/a?" + query, method.equals("PUT") ? "11" : null,
                    method.equals("PUT") ? "overridden" : "");
            assertEquals(400, r.status(), method + " ?" + query + ": " + r.body());
            assertTrue(r.body().contains("refused-header") && r.body().contains("_method"), r.body());
        }
        assertNothingMoved(before);
    }

    @ParameterizedTest
    @ValueSource(strings = {"my_method=x", "_methods=x", "x=_method", "method=PUT"})
    void otherParametersAreForwardedAsTheyCame(String query) throws Exception {
        Http.Response r = send("GET", "/docs/a?" + query, null, "");
        assertEquals(200, r.status(), r.body());
        ReceivedRequest last = upstream.received().getLast();
        assertEquals(query, last.query());
    }

    @Test
    void aLowerCaseMethodIsTheUpperCaseOneAtTheProxyAndAtTheStorage() throws Exception {
        // The listener reads methods case-insensitively: 'put' is fenced as PUT, and the upstream gets PUT, so
        // the proxy and the storage agree on what it is. A stale 'put' is refused like a stale PUT.
        int before = upstream.requestCount();
        assertEquals(409, send("put", "/docs/a", "9", "zombie").status());
        assertEquals(428, send("pUt", "/docs/a", null, "no token").status());
        assertEquals(before, upstream.requestCount());
        Http.Response r = send("put", "/docs/a", "11", "holder 11");
        assertEquals(204, r.status(), r.body());
        assertEquals("PUT", upstream.received().getLast().method());
        assertEquals(Optional.of("holder 11"), upstream.contentText("/docs/a"));
        assertEquals(OptionalLong.of(11), fence("docs/a"));
    }
}
