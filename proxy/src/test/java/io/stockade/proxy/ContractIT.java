package io.stockade.proxy;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.logging.LogRecord;

import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.Warnings;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every row of the contract of DESIGN.md, in every mode, run once per backend (the subclasses). What landed is
 * always read from the storage itself, never from the proxy's answer.
 */
abstract class ContractIT {
    @TempDir
    Path dir;
    ProxyFixture proxy;

    /** The {@code backend:} block of every policy, indented for a list item's child. */
    abstract String backendYaml();

    /** The {@code backend:} block of one policy; the same for every policy unless a backend needs otherwise. */
    String backendYaml(String policy) {
        return backendYaml();
    }

    /** The highest token the fence holds for a scope, wherever this backend keeps it. */
    OptionalLong fenceOf(String scope) throws Exception {
        return proxy.server().store().get(scope).map(s -> OptionalLong.of(s.token())).orElse(OptionalLong.empty());
    }

    /** Makes the fence impossible to decide (the store, or the backend's own fence, goes away). */
    void takeFenceAway() throws Exception {
        proxy.server().store().close();
    }

    /**
     * Whether a write forwarded without a token ({@code missing: allow}) changes a resource that has a token: yes,
     * unless the backend's own statements refuse it (column mode compares the token in the user's SQL).
     */
    boolean tokenlessWritesLand() {
        return true;
    }

    /** The answer of a GET for a resource whose stored content is {@code content}. */
    String expectedRead(String content) {
        return content;
    }

    /** Starts the storage behind the proxy; returns the variables {@link #backendYaml()} uses. */
    abstract Map<String, String> startStorage() throws Exception;

    abstract void stopStorage();

    /** What the storage holds at a request path, read directly from it. */
    abstract Optional<String> stored(String path) throws Exception;

    String policyYaml() {
        StringBuilder b = new StringBuilder("""
                store:
                  type: memory
                  journal: ${JOURNAL}
                policies:
                """);
        policy(b, "docs", "");
        policy(b, "strict", "    fence:\n      equal: reject\n      header: X-Lease-Token\n");
        policy(b, "lenient", "    fence:\n      missing: allow\n");
        policy(b, "observed", "    fence:\n      mode: observe\n");
        policy(b, "plain", "    fence:\n      mode: off\n");
        policy(b, "capped", "    fence:\n      max-advance: 100\n");
        policy(b, "watched", "    fence:\n      mode: observe\n      max-advance: 100\n");
        return b.toString();
    }

    void policy(StringBuilder b, String name, String fence) {
        b.append("  - name: ").append(name).append('\n')
                .append("    match:\n      path: /").append(name).append("/{id}\n")
                .append("    scope: ").append(name).append("/{id}\n")
                .append(fence)
                .append(backendYaml(name));
    }

    Map<String, String> vars;

    @BeforeEach
    void start() throws Exception {
        vars = startStorage();
        proxy = ProxyFixture.start(dir.resolve("journal"), policyYaml(), vars);
        Thread.sleep(150); // serialized HTTP policies open after their settle time (100 ms in these tests)
    }

    @AfterEach
    void stop() {
        proxy.close();
        stopStorage();
    }

    Http.Response put(String path, String body, String token) throws Exception {
        return Http.put(proxy.uri(path), body, token == null ? Map.of() : Map.of("Fencing-Token", token));
    }

    Http.Response delete(String path, String token) throws Exception {
        return Http.delete(proxy.uri(path), token == null ? Map.of() : Map.of("Fencing-Token", token));
    }

    static void assert2xx(Http.Response r) {
        assertEquals(2, r.status() / 100, r.status() + " " + r.body());
    }

    @Test
    void acceptedWriteTakesEffect() throws Exception {
        assert2xx(put("/docs/a", "v5", "5"));
        assertEquals(Optional.of("v5"), stored("/docs/a"));
    }

    @Test
    void staleTokenIsRejectedWith409NamingScopeTokenAndHighestAndLeavesNoTrace() throws Exception {
        assert2xx(put("/docs/a", "v5", "5"));
        Http.Response r = put("/docs/a", "v4", "4");
        assertEquals(409, r.status());
        assertEquals("application/problem+json", r.header("Content-Type").orElseThrow());
        assertTrue(r.body().contains("\"type\":\"urn:stockade:problem:stale-token\""), r.body());
        assertTrue(r.body().contains("\"scope\":\"docs/a\""), r.body());
        assertTrue(r.body().contains("\"token\":4"), r.body());
        assertTrue(r.body().contains("\"highest\":5"), r.body());
        assertEquals(Optional.of("v5"), stored("/docs/a"));
    }

    @Test
    void higherTokenTakesOver() throws Exception {
        assert2xx(put("/docs/a", "v5", "5"));
        assert2xx(put("/docs/a", "v9", "9"));
        assertEquals(409, put("/docs/a", "v8", "8").status());
        assertEquals(Optional.of("v9"), stored("/docs/a"));
    }

    @Test
    void equalTokenIsAcceptedByDefault() throws Exception {
        assert2xx(put("/docs/a", "one", "7"));
        assert2xx(put("/docs/a", "two", "7"));
        assertEquals(Optional.of("two"), stored("/docs/a"));
    }

    @Test
    void equalTokenIsRejectedWhenThePolicySaysSo() throws Exception {
        assert2xx(Http.put(proxy.uri("/strict/a"), "one", Map.of("X-Lease-Token", "7")));
        Http.Response again = Http.put(proxy.uri("/strict/a"), "two", Map.of("X-Lease-Token", "7"));
        assertEquals(409, again.status(), again.body());
        assertTrue(again.body().contains("admits each token once (equal: reject)"), again.body());
        assertFalse(again.body().contains("newer holder"), "no newer holder exists: " + again.body());
        assertEquals(Optional.of("one"), stored("/strict/a"));
    }

    @Test
    void theTokenHeaderIsThePolicys() throws Exception {
        Http.Response r = Http.put(proxy.uri("/strict/b"), "x", Map.of("Fencing-Token", "3"));
        assertEquals(428, r.status(), "the strict policy reads X-Lease-Token, not Fencing-Token");
        assertTrue(r.body().contains("X-Lease-Token"), r.body());
        assertEquals(Optional.empty(), stored("/strict/b"));
    }

    @Test
    void missingTokenIsRejectedWith428() throws Exception {
        Http.Response r = put("/docs/a", "v?", null);
        assertEquals(428, r.status());
        assertTrue(r.body().contains("missing-token"), r.body());
        assertEquals(Optional.empty(), stored("/docs/a"));
    }

    @Test
    void missingTokenIsForwardedWhenThePolicyAllowsIt() throws Exception {
        assert2xx(put("/lenient/a", "free", null));
        assertEquals(Optional.of("free"), stored("/lenient/a"));
        assertEquals(1, proxy.counted("lenient", Outcome.ALLOWED_WITHOUT_TOKEN, 1));
    }

    @Test
    void malformedTokensAreRejectedWith400() throws Exception {
        for (String bad : List.of("5x", "-1", "+5", "5 5", "05", "", "9223372036854775808", "1e3", "0x10")) {
            Http.Response r = put("/docs/m", "v", bad);
            assertEquals(400, r.status(), "token '" + bad + "': " + r.body());
            assertTrue(r.body().contains("malformed-token"), r.body());
        }
        assertEquals(Optional.empty(), stored("/docs/m"));
    }

    @Test
    void largestTokenIsAccepted() throws Exception {
        assert2xx(put("/docs/max", "v", Long.toString(Long.MAX_VALUE)));
    }

    @Test
    void twoTokenHeadersAreRejected() throws Exception {
        Http.Response r = RawHttp.send(proxy.server().port(), "PUT /docs/a HTTP/1.1\r\nHost: x\r\n"
                + "Fencing-Token: 5\r\nFencing-Token: 9\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
        assertEquals(400, r.status(), r.body());
        assertTrue(r.body().contains("2 Fencing-Token headers"), r.body());
        assertEquals(Optional.empty(), stored("/docs/a"));
    }

    /**
     * The request-target review: a token header that is there but empty is malformed (400), on every backend, never
     * "missing".
     */
    @Test
    void anEmptyOrBlankTokenHeaderIsMalformedNotMissing() throws Exception {
        for (String value : List.of("", " ", "   ", "\t")) {
            Http.Response r = RawHttp.send(proxy.server().port(), "PUT /docs/blank HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token:" + value + "\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
            assertEquals(400, r.status(), "'" + value + "': " + r.body());
            assertTrue(r.body().contains("malformed-token"), r.body());
        }
        assertEquals(Optional.empty(), stored("/docs/blank"));
        assertEquals(OptionalLong.empty(), fenceOf("docs/blank"));
    }

    @Test
    void readsPassUnfenced() throws Exception {
        assert2xx(put("/docs/r", "content", "1"));
        Http.Response r = Http.get(proxy.uri("/docs/r"));
        assertEquals(200, r.status());
        assertEquals(expectedRead("content"), r.body());
    }

    @Test
    void aDeleteKeepsTheFenceSoAZombieCannotRecreate() throws Exception {
        assert2xx(put("/docs/d", "v5", "5"));
        assert2xx(delete("/docs/d", "6"));
        assertEquals(Optional.empty(), stored("/docs/d"));
        Http.Response zombie = put("/docs/d", "zombie", "5");
        assertEquals(409, zombie.status(), zombie.body());
        assertEquals(Optional.empty(), stored("/docs/d"));
        assert2xx(put("/docs/d", "v7", "7"));
        assertEquals(Optional.of("v7"), stored("/docs/d"));
    }

    @Test
    void aStaleDeleteIsRejected() throws Exception {
        assert2xx(put("/docs/d", "v5", "5"));
        assertEquals(409, delete("/docs/d", "4").status());
        assertEquals(Optional.of("v5"), stored("/docs/d"));
    }

    @Test
    void theHighWaterMarkSurvivesARestart() throws Exception {
        assert2xx(put("/docs/a", "v5", "5"));
        proxy.close();
        proxy = ProxyFixture.start(dir.resolve("journal"), policyYaml(), vars);
        Thread.sleep(150);
        Http.Response r = put("/docs/a", "v4", "4");
        assertEquals(409, r.status(), r.body());
        assertTrue(r.body().contains("\"highest\":5"), r.body());
        assertEquals(Optional.of("v5"), stored("/docs/a"));
    }

    @Test
    void storeUnavailableIs503WithRetryAfterAndNothingWritten() throws Exception {
        takeFenceAway();
        long started = System.nanoTime();
        List<LogRecord> warned = Warnings.during("io.stockade", () -> {
            for (int i = 0; i < 5; i++) {
                Http.Response r = put("/docs/u", "v", Integer.toString(5 + i));
                assertEquals(503, r.status(), r.body());
                assertTrue(r.header("Retry-After").isPresent());
                assertTrue(r.body().contains("store-unavailable"), r.body());
            }
        });
        long seconds = java.util.concurrent.TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started);
        assertEquals(Optional.empty(), stored("/docs/u"));
        // What the operator reads: one line (at most one a second per policy) with the cause, no stack trace.
        assertTrue(!warned.isEmpty() && warned.size() <= 1 + seconds,
                warned.size() + " lines in " + seconds + " s: " + warned.stream().map(LogRecord::getMessage).toList());
        assertNull(warned.getFirst().getThrown(), "no stack trace at WARNING");
        assertTrue(warned.getFirst().getMessage().contains("policy 'docs'"), warned.getFirst().getMessage());
        // and the proxy says the policy cannot write (ReadinessIT: and ready again when the store is back). Where the
        // store is the policy's own (PostgreSQL keeps the fence in the database) the replica stays ready for the
        // other policies, so it is the policy's readiness that turns.
        Http.Response ready = proxy.awaitReady(StockadeServer.READY + "/docs", 503);
        assertTrue(ready.body().contains("\"status\":\"DOWN\""), ready.body());
    }

    @Test
    void observeModeForwardsWhatEnforceWouldRefuseAndCountsIt() throws Exception {
        assert2xx(put("/observed/a", "v9", "9"));
        assert2xx(put("/observed/a", "v3", "3"));
        assert2xx(put("/observed/a", "none", null));
        assert2xx(put("/observed/a", "bad", "x"));
        assertEquals(Optional.of("bad"), stored("/observed/a"));
        assertEquals(3, proxy.counted("observed", Outcome.WOULD_REJECT, 3));
        assertEquals(1, proxy.counted("observed", Outcome.OBSERVED, 1));
        // the high-water mark is kept as enforce would keep it, so switching to enforce starts from the truth
        assertEquals(OptionalLong.of(9), fenceOf("observed/a"));
    }

    @Test
    void offModeIsAPlainProxy() throws Exception {
        assert2xx(put("/plain/a", "v", null));
        assert2xx(put("/plain/a", "w", "x"));
        assertEquals(Optional.of("w"), stored("/plain/a"));
        assertFalse(fenceOf("plain/a").isPresent());
    }

    @Test
    void anInflatedTokenIsRefusedAndDoesNotRaiseTheFence() throws Exception {
        assert2xx(put("/capped/a", "v5", "5"));
        Http.Response inflated = put("/capped/a", "evil", Long.toString(Long.MAX_VALUE));
        assertEquals(422, inflated.status(), inflated.body());
        assertTrue(inflated.body().contains("token-too-far"), inflated.body());
        assertEquals(Optional.of("v5"), stored("/capped/a"));
        // the honest next holder is not locked out
        assert2xx(put("/capped/a", "v105", "105"));
        assertEquals(Optional.of("v105"), stored("/capped/a"));
        assertEquals(1, proxy.counted("capped", Outcome.TOO_FAR, 1));
    }

    /** A PUT or a DELETE of {@code path} with {@code token} in {@code header} (none when null). */
    Http.Response write(String method, String path, String header, String token) throws Exception {
        Map<String, String> headers = token == null ? Map.of() : Map.of(header, token);
        return method.equals("PUT") ? Http.put(proxy.uri(path), "by " + token, headers)
                : Http.delete(proxy.uri(path), headers);
    }

    /**
     * One decider (the configuration axis of the one-decider issue): every key of the fence block holds on every
     * write method of the table, the DELETE as the PUT, because the plan judges both by the one rule it carries:
     * {@code max-advance} refuses a far token (422) and {@code equal: reject} an equal one (409), each leaving the
     * storage and the fence as they were; {@code missing: allow} lets a tokenless write through; observe mode with
     * {@code max-advance} forwards a far token but raises nothing with it (it did: the store's fence jumped).
     */
    @Test
    void everyFenceKeyHoldsOnEveryWriteMethod() throws Exception {
        boolean observes = policyYaml().contains("- name: watched\n");
        for (String method : List.of("PUT", "DELETE")) {
            String id = method.toLowerCase(java.util.Locale.ROOT);
            assert2xx(put("/capped/" + id, "v5", "5"));
            Http.Response far = write(method, "/capped/" + id, "Fencing-Token", "9999");
            assertEquals(422, far.status(), method + ": " + far.body());
            assertEquals(Optional.of("v5"), stored("/capped/" + id), method);
            assertEquals(OptionalLong.of(5), fenceOf("capped/" + id), method);

            assert2xx(write("PUT", "/strict/" + id, "X-Lease-Token", "7"));
            Http.Response equal = write(method, "/strict/" + id, "X-Lease-Token", "7");
            assertEquals(409, equal.status(), method + ": " + equal.body());
            assertEquals(Optional.of("by 7"), stored("/strict/" + id), method);

            assert2xx(put("/lenient/" + id, "v1", "1"));
            assert2xx(write(method, "/lenient/" + id, "Fencing-Token", null));
            if (tokenlessWritesLand()) {
                assertEquals(method.equals("PUT") ? Optional.of("by null") : Optional.empty(),
                        stored("/lenient/" + id), method);
            }

            if (observes) {
                assert2xx(put("/watched/" + id, "v5", "5"));
                assert2xx(write(method, "/watched/" + id, "Fencing-Token", "9999"));
                assertEquals(OptionalLong.of(5), fenceOf("watched/" + id), method + ": a far token raised nothing");
            }
        }
        assertEquals(2, proxy.counted("capped", Outcome.TOO_FAR, 2));
        assertEquals(2, proxy.counted("lenient", Outcome.ALLOWED_WITHOUT_TOKEN, 2));
        if (observes) {
            assertEquals(2, proxy.counted("watched", Outcome.WOULD_REJECT, 2));
        }
    }

    /**
     * Issue 46, item 5: one request with a forged first token took a new resource for ever (max-advance bounded
     * only the jumps over an existing highest); on main {@code /capped/new} took 9223372036854775807 and the honest
     * holder's 5 was refused (409) from then on. The first token is bounded by first-token-max, by default
     * max-advance (a new scope judged as if its highest were 0), wherever the backend keeps the fence.
     */
    @Test
    void aForgedFirstTokenCannotLockANewResourceAway() throws Exception {
        Http.Response forged = put("/capped/new", "evil", Long.toString(Long.MAX_VALUE));
        assertEquals(422, forged.status(), forged.body());
        assertTrue(forged.body().contains("first-token-max"), forged.body());
        assertEquals(Optional.empty(), stored("/capped/new"));
        assertFalse(fenceOf("capped/new").isPresent(), "the refused first token raised the fence");
        assert2xx(put("/capped/new", "v5", "5"));
        assertEquals(Optional.of("v5"), stored("/capped/new"));
        assertEquals(OptionalLong.of(5), fenceOf("capped/new"));
        // the bound itself: 100 (max-advance) is the most a first token may be
        assertEquals(422, put("/capped/other", "x", "101").status());
        assertEquals(Optional.empty(), stored("/capped/other"));
        assert2xx(put("/capped/other", "v100", "100"));
        assertEquals(Optional.of("v100"), stored("/capped/other"));
        assertEquals(2, proxy.counted("capped", Outcome.TOO_FAR, 2));
    }

    @Test
    void noPolicyIs404() throws Exception {
        Http.Response r = put("/nothing/here", "v", "1");
        assertEquals(404, r.status());
        assertTrue(r.body().contains("no-policy"), r.body());
    }

    @Test
    void pathsWithTwoSpellingsAreRefused() throws Exception {
        for (String path : List.of("/docs/./a", "/docs/../docs/a", "/docs/a%2Fb", "/docs//a", "/docs/a/",
                "/docs/%2e%2e", "/docs/a%5Cb", "/docs/a%00", "/docs/%zz")) {
            Http.Response r = RawHttp.send(proxy.server().port(), "PUT " + path + " HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token: 5\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
            assertEquals(400, r.status(), path + " -> " + r.body());
        }
        assertEquals(Optional.empty(), stored("/docs/a"));
    }
}
