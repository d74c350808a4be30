package io.stockade.proxy.upstream;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.logging.Level;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.LogLines;
import io.stockade.testing.Http;

import com.github.tomakehurst.wiremock.WireMockServer;
import com.github.tomakehurst.wiremock.core.WireMockConfiguration;
import com.github.tomakehurst.wiremock.http.Fault;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import static com.github.tomakehurst.wiremock.client.WireMock.aResponse;
import static com.github.tomakehurst.wiremock.client.WireMock.get;
import static com.github.tomakehurst.wiremock.client.WireMock.put;
import static com.github.tomakehurst.wiremock.client.WireMock.putRequestedFor;
import static com.github.tomakehurst.wiremock.client.WireMock.urlPathEqualTo;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An HTTP upstream that breaks after the write reached it (WireMock's faults, and an answer slower than the
 * policy's timeout): the write may have been applied, so the proxy answers 502 or 504 (never a 2xx, never a 500),
 * sends the write upstream exactly once (a retry could apply it twice), keeps the admitted token as the fence, and
 * quarantines the scope: the next holder's write is refused with 503 and does not reach the upstream, nor does a
 * stale token's (503 too: the quarantine is checked before the token). An answer whose head arrived and whose body
 * broke (a malformed chunk) is a known outcome relayed as far as it goes: the client's connection is closed, never
 * a complete answer (it was a 500 before this test).
 */
class UpstreamFaultsIT {
    /**
     * The timeout is the time the upstream has to read the write and break: at 500 ms, a CI run at load 26 saw the
     * proxy give up (504, rightly) before WireMock had read the write, so nothing had reached it. TOO_SLOW answers
     * well past it.
     */
    static final String POLICY = TestPolicies.docsOverHttp("timeout: 2s", "settle: 5s");

    @TempDir
    static Path dir;
    static WireMockServer upstream;
    static ProxyFixture proxy;

    /** One proxy for every case (each its own scope): a serialized policy stays closed for settle after start. */
    @BeforeAll
    static void start() throws Exception {
        upstream = new WireMockServer(WireMockConfiguration.options().bindAddress("127.0.0.1").dynamicPort());
        upstream.start();
        proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("UPSTREAM", upstream.baseUrl()));
        upstream.stubFor(put(urlPathEqualTo("/docs/probe")).willReturn(aResponse().withStatus(204)));
        proxy.awaitDocsOpen();
    }

    @AfterAll
    static void stop() {
        if (proxy != null) {
            proxy.close();
        }
        if (upstream != null) {
            upstream.stop();
        }
    }

    /** How the upstream breaks, once it has read the write. */
    enum Breakage {
        CONNECTION_RESET_BY_PEER, EMPTY_RESPONSE, RANDOM_DATA_THEN_CLOSE, MALFORMED_RESPONSE_CHUNK, TOO_SLOW
    }

    @ParameterizedTest
    @EnumSource(Breakage.class)
    void aWriteThatMayHaveLandedIsAnsweredAsSuchSentOnceAndQuarantinesTheScope(Breakage how) throws Exception {
        String path = "/docs/" + how.name().toLowerCase(java.util.Locale.ROOT);
        upstream.stubFor(put(urlPathEqualTo(path)).willReturn(how == Breakage.TOO_SLOW
                ? aResponse().withStatus(204).withFixedDelay(5000)
                : aResponse().withFault(Fault.valueOf(how.name()))));

        Optional<Http.Response> answer = send(path, "v7", 7);
        if (how == Breakage.MALFORMED_RESPONSE_CHUNK) {
            // a 200 head, then a broken body: the write was applied (the upstream said so), but its answer cannot
            // be relayed whole, so the client's connection is closed: never a complete answer, never a problem
            // document in place of the head the upstream sent
            assertTrue(answer.isEmpty(), how + ": " + answer.map(r -> r.status() + " " + r.body()).orElse(""));
        } else {
            Http.Response r = answer.orElseThrow(() -> new AssertionError(how + ": no answer at all"));
            assertTrue(r.status() == 502 || r.status() == 504, how + ": " + r.status() + " " + r.body());
        }
        assertEquals(1, upstream.countRequestsMatching(putRequestedFor(urlPathEqualTo(path)).build()).getCount(),
                how + ": the write went upstream exactly once");
        String scope = "docs/" + how.name().toLowerCase(java.util.Locale.ROOT);
        assertEquals(Optional.of(7L), proxy.server().store().get(scope).map(s -> s.token()),
                how + ": the admitted token is the fence");

        if (how == Breakage.MALFORMED_RESPONSE_CHUNK) {
            // a known outcome: no quarantine, the next holder writes (and a stale token stays refused)
            upstream.stubFor(put(urlPathEqualTo(path)).willReturn(aResponse().withStatus(204)));
            assertEquals(204, Http.put(proxy.uri(path), "v8", Map.of("Fencing-Token", "8")).status());
            Http.Response stale = Http.put(proxy.uri(path), "v6", Map.of("Fencing-Token", "6"));
            assertEquals(409, stale.status(), stale.body());
            assertEquals(2, upstream.findAll(putRequestedFor(urlPathEqualTo(path))).size(), "the stale one did not");
            return;
        }
        Http.Response next = Http.put(proxy.uri(path), "v8", Map.of("Fencing-Token", "8"));
        assertEquals(503, next.status(), how + ": " + next.body());
        assertTrue(next.body().contains("scope-quarantined"), next.body());
        assertTrue(next.header("Retry-After").isPresent());
        Http.Response stale = Http.put(proxy.uri(path), "v6", Map.of("Fencing-Token", "6"));
        assertEquals(503, stale.status(), how + ": " + stale.body());
        assertTrue(stale.body().contains("scope-quarantined"), stale.body()); // quarantine is checked first
        assertEquals(1, upstream.findAll(putRequestedFor(urlPathEqualTo(path))).size(),
                how + ": nothing more reached the upstream while the scope is quarantined");
        assertEquals(Optional.of(7L), proxy.server().store().get(scope).map(s -> s.token()),
                how + ": refusals do not move the fence");
    }

    /**
     * The upstream's own error answer is a known outcome: relayed as it is (status, body, headers), sent once, the
     * admitted token kept as the fence, and the scope open to the next holder (no quarantine).
     */
    @Test
    void anUpstreamErrorAnswerIsRelayedAsItIs() throws Exception {
        String path = "/docs/full";
        upstream.stubFor(put(urlPathEqualTo(path)).willReturn(aResponse().withStatus(507)
                .withHeader("Content-Type", "text/plain").withHeader("X-Upstream", "disk full")
                .withBody("no space left for this object")));

        Http.Response r = Http.put(proxy.uri(path), "v7", Map.of("Fencing-Token", "7"));
        assertEquals(507, r.status(), r.body());
        assertEquals("no space left for this object", r.body());
        assertEquals(Optional.of("disk full"), r.header("X-Upstream"));
        assertEquals(1, upstream.findAll(putRequestedFor(urlPathEqualTo(path))).size(), "sent once");
        assertEquals(Optional.of(7L), proxy.server().store().get("docs/full").map(s -> s.token()));

        upstream.stubFor(put(urlPathEqualTo(path)).willReturn(aResponse().withStatus(204)));
        assertEquals(204, Http.put(proxy.uri(path), "v8", Map.of("Fencing-Token", "8")).status(), "not quarantined");
        Http.Response stale = Http.put(proxy.uri(path), "v6", Map.of("Fencing-Token", "6"));
        assertEquals(409, stale.status(), stale.body());
        assertEquals(2, upstream.findAll(putRequestedFor(urlPathEqualTo(path))).size(), "the stale one did not");
    }

    /**
     * A 500 to an admitted write does not say whether the upstream applied it (the hostile-world issue, item 3): it
     * is answered 504 unknown-outcome, not relayed as a refusal; the upstream has answered, so nothing of it can
     * land later and the scope is not quarantined.
     */
    @Test
    void anUpstreamInternalErrorToAnAdmittedWriteIsAnUnknownOutcome() throws Exception {
        String path = "/docs/failed";
        upstream.stubFor(put(urlPathEqualTo(path)).willReturn(aResponse().withStatus(500).withBody("oops")));
        Http.Response r = Http.put(proxy.uri(path), "v7", Map.of("Fencing-Token", "7"));
        assertEquals(504, r.status(), r.body());
        assertTrue(r.body().contains("unknown-outcome") && r.body().contains("the storage answered 500"), r.body());
        assertEquals(1, upstream.findAll(putRequestedFor(urlPathEqualTo(path))).size(), "sent once");
        upstream.stubFor(put(urlPathEqualTo(path)).willReturn(aResponse().withStatus(204)));
        assertEquals(204, Http.put(proxy.uri(path), "v8", Map.of("Fencing-Token", "8")).status(), "not quarantined");
    }

    /**
     * A read whose answer breaks off mid-body: the client's connection is closed, never a 500, never complete; the
     * decision log says status 0 (no complete answer), not the 200 the proxy had begun (the hostile-world issue).
     */
    @Test
    void aReadWhoseBodyBreaksOffClosesTheClientConnection() throws Exception {
        upstream.stubFor(get(urlPathEqualTo("/docs/broken-read"))
                .willReturn(aResponse().withFault(Fault.MALFORMED_RESPONSE_CHUNK)));
        try (LogLines decisions = new LogLines("stockade.decision", Level.INFO)) {
            try {
                Http.Response r = Http.get(proxy.uri("/docs/broken-read"), Map.of());
                throw new AssertionError("a whole answer reached the client: " + r.status() + " " + r.body());
            } catch (IOException expected) {
                // the exchange failed under the client
            }
            String line = decisions.await(l -> l.contains("/docs/broken-read"), Duration.ofSeconds(5));
            assertTrue(line != null && line.contains("\"status\":0,") && line.contains("no complete answer"),
                    String.valueOf(line));
        }
        upstream.stubFor(get(urlPathEqualTo("/docs/whole")).willReturn(aResponse().withStatus(200).withBody("ok")));
        assertEquals("ok", Http.get(proxy.uri("/docs/whole"), Map.of()).body(), "the proxy serves on");
    }

    /**
     * The same through the s3 backend, whose error handling takes every runtime exception: the close of the
     * connection must get through it (it was a 500 with the upstream's Content-Length on a longer body, and a
     * fenced write whose store answered 200 was reported as an unknown outcome).
     */
    @Test
    void anS3AnswerWhoseBodyBreaksOffClosesTheClientConnection(@TempDir Path s3dir) throws Exception {
        try (ProxyFixture s3 = ProxyFixture.start(s3dir.resolve("j"), """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: s3
                    match: {path: "/{path...}"}
                    scope: s3
                    backend: {type: s3, endpoint: "${UPSTREAM}", access-key: k, secret-key: s, auth: none}
                """, Map.of("UPSTREAM", upstream.baseUrl()))) {
            upstream.stubFor(get(urlPathEqualTo("/bucket/broken"))
                    .willReturn(aResponse().withFault(Fault.MALFORMED_RESPONSE_CHUNK)));
            try {
                Http.Response r = Http.get(s3.uri("/bucket/broken"), Map.of());
                throw new AssertionError("a whole answer reached the client: " + r.status() + " " + r.body());
            } catch (IOException expected) {
                // the exchange failed under the client
            }
            upstream.stubFor(get(urlPathEqualTo("/bucket/whole")).willReturn(aResponse().withStatus(200)
                    .withBody("ok")));
            assertEquals("ok", Http.get(s3.uri("/bucket/whole"), Map.of()).body(), "the proxy serves on");
        }
    }

    /** The answer, or empty when the exchange itself failed (a response cut off after its head was relayed). */
    private static Optional<Http.Response> send(String path, String body, long token) throws Exception {
        try {
            return Optional.of(Http.put(proxy.uri(path), body, Map.of("Fencing-Token", Long.toString(token))));
        } catch (IOException e) {
            return Optional.empty();
        }
    }
}
