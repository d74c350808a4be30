package io.stockade.proxy.verify;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.VerifiedJobs;
import io.stockade.proxy.json.JsonReader;
import io.stockade.testing.ConsulStandIn;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

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
    VerifiedJobs jobs;

    @BeforeEach
    void start() throws Exception {
        consul = new ConsulStandIn();
        jobs = new VerifiedJobs(dir, ACL);
        start(consul.url(), "");
    }

    /** (Re)starts the proxy, its verifier asking {@code url}, with {@code more} lines in its verify block. */
    void start(String url, String more) throws Exception {
        jobs.start("""
                kind: consul
                url: ${CONSUL}
                prefix: locks/
                timeout: 1s
                cache: {enabled: false}
                """ + more, Map.of("CONSUL", url));
    }

    @AfterEach
    void stop() {
        jobs.close();
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

    @Test
    void theHoldersTokenWritesAndIsAskedForConsistently() throws Exception {
        long token = acquire("locks/job-a", session()).orElseThrow();
        assertEquals(consul.index(), token, "the ModifyIndex of the acquiring write is the last index");
        assertEquals(201, jobs.put("a", "v1", token).status());
        assertEquals(Optional.of("v1"), jobs.stored("a"));
        assertEquals(Optional.of(token), jobs.fence("a"));
        assertEquals(2, jobs.put("a", "v2", token).status() / 100, "the holder keeps writing");
        assertEquals(Optional.of("v2"), jobs.stored("a"));
        assertTrue(consul.requests.contains("GET /v1/kv/locks/job-a?consistent token=null"),
                consul.requests.toString());
    }

    @Test
    void anInventedOrInflatedTokenIsRefused() throws Exception {
        long token = acquire("locks/job-b", session()).orElseThrow();
        for (long forged : List.of(Long.MAX_VALUE, token + 1, token - 1, 1L)) {
            jobs.assertRefused(jobs.put("b", "evil", forged), "b",
                    "not the token of the holder of the Consul lock 'locks/job-b'", Long.toString(token),
                    Optional.empty(), Optional.empty());
        }
        assertEquals(201, jobs.put("b", "honest", token).status(), "the genuine holder is not locked out");
        assertEquals(Optional.of("honest"), jobs.stored("b"));
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
        assertEquals(201, jobs.put("c", "from-a", tokenA).status());

        consul.advance(Duration.ofSeconds(31)); // no renewal for more than 2 × 15 s: invalidated, key released
        assertFalse(consul.sessions().contains(a));
        jobs.assertRefused(jobs.put("c", "a-late", tokenA), "c", "nobody holds the Consul lock 'locks/job-c'", null,
                Optional.of("from-a"), Optional.of(tokenA));

        String b = session();
        assertEquals(Optional.empty(), acquire("locks/job-c", b), "lock-delay: nobody acquires for 15 s");
        consul.advance(Duration.ofSeconds(16));
        long tokenB = acquire("locks/job-c", b).orElseThrow();
        assertTrue(tokenB > tokenA, "the next holder's index is higher");
        assertEquals(2L, consul.entry("locks/job-c").orElseThrow().get("LockIndex"));
        jobs.assertRefused(jobs.put("c", "a-zombie", tokenA), "c",
                "not the token of the holder of the Consul lock 'locks/job-c'", Long.toString(tokenB),
                Optional.of("from-a"), Optional.of(tokenA));
        assertEquals(2, jobs.put("c", "from-b", tokenB).status() / 100);
        assertEquals(Optional.of("from-b"), jobs.stored("c"));
        assertEquals(Optional.of(tokenB), jobs.fence("c"));
    }

    @Test
    void aReleasedOrMissingKeyIsRefused() throws Exception {
        String s = session();
        long token = acquire("locks/job-r", s).orElseThrow();
        assertEquals("true", consulPut("/v1/kv/locks/job-r?release=" + s, "").body().strip());
        jobs.assertRefused(jobs.put("r", "after", token), "r", "nobody holds the Consul lock 'locks/job-r'", null,
                Optional.empty(), Optional.empty());
        jobs.assertRefused(jobs.put("m", "x", 1), "m", "nobody holds the Consul lock 'locks/job-m' (no such key)",
                null, Optional.empty(), Optional.empty());
    }

    /** A plain write of the key's value while it is held moves its ModifyIndex: the holder is refused (fail closed). */
    @Test
    void aWriteOfTheHeldKeyMakesTheHoldersTokenUnknown() throws Exception {
        String s = session();
        long token = acquire("locks/job-w", s).orElseThrow();
        assertEquals("true", consulPut("/v1/kv/locks/job-w", "overwritten").body().strip());
        assertNotEquals(token, consul.entry("locks/job-w").orElseThrow().get("ModifyIndex"));
        jobs.assertRefused(jobs.put("w", "x", token), "w", "not the token of the holder", null, Optional.empty(),
                Optional.empty());
    }

    @Test
    void consulDownOrFailingIs503() throws Exception {
        long token = acquire("locks/job-f", session()).orElseThrow();
        consul.failWith = 500;
        Http.Response r = jobs.put("f", "x", token);
        jobs.assertUnavailable(r, "f");
        assertTrue(r.body().contains("HTTP 500"), r.body());
        consul.failWith = 0;

        int closedPort = FreePorts.next(); // nothing listens there: the ports of a test JVM's own block
        start("http://127.0.0.1:" + closedPort, "");
        jobs.assertUnavailable(jobs.put("f", "x", token), "f");
    }

    @Test
    void anAclTokenIsSentFromTokenOrTokenFileAndARefusedOneIs503() throws Exception {
        consul.requireToken = ACL;
        long token = acquire("locks/job-t", session()).orElseThrow();
        jobs.assertUnavailable(jobs.put("t", "x", token), "t"); // the proxy has no token yet: Consul says 403
        assertTrue(consul.requests.getLast().endsWith("token=null"), consul.requests.getLast());

        Path tokenFile = dir.resolve("consul-token");
        Files.writeString(tokenFile, "wrong-token\n");
        start(consul.url(), "token-file: " + tokenFile);
        jobs.assertUnavailable(jobs.put("t", "x", token), "t");
        Files.writeString(tokenFile, ACL + "\n"); // rotated: read at the next lookup
        assertEquals(201, jobs.put("t", "x", token).status());
        assertTrue(consul.requests.getLast().endsWith("token=" + ACL), consul.requests.getLast());

        start(consul.url(), "token: " + ACL);
        assertEquals(2, jobs.put("t", "y", token).status() / 100);
    }

    @Test
    void keysAreEscapedInThePath() throws Exception {
        long token = acquire("locks/job-a%20b", session()).orElseThrow();
        assertEquals(201, jobs.put("a%20b", "x", token).status());
        assertTrue(consul.entry("locks/job-a b").isPresent());
    }
}
