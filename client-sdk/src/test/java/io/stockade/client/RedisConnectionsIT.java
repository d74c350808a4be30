package io.stockade.client;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import javax.net.ssl.SSLContext;

import io.stockade.policy.ClientTls;
import io.stockade.proxy.tls.ClientTlsFiles;
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
import redis.clients.jedis.util.JedisClusterCRC16;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How the Redis provider reaches Redis: TLS only (the server's name verified, a client certificate for
 * {@code tls-auth-clients yes}), an ACL user with only the permissions the client SDK README lists, and a Redis
 * Cluster of two nodes (the lock and counter keys in one slot, on the node serving it; a name that cannot share a
 * slot is refused, saying why).
 */
@RequiresTools(Tools.Tool.REDIS)
class RedisConnectionsIT {

    /** The ACL rules client-sdk/README.md gives for a lease user (keys under jobs/ here). */
    static final String LEASE_USER_RULES = "resetchannels ~jobs/* ~stockade:token:* -@all +eval +evalsha +get +set"
            + " +incr +incrby +pexpire +pttl +del +time +wait +info +ping +client|setname +select";

    @TempDir
    Path dir;

    @BeforeEach
    void needsRedis() {
    }

    private static SSLContext context(Path ca, Path cert, Path key) throws Exception {
        return ClientTlsFiles.read(new ClientTls(ca, cert, key), "test").sslContext();
    }

    @Test
    void overTlsWithAClientCertificateAndAnAclUserWithTheDocumentedRules() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("pki"));
        TestPki.Leaf server = pki.server("redis");
        TestPki.Leaf client = pki.leaf("locker", "DNS:locker");
        try (RedisServer redis = RedisServer.start(RedisServer.options().tls(server, true).password("admin-pw")
                .aclUser("locker", "locker-pw", LEASE_USER_RULES));
             LeaseProvider leases = Leases.newBuilder().holderIdentity("tls")
                     .redisTls(context(pki.ca(), client.cert(), client.key()))
                     .redisCredentials("locker", "locker-pw").redis(redis.url());
             LeaseProvider other = Leases.newBuilder().holderIdentity("other")
                     .redisTls(context(pki.ca(), client.cert(), client.key()))
                     .redis(redis.url().replace("rediss://", "rediss://locker:locker-pw@"))) {
            assertTrue(redis.url().startsWith("rediss://"));
            Lease first = leases.acquire("jobs/tls", Duration.ofSeconds(2), Duration.ofSeconds(5));
            CompletableFuture<LossReason> heard = new CompletableFuture<>();
            first.addListener((l, r) -> heard.complete(r));
            assertThrows(TimeoutException.class, () -> other.acquire("jobs/tls", Duration.ofSeconds(2),
                    Duration.ofMillis(200)));
            // renewals work with the user's permissions: no loss across two renew intervals
            assertThrows(TimeoutException.class, () -> heard.get(1500, TimeUnit.MILLISECONDS));
            first.close();
            try (Lease second = other.acquire("jobs/tls", Duration.ofSeconds(2), Duration.ofSeconds(5))) {
                assertTrue(second.token() > first.token());
            }
            // the user reaches nothing else: the rules are as narrow as the README says
            try (Jedis locker = new Jedis(new HostAndPort("127.0.0.1", redis.port()), DefaultJedisClientConfig
                    .builder().ssl(true).sslSocketFactory(context(pki.ca(), client.cert(), client.key())
                            .getSocketFactory()).user("locker").password("locker-pw").build())) {
                assertTrue(assertThrows(redis.clients.jedis.exceptions.JedisAccessControlException.class,
                        () -> locker.get("other-key")).getMessage().startsWith("NOPERM"));
            }
        }
    }

    @Test
    void aWrongPasswordAnotherCaAWrongNameOrNoClientCertificateCannotAcquire() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("pki"));
        TestPki other = TestPki.create(dir.resolve("other"));
        TestPki.Leaf server = pki.server("redis");
        TestPki.Leaf client = pki.leaf("locker", "DNS:locker");
        TestPki.Leaf wrongName = pki.leaf("wrong-name", "DNS:wrong.example");
        try (RedisServer redis = RedisServer.start(RedisServer.options().tls(server, true)
                .aclUser("locker", "locker-pw", LEASE_USER_RULES));
             RedisServer misnamed = RedisServer.start(RedisServer.options().tls(wrongName, false))) {
            String what = assertCannotAcquire(Leases.newBuilder().redisTls(context(pki.ca(), client.cert(),
                    client.key())).redisCredentials("locker", "wrong").redis(redis.url()));
            assertTrue(what.contains("WRONGPASS"), what);
            assertFalse(what.contains("wrong\""), what);

            what = assertCannotAcquire(Leases.newBuilder().redisTls(context(other.ca(), client.cert(), client.key()))
                    .redisCredentials("locker", "locker-pw").redis(redis.url()));
            assertTrue(what.contains("PKIX path building failed"), what);

            what = assertCannotAcquire(Leases.newBuilder().redisTls(context(pki.ca(), null, null))
                    .redisCredentials("locker", "locker-pw").redis(redis.url()));
            // the server wants a client certificate; with TLS 1.3 its alert may come after the client's first write,
            // which then meets a closed connection instead of the alert
            assertTrue(what.contains("certificate_required") || what.contains("Broken pipe")
                    || what.contains("Connection reset"), what);

            what = assertCannotAcquire(Leases.newBuilder().redisTls(context(pki.ca(), null, null))
                    .redis(misnamed.url()));
            assertTrue(what.contains("No subject alternative names matching IP address 127.0.0.1"), what);

            // plain text to a port that speaks TLS only
            assertCannotAcquire(Leases.newBuilder().redis(redis.url().replace("rediss://", "redis://")));
        }
    }

    private static String assertCannotAcquire(LeaseProvider leases) {
        try (leases) {
            IllegalStateException e = assertThrows(IllegalStateException.class,
                    () -> leases.acquire("jobs/refused", Duration.ofSeconds(2), Duration.ofSeconds(1)));
            return e.getMessage();
        }
    }

    /**
     * A Redis Cluster of two nodes, the provider given the first: each lock goes to the node serving its slot, its
     * counter with it (one slot); a name with its own hash tag keeps it; a name with a '}' but no hash tag cannot
     * share a slot with any counter key and is refused before anything is sent, saying what to write instead.
     */
    @Test
    void aRedisClusterGetsTheLockAndItsCounterInOneSlotOnTheRightNode() throws Exception {
        java.util.List<RedisServer> nodes = RedisServer.startCluster(2);
        try (LeaseProvider leases = Leases.newBuilder().holderIdentity("c").redis(nodes.get(0).url());
             Jedis first = new Jedis(nodes.get(0).url());
             Jedis second = new Jedis(nodes.get(1).url())) {
            String remote = nameWithSlot(8192, 16383);
            String local = nameWithSlot(0, 8191);
            Lease onSecond = leases.acquire(remote, Duration.ofSeconds(2), Duration.ofSeconds(5));
            Lease onFirst = leases.acquire(local, Duration.ofSeconds(2), Duration.ofSeconds(5));
            assertEquals(Long.toString(onSecond.token()), second.get("stockade:token:{" + remote + "}"));
            assertTrue(second.get(remote).startsWith(onSecond.token() + ":"));
            assertEquals(Long.toString(onFirst.token()), first.get("stockade:token:{" + local + "}"));
            onSecond.close();
            try (Lease again = leases.acquire(remote, Duration.ofSeconds(2), Duration.ofSeconds(5))) {
                assertTrue(again.token() > onSecond.token());
                // renewals reach the right node too: the key's time to live runs down, then is set back to 2 s
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(3);
                while (second.pttl(remote) > 1700 && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                while (second.pttl(remote) <= 1800 && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertTrue(second.pttl(remote) > 1800, "not renewed: " + again.lossReason());
                assertTrue(again.isValid() && onFirst.isValid(), again + " " + onFirst);
            }
            onFirst.close();
            try (Lease tagged = leases.acquire("{jobs}:report", Duration.ofSeconds(2), Duration.ofSeconds(5))) {
                Jedis owner = JedisClusterCRC16.getSlot("jobs") < 8192 ? first : second;
                assertNotNull(owner.get("stockade:token:{jobs}:report"));
                assertTrue(tagged.isValid());
            }
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                    () -> leases.acquire("jobs}report", Duration.ofSeconds(2), Duration.ofSeconds(1)));
            assertTrue(e.getMessage().contains("cannot share a Redis Cluster slot") && e.getMessage()
                    .contains("'{jobsreport}'"), e.getMessage());
        } finally {
            nodes.forEach(RedisServer::close);
        }
    }

    /** A lease name whose slot is in {@code [from, to]}. */
    private static String nameWithSlot(int from, int to) {
        for (int i = 0; ; i++) {
            int slot = JedisClusterCRC16.getSlot("jobs/k" + i);
            if (slot >= from && slot <= to) {
                return "jobs/k" + i;
            }
        }
    }
}
