package io.stockade.proxy.verify;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.Http;
import io.stockade.testing.RedisServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.TestPki;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.params.SetParams;

import static io.stockade.proxy.VerifiedFiles.mentions;
import static io.stockade.proxy.VerifiedFiles.put;
import static io.stockade.proxy.VerifiedFiles.start;
import static io.stockade.proxy.VerifiedFiles.stored;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify: {kind: redis}} against a real {@code redis-server} whose lock keys hold the value the client
 * SDK writes (see {@code lock}): the holder's token writes; an invented token, an
 * earlier holder's token and a token for a lock nobody holds are refused (403) without raising the fence; a Redis
 * that cannot answer — down, a refused {@code AUTH}, an ACL without {@code +get}, a failed TLS handshake — refuses
 * the write (503) and nothing is written.
 */
@RequiresTools(Tools.Tool.REDIS)
class RedisLockVerifyIT {
    /** The tokens handed out: each lock taken gets a higher one, as the SDK's counter does. */
    private static final AtomicLong TOKENS = new AtomicLong(System.currentTimeMillis());

    @TempDir
    Path dir;

    @BeforeEach
    void needsRedis() {
    }

    /**
     * Takes the lock {@code key} for {@code holder}: its value as the verifier reads it (the token in decimal, ':',
     * then what makes the value unique). That the SDK writes this is checked once, against the SDK's own provider,
     * by client-sdk's {@code VerifierWireFormatIT}; here the verifier's behaviour is the subject.
     */
    private static long lock(Jedis redis, String key, String holder) {
        long token = TOKENS.incrementAndGet();
        redis.set(key, token + ":0123456789abcdef0123456789abcdef:" + holder, SetParams.setParams().px(60_000));
        return token;
    }

    @Test
    void theHoldersTokenWritesAnInventedOneOrOneForALockNobodyHoldsIsRefused() throws Exception {
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             Jedis admin = new Jedis(redis.url());
             ProxyFixture proxy = start(dir, "kind: redis\nurl: ${REDIS}\nprefix: \"locks:\"",
                     Map.of("REDIS", redis.url()))) {
            long token = lock(admin, "locks:files/a", "w1");

            Http.Response inflated = put(proxy, "a", "evil", Long.MAX_VALUE);
            assertEquals(403, inflated.status(), inflated.body());
            assertTrue(inflated.body().contains("unverified-token"), inflated.body());
            assertFalse(mentions(inflated.body(), token), "the 403 gives the holder's token away: " + inflated.body());
            assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
            assertEquals(Optional.empty(), stored(dir, "a"));
            // the holder's token for another scope, whose lock nobody holds
            Http.Response nobody = put(proxy, "b", "evil", token);
            assertEquals(403, nobody.status());
            assertTrue(nobody.body().contains("nobody holds the Redis lock 'locks:files/b'"), nobody.body());

            assertEquals(201, put(proxy, "a", "v", token).status());
            assertEquals(Optional.of("v"), stored(dir, "a"));
            assertEquals(2, proxy.counted("files", Outcome.UNVERIFIED, 2));
        }
    }

    /**
     * An earlier holder's token: its lock expired and another holder took it. Refused (403) on the scope before the
     * newer holder wrote, stale (409, no lookup) after; and once the newer holder released, nobody's token is
     * genuine.
     */
    @Test
    void anEarlierHoldersTokenIsRefusedAndAReleasedLockHasNoHolder() throws Exception {
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             Jedis admin = new Jedis(redis.url());
             ProxyFixture proxy = start(dir, "kind: redis\nurl: ${REDIS}\ncache: {enabled: false}",
                     Map.of("REDIS", redis.url()))) {
            long first = lock(admin, "files/a", "w1");
            admin.del("files/a"); // the first holder stopped renewing and its key expired
            long second = lock(admin, "files/a", "w2");
            assertTrue(second > first);

            Http.Response old = put(proxy, "a", "old", first);
            assertEquals(403, old.status(), old.body());
            assertTrue(old.body().contains("not the token of the holder of the Redis lock 'files/a'"), old.body());
            assertEquals(201, put(proxy, "a", "new", second).status());
            assertEquals(409, put(proxy, "a", "old", first).status(), "stale once the newer holder wrote");

            admin.del("files/a"); // released
            Http.Response released = put(proxy, "a", "after release", second);
            assertEquals(403, released.status(), released.body());
            assertEquals(Optional.of("new"), stored(dir, "a"));
        }
    }

    @Test
    void aKeyThatIsNotAStockadeLockGivesNoToken() throws Exception {
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             Jedis admin = new Jedis(redis.url());
             ProxyFixture proxy = start(dir, "kind: redis\nurl: ${REDIS}", Map.of("REDIS", redis.url()))) {
            admin.set("files/plain", "locked");        // a SET NX PX lock of someone else's making
            admin.set("files/number", "7");             // a counter, not a lock
            admin.hset("files/hash", "token", "7");     // another type
            for (String name : List.of("plain", "number", "hash")) {
                Http.Response r = put(proxy, name, "v", 7);
                assertEquals(403, r.status(), name + ": " + r.body());
                assertTrue(r.body().contains("is not a Stockade lock"), r.body());
            }
            assertEquals(Optional.empty(), stored(dir, "number"));
        }
    }

    @Test
    void redisDownIs503AndNothingIsWrittenButARememberedVerdictSparesTheLookup() throws Exception {
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             Jedis admin = new Jedis(redis.url());
             ProxyFixture proxy = start(dir, "kind: redis\nurl: ${REDIS}\ntimeout: 500ms\ncache: {ttl: 1m}",
                     Map.of("REDIS", redis.url()))) {
            long a = lock(admin, "files/a", "w1");
            long b = lock(admin, "files/b", "w1");
            assertEquals(201, put(proxy, "a", "v1", a).status());
            assertEquals(1, proxy.server().metrics().verifications("files", "genuine"));

            redis.kill();
            assertEquals(2, put(proxy, "a", "v2", a).status() / 100, "remembered: no lookup");
            assertEquals(1, proxy.server().metrics().verifications("files", "remembered"));

            long start = System.nanoTime();
            Http.Response down = put(proxy, "b", "v1", b);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(503, down.status(), down.body());
            assertTrue(down.body().contains("verifier-unavailable"), down.body());
            assertTrue(down.header("Retry-After").isPresent());
            assertEquals(Optional.empty(), stored(dir, "b"));
            assertEquals(Optional.empty(), proxy.server().store().get("files/b"));
            assertTrue(tookMs < 2000, "answered in " + tookMs + " ms");

            redis.restart(); // nothing persisted: b's lock is gone, and the verifier reconnects
            Http.Response after = put(proxy, "b", "v1", b);
            assertEquals(403, after.status(), after.body());
            try (Jedis again = new Jedis(redis.url())) {
                assertEquals(201, put(proxy, "b", "v1", lock(again, "files/b", "w1")).status());
            }
        }
    }

    /** A Redis that is stopped (SIGSTOP) accepts connections and answers nothing: 503 within the timeout. */
    @Test
    void aStoppedRedisIs503WithinTheTimeout() throws Exception {
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             Jedis admin = new Jedis(redis.url());
             ProxyFixture proxy = start(dir, "kind: redis\nurl: ${REDIS}\ntimeout: 300ms\ncache: {enabled: false}",
                     Map.of("REDIS", redis.url()))) {
            long a = lock(admin, "files/a", "w1");
            assertEquals(201, put(proxy, "a", "v1", a).status());
            redis.pause();
            try {
                long start = System.nanoTime();
                Http.Response r = put(proxy, "a", "v2", a);
                long tookMs = (System.nanoTime() - start) / 1_000_000;
                assertEquals(503, r.status(), r.body());
                assertTrue(tookMs < 1500, "answered in " + tookMs + " ms");
                assertEquals(Optional.of("v1"), stored(dir, "a"));
            } finally {
                redis.resume();
            }
            assertEquals(204, put(proxy, "a", "v3", a).status(), "answers again once Redis does");
        }
    }

    @Test
    void aRefusedAuthOrAnAclWithoutGetIs503AndTheRightPasswordWrites() throws Exception {
        Path secret = Files.writeString(dir.resolve("redis-password"), "verifier-pw\n");
        try (RedisServer redis = RedisServer.start(RedisServer.options().password("admin-pw")
                .aclUser("verifier", "verifier-pw", "~files/* -@all +get"));
             Jedis admin = new Jedis(new HostAndPort("127.0.0.1", redis.port()),
                     DefaultJedisClientConfig.builder().password("admin-pw").build())) {
            long a = lock(admin, "files/a", "w1");
            try (ProxyFixture wrong = start(dir, "kind: redis\nurl: ${REDIS}\nusername: verifier\npassword: wrong",
                    Map.of("REDIS", redis.url()))) {
                Http.Response r = put(wrong, "a", "v", a);
                assertEquals(503, r.status(), r.body());
                assertTrue(r.body().contains("WRONGPASS"), r.body());
                assertFalse(r.body().contains("verifier-pw"), r.body());
                assertEquals(Optional.empty(), stored(dir, "a"));
            }
            try (ProxyFixture none = start(dir, "kind: redis\nurl: ${REDIS}", Map.of("REDIS", redis.url()))) {
                Http.Response r = put(none, "a", "v", a);
                assertEquals(503, r.status(), r.body());
                assertTrue(r.body().contains("NOAUTH"), r.body());
            }
            admin.aclSetUser("no-get", "on", ">no-get-pw", "~*", "-@all", "+ping");
            try (ProxyFixture noGet = start(dir, "kind: redis\nurl: ${REDIS}\nusername: no-get\npassword: no-get-pw",
                    Map.of("REDIS", redis.url()))) {
                Http.Response r = put(noGet, "a", "v", a);
                assertEquals(503, r.status(), r.body());
                assertTrue(r.body().contains("NOPERM") && r.body().contains("'get'"), r.body());
            }
            try (ProxyFixture right = start(dir, "kind: redis\nurl: ${REDIS}\nusername: verifier\npassword-file: ${PW}",
                    Map.of("REDIS", redis.url(), "PW", secret.toString()))) {
                assertEquals(201, put(right, "a", "v", a).status());
                assertEquals(Optional.of("v"), stored(dir, "a"));
            }
        }
    }

    /**
     * A Redis that takes TLS only and wants client certificates: the verifier with the CA and its certificate
     * writes; another CA, a server certificate for another name, and plain text all answer 503 with nothing written.
     */
    @Test
    void overTlsOnlyTheRightCaAndNameWrite() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("pki"));
        TestPki other = TestPki.create(dir.resolve("other"));
        TestPki.Leaf server = pki.server("redis");
        TestPki.Leaf proxyCert = pki.leaf("proxy", "DNS:proxy");
        TestPki.Leaf misnamed = pki.leaf("misnamed", "DNS:wrong.example");
        try (RedisServer redis = RedisServer.start(RedisServer.options().tls(server, true));
             RedisServer wrongName = RedisServer.start(RedisServer.options().tls(misnamed, false));
             Jedis admin = new Jedis(new HostAndPort("127.0.0.1", redis.port()), DefaultJedisClientConfig.builder()
                     .ssl(true).sslSocketFactory(TestPki.sslContext(proxyCert).getSocketFactory()).build())) {
            long a = lock(admin, "files/a", "w1");
            Map<String, String> vars = Map.of("REDIS", redis.url(), "CA", pki.ca().toString(), "OTHER_CA",
                    other.ca().toString(), "CERT", proxyCert.cert().toString(), "KEY", proxyCert.key().toString(),
                    "MISNAMED", wrongName.url(), "PLAIN", redis.url().replace("rediss://", "redis://"));
            try (ProxyFixture untrusted = start(dir, "kind: redis\nurl: ${REDIS}\ntls: {ca: \"${OTHER_CA}\", cert:"
                    + " \"${CERT}\", key: \"${KEY}\"}", vars)) {
                Http.Response r = put(untrusted, "a", "v", a);
                assertEquals(503, r.status(), r.body());
                assertTrue(r.body().contains("PKIX"), r.body());
            }
            try (ProxyFixture name = start(dir, "kind: redis\nurl: ${MISNAMED}\ntls: {ca: \"${CA}\"}", vars)) {
                Http.Response r = put(name, "a", "v", a);
                assertEquals(503, r.status(), r.body());
                assertTrue(r.body().contains("No subject alternative names matching IP address 127.0.0.1"), r.body());
            }
            try (ProxyFixture plain = start(dir, "kind: redis\nurl: ${PLAIN}\ntimeout: 500ms", vars)) {
                assertEquals(503, put(plain, "a", "v", a).status());
            }
            assertEquals(Optional.empty(), stored(dir, "a"));
            try (ProxyFixture trusted = start(dir, "kind: redis\nurl: ${REDIS}\ntls: {ca: \"${CA}\", cert: \"${CERT}\","
                    + " key: \"${KEY}\"}", vars)) {
                assertEquals(201, put(trusted, "a", "v", a).status());
                assertEquals(403, put(trusted, "a", "forged", a + 1).status());
            }
            assertEquals(Optional.of("v"), stored(dir, "a"));
        }
    }

    /**
     * A Redis Cluster of two nodes, the proxy given the first: a lock whose slot the second node serves is read
     * through the cluster client (the first node answers MOVED), one on the first node directly.
     */
    @Test
    void aRedisClusterIsReadThroughTheClusterClient() throws Exception {
        List<RedisServer> nodes = RedisServer.startCluster(2);
        try (Jedis first = new Jedis(nodes.get(0).url());
             Jedis second = new Jedis(nodes.get(1).url());
             ProxyFixture proxy = start(dir, "kind: redis\nurl: ${REDIS}\ncache: {enabled: false}",
                     Map.of("REDIS", nodes.get(0).url()))) {
            String remote = nameWithSlot(8192, 16383);
            String local = nameWithSlot(0, 8191);
            long onSecond = lock(second, "files/" + remote, "w1");
            long onFirst = lock(first, "files/" + local, "w1");
            assertEquals(403, put(proxy, remote, "forged", onSecond + 1).status());
            assertEquals(201, put(proxy, remote, "v", onSecond).status());
            assertEquals(201, put(proxy, local, "v", onFirst).status());
            assertEquals(403, put(proxy, local, "forged", onFirst + 1).status());
        } finally {
            nodes.forEach(RedisServer::close);
        }
    }

    /** A file name whose scope {@code files/<name>} hashes to a slot in {@code [from, to]}. */
    private static String nameWithSlot(int from, int to) {
        for (int i = 0; ; i++) {
            int slot = redis.clients.jedis.util.JedisClusterCRC16.getSlot("files/k" + i);
            if (slot >= from && slot <= to) {
                return "k" + i;
            }
        }
    }
}
