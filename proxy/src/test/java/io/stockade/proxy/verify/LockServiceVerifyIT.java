package io.stockade.proxy.verify;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.pipeline.FencePipeline;
import io.stockade.proxy.testing.Warnings;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.stockade.proxy.VerifiedFiles.mentions;
import static io.stockade.proxy.VerifiedFiles.put;
import static io.stockade.proxy.VerifiedFiles.start;
import static io.stockade.proxy.VerifiedFiles.stored;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify} against the lock service that issued the token, with real components: an etcd member
 * ({@code test-tools' EtcdServer}) whose locks are taken with etcd's own lock API (as the client SDK's etcd provider
 * takes them), and PostgreSQL with the lease table's rows set as the SDK's provider sets them. An invented
 * token is refused (403) and does not raise the fence — the honest write after it succeeds; a lock service that
 * cannot answer refuses the write (503) and nothing is written; a remembered verdict spares the lookup.
 */
class LockServiceVerifyIT {
    @TempDir
    Path dir;

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }

    /** Takes the etcd lock {@code name} with etcd's lock API; the token is the lock key's create revision. */
    private static long lock(Client etcd, String name) throws Exception {
        long lease = etcd.getLeaseClient().grant(60).get(5, TimeUnit.SECONDS).getID();
        ByteSequence key = etcd.getLockClient().lock(bytes(name), lease).get(5, TimeUnit.SECONDS).getKey();
        return etcd.getKVClient().get(key).get(5, TimeUnit.SECONDS).getKvs().get(0).getCreateRevision();
    }

    // ---- etcd ----

    @Test
    void etcdAdmitsTheLockHoldersTokenAndRefusesAnInventedOne() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer server = EtcdServer.single();
             Client etcd = Client.builder().endpoints(server.endpoints().split(",")).build();
             ProxyFixture proxy = start(dir, "kind: etcd\nendpoints: ${ETCD}\nprefix: locks/",
                     Map.of("ETCD", server.endpoints()))) {
            long token = lock(etcd, "locks/files/a");

            // an invented token (never a lock key's revision) is refused and does not raise the fence
            Http.Response inflated = put(proxy, "a", "evil", Long.MAX_VALUE);
            assertEquals(403, inflated.status(), inflated.body());
            assertTrue(inflated.body().contains("unverified-token"), inflated.body());
            assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
            assertEquals(Optional.empty(), stored(dir, "a"));
            // nor a token for a lock nobody holds
            assertEquals(403, put(proxy, "b", "evil", token).status());

            // the holder's token passes
            assertEquals(201, put(proxy, "a", "v", token).status());
            assertEquals(Optional.of("v"), stored(dir, "a"));
            assertEquals(2, proxy.counted("files", Outcome.UNVERIFIED, 2));

            // a queued contender cannot use its own key's revision before it holds the lock
            long lease = etcd.getLeaseClient().grant(60).get(5, TimeUnit.SECONDS).getID();
            etcd.getLockClient().lock(bytes("locks/files/a"), lease); // waits behind the holder
            long queued = waitForQueuedKey(etcd, "locks/files/a/", token);
            assertEquals(403, put(proxy, "a", "contender", queued).status());
            assertEquals(Optional.of("v"), stored(dir, "a"));
        }
    }

    /**
     * etcd's lock API puts the keys of lock {@code x/y} under {@code x/y/}, inside {@code x/}: a key of a nested lock
     * is never a holder of {@code x}. The holder of {@code x/y} cannot write to scope {@code x} with its token, and
     * while it holds, a contender for {@code x} waits (etcd's lock sees the nested key as an earlier contender), so
     * that contender's revision is not genuine either.
     */
    @Test
    void etcdRefusesTheHolderOfANestedLockForTheOuterScope() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer server = EtcdServer.single();
             Client etcd = Client.builder().endpoints(server.endpoints().split(",")).build();
             ProxyFixture proxy = start(dir, "kind: etcd\nendpoints: ${ETCD}\nprefix: locks/",
                     Map.of("ETCD", server.endpoints()))) {
            long inner = lock(etcd, "locks/files/x/y");

            Http.Response outer = put(proxy, "x", "not the holder of x", inner);
            assertEquals(403, outer.status(), outer.body());
            assertEquals(Optional.empty(), proxy.server().store().get("files/x"));
            assertEquals(Optional.empty(), stored(dir, "x"));

            // a contender for x waits behind the nested key: its revision is not x's holder's
            long lease = etcd.getLeaseClient().grant(60).get(5, TimeUnit.SECONDS).getID();
            var waiting = etcd.getLockClient().lock(bytes("locks/files/x"), lease);
            long queued = waitForQueuedKey(etcd, "locks/files/x/", inner);
            Thread.sleep(200);
            assertTrue(!waiting.isDone(), "etcd granted lock x while x/y was held");
            assertEquals(403, put(proxy, "x", "contender", queued).status());
            assertEquals(Optional.empty(), stored(dir, "x"));

            // the nested lock's own scope is unaffected
            assertEquals(201, put(proxy, "x/y", "v", inner).status());
            assertEquals(Optional.of("v"), stored(dir, "x/y"));
        }
    }

    /** An outer lock taken before a nested one: each holder is genuine for its own scope only. */
    @Test
    void etcdTellsTheOuterAndTheNestedHolderApart() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer server = EtcdServer.single();
             Client etcd = Client.builder().endpoints(server.endpoints().split(",")).build();
             ProxyFixture proxy = start(dir, "kind: etcd\nendpoints: ${ETCD}",
                     Map.of("ETCD", server.endpoints()))) {
            long outer = lock(etcd, "files/x");
            long inner = lock(etcd, "files/x/y");
            assertEquals(403, put(proxy, "x/y", "outer token", outer).status());
            assertEquals(403, put(proxy, "x", "inner token", inner).status());
            assertEquals(201, put(proxy, "x", "v", outer).status());
            assertEquals(Optional.of("v"), stored(dir, "x"));
        }
    }

    /** WARN lines of the pipeline while {@code body} runs. */
    private static List<String> warnings(Warnings.ThrowingRunnable body) throws Exception {
        return Warnings.messages(FencePipeline.class, body);
    }

    /**
     * A 403 must not tell a forger the token to send instead (it used to say "the holder … has token N"); the
     * operator's log says it. The WARN line for refusals is limited to one a second per policy, so forged tokens
     * cannot flood the log; the metric still counts each one.
     */
    @Test
    void etcdRefusalsNeverTellTheClientTheHoldersTokenAndTheirWarningsAreLimited() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer server = EtcdServer.single();
             Client etcd = Client.builder().endpoints(server.endpoints().split(",")).build();
             ProxyFixture proxy = start(dir, "kind: etcd\nendpoints: ${ETCD}", Map.of("ETCD", server.endpoints()))) {
            long token = lock(etcd, "files/a");
            int forged = 20;
            long[] elapsed = new long[1];
            List<String> warned = warnings(() -> {
                long start = System.nanoTime();
                for (int i = 0; i < forged; i++) {
                    Http.Response r = put(proxy, "a", "evil", Long.MAX_VALUE - i);
                    assertEquals(403, r.status(), r.body());
                    assertFalse(mentions(r.body(), token), "the 403 gives the holder's token away: " + r.body());
                    assertFalse(r.body().contains("has token"), r.body());
                }
                elapsed[0] = System.nanoTime() - start;
            });
            assertEquals(forged, proxy.counted("files", Outcome.UNVERIFIED, forged));
            List<String> refusals = warned.stream().filter(w -> w.contains("refused by the etcd verifier")).toList();
            assertTrue(refusals.size() >= 1 && refusals.size() <= 1 + TimeUnit.NANOSECONDS.toSeconds(elapsed[0]),
                    refusals.size() + " WARN lines in " + elapsed[0] / 1_000_000 + " ms: " + refusals);
            assertTrue(refusals.get(0).contains("has token " + token), refusals.get(0));

            assertEquals(201, put(proxy, "a", "v", token).status());
        }
    }

    private static long waitForQueuedKey(Client etcd, String prefix, long holder) throws Exception {
        for (int i = 0; i < 200; i++) {
            var kvs = etcd.getKVClient().get(bytes(prefix), io.etcd.jetcd.options.GetOption.builder()
                    .isPrefix(true).build()).get(5, TimeUnit.SECONDS).getKvs();
            for (var kv : kvs) {
                if (kv.getCreateRevision() != holder) {
                    return kv.getCreateRevision();
                }
            }
            Thread.sleep(10);
        }
        throw new AssertionError("the contender's key did not appear");
    }

    /**
     * With the default cache (ttl 10s): a holder whose lease ran out without a keep-alive (a stopped process) is
     * refused as soon as its lock key is gone, though its verdict was remembered moments before; the next holder
     * takes the lock and writes. The remembered verdict ended with the lease etcd reported (its TTL left less the
     * margin), not after the ttl.
     */
    @Test
    void etcdAZombieIsRefusedAsSoonAsItsLeaseEndedWithTheDefaultCache() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer server = EtcdServer.single();
             Client etcd = Client.builder().endpoints(server.endpoints().split(",")).build();
             ProxyFixture proxy = start(dir, "kind: etcd\nendpoints: ${ETCD}", Map.of("ETCD", server.endpoints()))) {
            long lease = etcd.getLeaseClient().grant(3).get(5, TimeUnit.SECONDS).getID(); // never kept alive
            ByteSequence key = etcd.getLockClient().lock(bytes("files/a"), lease).get(5, TimeUnit.SECONDS).getKey();
            long old = etcd.getKVClient().get(key).get(5, TimeUnit.SECONDS).getKvs().get(0).getCreateRevision();
            assertEquals(201, put(proxy, "a", "old", old).status());
            assertEquals(204, put(proxy, "a", "old again", old).status());
            assertEquals(1, proxy.server().metrics().verifications("files", "remembered"), "the verdict is cached");

            long next = lock(etcd, "files/a"); // granted once the zombie's lease expired and its key went
            assertTrue(next > old);
            Http.Response zombie = put(proxy, "a", "zombie", old);
            assertEquals(403, zombie.status(), "a remembered verdict outlived the lease: " + zombie.body());
            assertEquals(Optional.of("old again"), stored(dir, "a"));
            assertEquals(old, proxy.server().store().get("files/a").orElseThrow().token(), "the fence did not move");
            assertEquals(204, put(proxy, "a", "new", next).status());
            assertEquals(409, put(proxy, "a", "zombie", old).status());
            assertEquals(Optional.of("new"), stored(dir, "a"));
        }
    }

    @Test
    void etcdDownIs503AndNothingIsWrittenButARememberedVerdictSparesTheLookup() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer server = EtcdServer.single();
             Client etcd = Client.builder().endpoints(server.endpoints().split(",")).build();
             ProxyFixture proxy = start(dir, "kind: etcd\nendpoints: ${ETCD}\ntimeout: 500ms\ncache: {ttl: 1m}",
                     Map.of("ETCD", server.endpoints()))) {
            long a = lock(etcd, "files/a");
            long b = lock(etcd, "files/b");
            assertEquals(201, put(proxy, "a", "v1", a).status());
            assertEquals(1, proxy.server().metrics().verifications("files", "genuine"));

            server.kill(0);
            // the same holder keeps writing from the remembered verdict: no lookup (etcd is gone)
            assertEquals(2, put(proxy, "a", "v2", a).status() / 100);
            assertEquals(Optional.of("v2"), stored(dir, "a"));
            assertEquals(1, proxy.server().metrics().verifications("files", "genuine"), "a second lookup was made");
            assertEquals(1, proxy.server().metrics().verifications("files", "remembered"));

            // a token not verified before fails closed: 503 with Retry-After, nothing written, fence untouched
            Http.Response down = put(proxy, "b", "v1", b);
            assertEquals(503, down.status(), down.body());
            assertTrue(down.body().contains("verifier-unavailable"), down.body());
            assertTrue(down.header("Retry-After").isPresent());
            assertEquals(Optional.empty(), stored(dir, "b"));
            assertEquals(Optional.empty(), proxy.server().store().get("files/b"));
            assertEquals(1, proxy.server().metrics().verifications("files", "unavailable"));
        }
    }

    // ---- PostgreSQL ----

    /**
     * The lease table as the verifier reads it: one row per name, its holder, token and expiry (a released lease
     * expires at minus infinity). That the client SDK's PostgreSQL provider writes the same is checked once, against
     * the provider itself, by client-sdk's {@code VerifierWireFormatIT}; here the rows are set directly.
     */
    private static final String LEASES = """
            CREATE TABLE stockade_leases (
                name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL)""";
    private static final String SET_LEASE = """
            INSERT INTO stockade_leases (name, holder, token, expires_at)
            VALUES (?, ?, ?, now() + ?::bigint * interval '1 millisecond')
            ON CONFLICT (name) DO UPDATE
               SET holder = EXCLUDED.holder, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at
            RETURNING token""";
    private static final String RELEASE = """
            UPDATE stockade_leases SET expires_at = '-infinity' WHERE name = ? RETURNING token""";

    /** The lease {@code name} is held by {@code holder} with {@code token} for {@code ttlMillis}; the token. */
    private static long lease(Pg pg, String name, String holder, long token, long ttlMillis) throws Exception {
        return Long.parseLong(pg.single(SET_LEASE, name, holder, token, ttlMillis).orElseThrow());
    }

    private static long lease(Pg pg, String name, String holder, long token) throws Exception {
        return lease(pg, name, holder, token, 60_000);
    }

    @Test
    void postgresAdmitsTheLeaseTablesTokenAndRefusesOthers() throws Exception {
        try (Pg pg = Pg.create(LEASES);
             ProxyFixture proxy = start(dir, "kind: postgres\ndatasource: {url: \"${PG}\", user: postgres}\n"
                     + "prefix: leases/", Map.of("PG", pg.url()))) {
            long token = lease(pg, "leases/files/a", "w2", 2); // an earlier holder had token 1

            Http.Response inflated = put(proxy, "a", "evil", Long.MAX_VALUE);
            assertEquals(403, inflated.status(), inflated.body());
            // the 403 does not tell a forger the lease's token (it used to say "has token 2")
            assertFalse(mentions(inflated.body(), token), inflated.body());
            assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
            assertEquals(Optional.empty(), stored(dir, "a"));
            // an earlier holder's token (1) is not the current lease's: refused on a fresh scope
            Http.Response old = put(proxy, "a", "old", 1);
            assertEquals(403, old.status());
            assertFalse(mentions(old.body(), token), old.body());
            // no lease at all
            assertEquals(403, put(proxy, "b", "evil", 1).status());

            assertEquals(201, put(proxy, "a", "v2", token).status());
            assertEquals(Optional.of("v2"), stored(dir, "a"));
            // a zombie below the highest is stale (409), as without verification
            assertEquals(409, put(proxy, "a", "zombie", 1).status());
            assertEquals(Optional.of("v2"), stored(dir, "a"));
        }
    }

    /**
     * A lease that was released, or that expired, has no holder: its token is no longer genuine, though the row
     * still carries it until someone acquires again (the verifier used to compare tokens only).
     */
    @Test
    void postgresRefusesTheTokenOfAReleasedOrExpiredLease() throws Exception {
        try (Pg pg = Pg.create(LEASES);
             ProxyFixture proxy = start(dir, "kind: postgres\ndatasource: {url: \"${PG}\", user: postgres}\n"
                     + "cache: {enabled: false}", Map.of("PG", pg.url()))) {
            long held = lease(pg, "files/a", "w1", 1);
            assertEquals(201, put(proxy, "a", "v1", held).status());
            pg.single(RELEASE, "files/a").orElseThrow(); // the row stays, its expiry goes to minus infinity
            Http.Response released = put(proxy, "a", "after release", held);
            assertEquals(403, released.status(), released.body());
            assertTrue(released.body().contains("expired or was released"), released.body());
            assertEquals(Optional.of("v1"), stored(dir, "a"));

            long expiring = lease(pg, "files/b", "w2", 1, 300);
            assertEquals(201, put(proxy, "b", "v1", expiring).status());
            Thread.sleep(600);
            Http.Response expired = put(proxy, "b", "after expiry", expiring);
            assertEquals(403, expired.status(), expired.body());
            assertTrue(expired.body().contains("expired or was released"), expired.body());
            assertEquals(Optional.of("v1"), stored(dir, "b"));

            // the next holder's token is genuine again
            long next = lease(pg, "files/a", "w3", held + 1);
            assertEquals(204, put(proxy, "a", "v2", next).status()); // overwrites v1
            assertEquals(Optional.of("v2"), stored(dir, "a"));
        }
    }

    @Test
    void postgresUnreachableIs503AndNothingIsWritten() throws Exception {
        String nowhere = "jdbc:postgresql://127.0.0.1:" + FreePorts.next() + "/test";
        try (ProxyFixture proxy = start(dir, "kind: postgres\ndatasource: {url: \"" + nowhere
                + "\", user: postgres, connect-timeout: 500ms}", Map.of())) {
            Http.Response r = put(proxy, "a", "v", 1);
            assertEquals(503, r.status(), r.body());
            assertTrue(r.header("Retry-After").isPresent());
            assertEquals(Optional.empty(), stored(dir, "a"));
            assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
        }
    }
}
