package io.stockade.proxy.upstream;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.ScriptedUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * {@code Location} answered by an upstream behind {@code url: http://127.0.0.1:PORT/store}: one that points into
 * the upstream becomes the path the client reaches it by through the proxy (nginx's {@code proxy_redirect
 * default}); any other is relayed as it is.
 */
class UpstreamLocationIT {
    @TempDir
    Path dir;
    ScriptedUpstream upstream;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        upstream = new ScriptedUpstream();
        proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{name}", "docs/{name}").http("http://127.0.0.1:${PORT}/store", "settle: 1ms")
                .yaml(), Map.of("PORT", Integer.toString(upstream.port())));
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        upstream.close();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            // into the upstream, under its path: the proxy's path
            "http://127.0.0.1:{port}/store/docs/a        | /docs/a",
            "HTTP://127.0.0.1:{port}/store/docs/a?v=2#top | /docs/a?v=2#top",
            "http://127.0.0.1:{port}/store               | /",
            // elsewhere: as it is
            "http://127.0.0.1:{port}/other/docs/a        | http://127.0.0.1:{port}/other/docs/a",
            "http://127.0.0.1:{port}/storefront/a        | http://127.0.0.1:{port}/storefront/a",
            "http://127.0.0.1:1/store/docs/a             | http://127.0.0.1:1/store/docs/a",
            "https://127.0.0.1:{port}/store/docs/a       | https://127.0.0.1:{port}/store/docs/a",
            "http://example.test/store/docs/a            | http://example.test/store/docs/a",
            "http://user@127.0.0.1:{port}/store/docs/a   | http://user@127.0.0.1:{port}/store/docs/a",
            "/store/docs/a                               | /store/docs/a",
            "docs/a                                      | docs/a",
            "http://127.0.0.1:{port}/store/a b           | http://127.0.0.1:{port}/store/a b",
            // never another host or another resource: "//host" is a host, dot-segments move the path
            "http://127.0.0.1:{port}/store//evil.test/x  | http://127.0.0.1:{port}/store//evil.test/x",
            "http://127.0.0.1:{port}/store/../admin      | http://127.0.0.1:{port}/store/../admin",
            "http://127.0.0.1:{port}/store/%2E%2e/admin  | http://127.0.0.1:{port}/store/%2E%2e/admin",
            "http://127.0.0.1:{port}/store/docs/./a      | http://127.0.0.1:{port}/store/docs/./a",
    })
    void aLocationIntoTheUpstreamBecomesTheProxysPath(String sent, String relayed) throws Exception {
        String port = Integer.toString(upstream.port());
        upstream.answer = "HTTP/1.1 201 Created\r\nLocation: " + sent.replace("{port}", port)
                + "\r\nContent-Length: 0\r\n\r\n";
        Http.Response r = Http.put(proxy.uri("/docs/a"), "v", Map.of("Fencing-Token", "5"));
        assertEquals(201, r.status(), r.body());
        assertEquals(relayed.replace("{port}", port), r.header("Location").orElseThrow());
        assertEquals("PUT /store/docs/a HTTP/1.1", upstream.requestLines.getLast());
    }
}
