package io.stockade.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.stockade.testing.ConsulStandIn;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The Consul provider against {@link ConsulStandIn}, the proxy's in-process stand-in of Consul's session and KV
 * HTTP API (no Consul server can be installed here: <b>not a real Consul</b>). Consul's shortest session TTL is 10 s,
 * so the leases here have a 10 s ttl and renew every second ({@code renewFraction 0.1}); an expiry is made by moving
 * the stand-in's clock, not by waiting.
 */
class ConsulLeaseIT {
    private static final Duration TTL = Duration.ofSeconds(10);
    private static final String ACL = "sdk-acl-token-0f3c";

    private ConsulStandIn consul;
    private final List<LeaseProvider> providers = new ArrayList<>();

    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        consul = new ConsulStandIn();
    }

    @AfterEach
    void stop() {
        providers.forEach(LeaseProvider::close);
        consul.close();
    }

    private LeaseProvider provider(String holder, String token) {
        LeaseProvider p = Leases.newBuilder().holderIdentity(holder).renewFraction(0.1).renewDeadline(0.5)
                .consul(URI.create(consul.url()), "locks/", token);
        providers.add(p);
        return p;
    }

    private static ConsulLeaseService.Handle handle(Lease lease) {
        return (ConsulLeaseService.Handle) ((WatchedLease) lease).grant().handle();
    }

    private static CompletableFuture<LossReason> lossOf(Lease lease) {
        CompletableFuture<LossReason> reported = new CompletableFuture<>();
        lease.addListener((l, reason) -> reported.complete(reason));
        return reported;
    }

    /** Waits, up to a deadline, until the stand-in has seen {@code n} requests matching {@code prefix}. */
    private void awaitRequests(String prefix, int n) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (consul.requests.stream().filter(r -> r.startsWith(prefix)).count() < n) {
            assertTrue(System.nanoTime() < deadline, "expected " + n + " x " + prefix + " in " + consul.requests);
            Thread.sleep(20);
        }
    }

    @Test
    void theTokenIsTheModifyIndexOfTheAcquireAndASecondHolderWaitsForTheRelease() throws Exception {
        String name = "files/" + UUID.randomUUID();
        Lease first = provider("w1", null).acquire(name, TTL, Duration.ofSeconds(5));
        Map<String, Object> entry = consul.entry("locks/" + name).orElseThrow();
        assertEquals(entry.get("ModifyIndex"), first.token());
        assertEquals(handle(first).session(), entry.get("Session"));
        assertEquals(1L, entry.get("LockIndex"));

        LeaseProvider second = provider("w2", null);
        assertThrows(TimeoutException.class, () -> second.acquire(name, TTL, Duration.ofMillis(300)));
        assertEquals(List.of(handle(first).session()), consul.sessions(), "the waiter that gave up destroyed its"
                + " session");

        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return second.acquire(name, TTL, Duration.ofSeconds(10));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        first.close();
        assertEquals(Optional.of(LossReason.RELEASED), first.lossReason());
        Lease next = waiting.get(10, TimeUnit.SECONDS);
        assertTrue(next.token() > first.token(), next.token() + " > " + first.token());
        assertEquals(2L, consul.entry("locks/" + name).orElseThrow().get("LockIndex"));
        assertFalse(consul.sessions().contains(handle(first).session()), "released: the session destroyed");
        next.close();
        assertEquals(List.of(), consul.sessions());
        assertFalse(consul.entry("locks/" + name).orElseThrow().containsKey("Session"), "the key released");
    }

    @Test
    void theWatchdogRenewsTheSessionAndTheLeaseOutlivesItsTtlOnTheStandInsClock() throws Exception {
        Lease lease = provider("w1", null).acquire("files/renewed", TTL, Duration.ofSeconds(5));
        String session = handle(lease).session();
        awaitRequests("PUT /v1/session/renew/" + session, 2);
        // a renewal resets the session's TTL: time moves on by 1.5 × TTL, yet the session lives (renewed since)
        consul.advance(Duration.ofSeconds(15));
        awaitRequests("PUT /v1/session/renew/" + session, 3);
        consul.advance(Duration.ofSeconds(15));
        assertTrue(consul.sessions().contains(session));
        assertTrue(lease.isValid());
        assertTrue(consul.requests.contains("GET /v1/kv/locks/files/renewed?consistent token=null"));
    }

    @Test
    void anInvalidatedSessionEndsTheLeaseAtTheNextRenewal() throws Exception {
        Lease lease = provider("w1", null).acquire("files/invalidated", TTL, Duration.ofSeconds(5));
        CompletableFuture<LossReason> reported = lossOf(lease);
        consul.invalidate(handle(lease).session()); // as a failed node health check or an operator's destroy
        assertEquals(LossReason.REVOKED, reported.get(5, TimeUnit.SECONDS)); // renewals every second
        assertFalse(lease.isValid());
        assertThrows(LeaseLostException.class, () -> lease.checkpoint(Duration.ZERO));
    }

    @Test
    void aKeyNoLongerHeldByOurSessionEndsTheLease() throws Exception {
        Lease lease = provider("w1", null).acquire("files/taken", TTL, Duration.ofSeconds(5));
        CompletableFuture<LossReason> reported = lossOf(lease);
        // someone released our hold with our session id (an operator): the session lives, the key is not ours
        HttpClient http = HttpClient.newHttpClient();
        HttpResponse<String> r = http.send(HttpRequest.newBuilder(URI.create(consul.url()
                + "/v1/kv/locks/files/taken?release=" + handle(lease).session()))
                .PUT(HttpRequest.BodyPublishers.noBody()).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals("true", r.body());
        assertEquals(LossReason.RENEWAL_REFUSED, reported.get(5, TimeUnit.SECONDS));
    }

    @Test
    void anAclTokenIsSentAndATtlConsulRefusesIsAClearError() throws Exception {
        consul.requireToken = ACL;
        IllegalStateException denied = assertThrows(IllegalStateException.class,
                () -> provider("w1", null).acquire("files/acl", TTL, Duration.ofSeconds(5)));
        assertTrue(denied.getMessage().contains("HTTP 403"), denied.getMessage());
        Lease lease = provider("w1", ACL).acquire("files/acl", TTL, Duration.ofSeconds(5));
        assertTrue(consul.requests.getLast().endsWith("token=" + ACL), consul.requests.getLast());
        lease.close();

        IllegalArgumentException shortTtl = assertThrows(IllegalArgumentException.class,
                () -> provider("w1", ACL).acquire("files/acl", Duration.ofSeconds(3), Duration.ofSeconds(5)));
        assertTrue(shortTtl.getMessage().contains("10s..24h"), shortTtl.getMessage());
        assertThrows(IllegalArgumentException.class,
                () -> Leases.newBuilder().consul(URI.create(consul.url()), "/locks/", null));
    }

    /**
     * A real proxy (a child JVM) verifying against the same stand-in: the holder writes; once its session expired
     * (2 × TTL without renewal on the stand-in's clock) its lease is reported lost and its write is refused (403,
     * nothing reaches the storage); past the lock-delay a new holder writes; the old token is then stale (409).
     */
    @Test
    void aHolderWhoseSessionExpiredIsRefusedByARealProxy() throws Exception {
        String name = "c-" + UUID.randomUUID();
        Path stored = dir.resolve("files").resolve("files").resolve(name);
        try (Children.Proxy proxy = new Children.Proxy(dir, "{kind: consul, url: \"" + consul.url()
                + "\", prefix: locks/, cache: {enabled: false}}")) {
            HttpClient http = HttpClient.newHttpClient();
            URI file = URI.create(proxy.base + "/files/" + name);
            Lease old = provider("w1", null).acquire("files/" + name, TTL, Duration.ofSeconds(5));
            assertEquals(201, put(http, file, "old", old.token()).statusCode());
            assertEquals("old", Files.readString(stored));

            CompletableFuture<LossReason> reported = lossOf(old);
            consul.advance(Duration.ofSeconds(21)); // past 2 × TTL since the last renewal: invalidated
            assertEquals(LossReason.REVOKED, reported.get(5, TimeUnit.SECONDS));
            HttpResponse<String> zombie = put(http, file, "zombie", old.token());
            assertEquals(403, zombie.statusCode(), zombie.body());
            assertTrue(zombie.body().contains("nobody holds the Consul lock"), zombie.body());
            assertEquals("old", Files.readString(stored), "nothing reached the storage");

            consul.advance(Duration.ofSeconds(16)); // past the lock-delay
            try (Lease next = provider("w2", null).acquire("files/" + name, TTL, Duration.ofSeconds(5))) {
                HttpResponse<String> w = FencedHttpClient.of(http, next, Duration.ofSeconds(1)).send(
                        HttpRequest.newBuilder(file).PUT(HttpRequest.BodyPublishers.ofString("new")).build(),
                        HttpResponse.BodyHandlers.ofString());
                assertEquals(204, w.statusCode(), w.body());
                HttpResponse<String> stale = put(http, file, "zombie", old.token());
                assertEquals(409, stale.statusCode(), stale.body());
                assertEquals("new", Files.readString(stored));
            }
        }
    }

    private static HttpResponse<String> put(HttpClient http, URI uri, String body, long token) throws Exception {
        return http.send(HttpRequest.newBuilder(uri).header("Fencing-Token", Long.toString(token))
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }
}
