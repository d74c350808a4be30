package io.stockade.proxy;

import io.stockade.proxy.json.JsonReader;
import io.stockade.testing.ConsulStandIn;
import io.stockade.testing.Http;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify: {kind: consul}} through a real proxy and the file backend, against {@link ConsulStandIn}, an
 * in-process stand-in of Consul's session and KV API (no Consul server can be installed here: this is not a test
 * against a real Consul). The locks are taken over HTTP with Consul's session + KV lock recipe, as the guide shows:
 * a session ({@code TTL 15s}, {@code Behavior release}), {@code PUT /v1/kv/<key>?acquire=<session>}, and the token
 * is the key's {@code ModifyIndex} read right after. Every refusal is checked to have written nothing and left the
 * fence alone.
 */
class ConsulLockVerifyIT {
    static final String ACL = "b1gs3cr3t-acl-token-of-the-proxy";

    @TempDir
    Path dir;
    ConsulStandIn consul;
    Path root;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        consul = new ConsulStandIn();
        root = dir.resolve("root");
        proxy = start(consul.url(), "");
    }

    /** A proxy whose verifier asks {@code url}, with {@code more} lines in its verify block. */
    ProxyFixture start(String url, String more) throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        return ProxyFixture.start(dir.resolve("journal"), """
                store:
                  type: memory
                  journal: ${JOURNAL}
                policies:
                  - name: jobs
                    match:
                      path: /jobs/{id}
                    scope: job-{id}
                    fence:
                      verify:
                        kind: consul
                        url: ${CONSUL}
                        prefix: locks/
                        timeout: 1s
                        cache: {enabled: false}
                #MORE#
                    backend:
                      type: file
                      root: ${ROOT}
                """.replace("#MORE#", more.isEmpty() ? "" : more.indent(8).stripTrailing()),
                Map.of("CONSUL", url, "ROOT", root.toString()));
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
        consul.close();
    }

    /** A session and an acquisition of {@code key}, as the guide's recipe makes them: the token, or empty. */
    Optional<Long> acquire(String key, String session) throws Exception {
        Http.Response r = consulPut("/v1/kv/" + key + "?acquire=" + session, "worker");
        assertEquals(200, r.status(), r.body());
        if (!r.body().strip().equals("true")) {
            return Optional.empty();
        }
        Http.Response get = Http.get(URI.create(consul.url() + "/v1/kv/" + key + "?consistent"), headers());
        assertEquals(200, get.status(), get.body());
        @SuppressWarnings("unchecked")
        Map<String, Object> entry = (Map<String, Object>) ((List<?>) JsonReader.read(get.body())).getFirst();
        assertEquals(session, entry.get("Session"));
        return Optional.of((Long) entry.get("ModifyIndex"));
    }

    String session() throws Exception {
        Http.Response r = consulPut("/v1/session/create",
                "{\"Name\":\"worker\",\"TTL\":\"15s\",\"LockDelay\":\"15s\",\"Behavior\":\"release\"}");
        assertEquals(200, r.status(), r.body());
        return (String) JsonReader.object(r.body()).get("ID");
    }

    Http.Response consulPut(String path, String body) throws Exception {
        return Http.send("PUT", URI.create(consul.url() + path), HttpRequest.BodyPublishers.ofString(body),
                headers());
    }

    Map<String, String> headers() {
        return consul.requireToken == null ? Map.of() : Map.of("X-Consul-Token", consul.requireToken);
    }

    Http.Response put(String id, String body, long token) throws Exception {
        return Http.put(proxy.uri("/jobs/" + id), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    Optional<String> stored(String id) throws Exception {
        Path file = root.resolve("jobs").resolve(id);
        return Files.exists(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }

    Optional<Long> fence(String id) throws Exception {
        return proxy.server().store().get("job-" + id).map(s -> s.token());
    }

    /** A 403 that did not write, did not move the fence, and does not tell the holder's token {@code held}. */
    void assertRefused(Http.Response r, String id, String reason, long held, Optional<String> before,
                       Optional<Long> fenceBefore) throws Exception {
        assertEquals(403, r.status(), r.body());
        assertTrue(r.body().contains("urn:stockade:problem:unverified-token"), r.body());
        assertTrue(r.body().contains(reason), r.body());
        if (held >= 0) {
            assertFalse(r.body().contains(Long.toString(held)), "the holder's token must not reach the client");
        }
        assertFalse(r.body().contains(ACL), r.body());
        assertEquals(before, stored(id), "nothing written");
        assertEquals(fenceBefore, fence(id), "a refused token must not move the fence");
    }

    void assertUnavailable(Http.Response r, String id) throws Exception {
        assertEquals(503, r.status(), r.body());
        assertTrue(r.header("Retry-After").isPresent());
        assertFalse(r.body().contains(ACL), r.body());
        assertEquals(Optional.empty(), stored(id), "nothing written");
        assertEquals(Optional.empty(), fence(id));
    }

    @Test
    void theHoldersTokenWritesAndIsAskedForConsistently() throws Exception {
        long token = acquire("locks/job-a", session()).orElseThrow();
        assertEquals(consul.index(), token, "the ModifyIndex of the acquiring write is the last index");
        assertEquals(201, put("a", "v1", token).status());
        assertEquals(Optional.of("v1"), stored("a"));
        assertEquals(Optional.of(token), fence("a"));
        assertEquals(2, put("a", "v2", token).status() / 100, "the holder keeps writing");
        assertEquals(Optional.of("v2"), stored("a"));
        assertTrue(consul.requests.contains("GET /v1/kv/locks/job-a?consistent token=null"),
                consul.requests.toString());
    }

    @Test
    void anInventedOrInflatedTokenIsRefused() throws Exception {
        long token = acquire("locks/job-b", session()).orElseThrow();
        for (long forged : List.of(Long.MAX_VALUE, token + 1, token - 1, 1L)) {
            assertRefused(put("b", "evil", forged), "b", "not the token of the holder of the Consul lock 'locks/job-b'",
                    token, Optional.empty(), Optional.empty());
        }
        assertEquals(201, put("b", "honest", token).status(), "the genuine holder is not locked out");
        assertEquals(Optional.of("honest"), stored("b"));
    }

    /**
     * The zombie: A holds the lock and writes; its session expires (no renewal for 2 × TTL), Consul releases the
     * key; past the lock-delay B acquires and writes. A's token is refused — also while nobody holds the key
     * (between A's loss and B's acquisition), when a lock-delay alone would not have stopped A's write.
     */
    @Test
    void anOldHolderWhoseSessionExpiredIsRefused() throws Exception {
        String a = session();
        long tokenA = acquire("locks/job-c", a).orElseThrow();
        assertEquals(201, put("c", "from-a", tokenA).status());

        consul.advance(Duration.ofSeconds(31)); // no renewal for more than 2 × 15 s: invalidated, key released
        assertFalse(consul.sessions().contains(a));
        assertRefused(put("c", "a-late", tokenA), "c", "nobody holds the Consul lock 'locks/job-c'", -1,
                Optional.of("from-a"), Optional.of(tokenA));

        String b = session();
        assertEquals(Optional.empty(), acquire("locks/job-c", b), "lock-delay: nobody acquires for 15 s");
        consul.advance(Duration.ofSeconds(16));
        long tokenB = acquire("locks/job-c", b).orElseThrow();
        assertTrue(tokenB > tokenA, "the next holder's index is higher");
        assertEquals(2L, consul.entry("locks/job-c").orElseThrow().get("LockIndex"));
        assertRefused(put("c", "a-zombie", tokenA), "c", "not the token of the holder of the Consul lock 'locks/job-c'",
                tokenB, Optional.of("from-a"), Optional.of(tokenA));
        assertEquals(2, put("c", "from-b", tokenB).status() / 100);
        assertEquals(Optional.of("from-b"), stored("c"));
        assertEquals(Optional.of(tokenB), fence("c"));
    }

    @Test
    void aReleasedOrMissingKeyIsRefused() throws Exception {
        String s = session();
        long token = acquire("locks/job-r", s).orElseThrow();
        assertEquals("true", consulPut("/v1/kv/locks/job-r?release=" + s, "").body().strip());
        assertRefused(put("r", "after", token), "r", "nobody holds the Consul lock 'locks/job-r'", -1,
                Optional.empty(), Optional.empty());
        assertRefused(put("m", "x", 1), "m", "nobody holds the Consul lock 'locks/job-m' (no such key)", -1,
                Optional.empty(), Optional.empty());
    }

    /** A plain write of the key's value while it is held moves its ModifyIndex: the holder is refused (fail closed). */
    @Test
    void aWriteOfTheHeldKeyMakesTheHoldersTokenUnknown() throws Exception {
        String s = session();
        long token = acquire("locks/job-w", s).orElseThrow();
        assertEquals("true", consulPut("/v1/kv/locks/job-w", "overwritten").body().strip());
        assertNotEquals(token, consul.entry("locks/job-w").orElseThrow().get("ModifyIndex"));
        assertRefused(put("w", "x", token), "w", "not the token of the holder", -1, Optional.empty(),
                Optional.empty());
    }

    @Test
    void consulDownOrFailingIs503() throws Exception {
        long token = acquire("locks/job-f", session()).orElseThrow();
        consul.failWith = 500;
        Http.Response r = put("f", "x", token);
        assertUnavailable(r, "f");
        assertTrue(r.body().contains("HTTP 500"), r.body());
        consul.failWith = 0;

        int closedPort;
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = socket.getLocalPort();
        }
        proxy = start("http://127.0.0.1:" + closedPort, "");
        assertUnavailable(put("f", "x", token), "f");
    }

    @Test
    void anAclTokenIsSentFromTokenOrTokenFileAndARefusedOneIs503() throws Exception {
        consul.requireToken = ACL;
        long token = acquire("locks/job-t", session()).orElseThrow();
        assertUnavailable(put("t", "x", token), "t"); // the proxy has no token yet: Consul says 403
        assertTrue(consul.requests.getLast().endsWith("token=null"), consul.requests.getLast());

        Path tokenFile = dir.resolve("consul-token");
        Files.writeString(tokenFile, "wrong-token\n");
        proxy = start(consul.url(), "token-file: " + tokenFile);
        assertUnavailable(put("t", "x", token), "t");
        Files.writeString(tokenFile, ACL + "\n"); // rotated: read at the next lookup
        assertEquals(201, put("t", "x", token).status());
        assertTrue(consul.requests.getLast().endsWith("token=" + ACL), consul.requests.getLast());

        proxy = start(consul.url(), "token: " + ACL);
        assertEquals(2, put("t", "y", token).status() / 100);
    }

    @Test
    void keysAreEscapedInThePath() throws Exception {
        long token = acquire("locks/job-a%20b", session()).orElseThrow();
        assertEquals(201, put("a%20b", "x", token).status());
        assertTrue(consul.entry("locks/job-a b").isPresent());
    }
}
