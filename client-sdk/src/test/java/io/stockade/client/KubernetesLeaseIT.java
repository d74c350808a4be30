package io.stockade.client;

import java.net.http.HttpClient;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The Kubernetes Lease provider against the recorded Lease API (see {@link LeaseApiServer}). */
class KubernetesLeaseIT {

    private LeaseApiServer api;
    private LeaseProvider a;
    private LeaseProvider b;

    @BeforeEach
    void start() throws Exception {
        api = new LeaseApiServer();
        a = Leases.newBuilder().holderIdentity("pod-a").kubernetes(api.uri(), "jobs", "token-a",
                HttpClient.newHttpClient());
        b = Leases.newBuilder().holderIdentity("pod-b").kubernetes(api.uri(), "jobs", null,
                HttpClient.newHttpClient());
    }

    @AfterEach
    void stop() {
        a.close();
        b.close();
        api.close();
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> spec(String name) {
        return (Map<String, Object>) api.get("jobs", name).get("spec");
    }

    @Test
    void acquireCreatesTheLeaseWithTokenOneAndTheBearerToken() throws Exception {
        try (Lease lease = a.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2))) {
            assertEquals(1, lease.token());
            Map<String, Object> spec = spec("report");
            assertEquals("pod-a", spec.get("holderIdentity"));
            assertEquals(3L, spec.get("leaseDurationSeconds"));
            assertEquals(1L, spec.get("leaseTransitions"));
            assertTrue(api.requests.stream().anyMatch(r -> r.endsWith("auth=Bearer token-a")), api.requests.toString());
        }
    }

    @Test
    void contendReleaseAndTokensStrictlyIncreaseAcrossHolders() throws Exception {
        Lease first = a.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2));
        assertThrows(TimeoutException.class, () -> b.acquire("report", Duration.ofSeconds(3), Duration.ofMillis(500)));
        first.close();
        assertEquals("", spec("report").get("holderIdentity"), "released as client-go does: empty holder");
        Lease second = b.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2));
        assertEquals(2, second.token());
        second.close();
        try (Lease third = a.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2))) {
            assertEquals(3, third.token());
        }
    }

    @Test
    void theSameIdentityReacquiringGetsAHigherTokenUnlikeClientGo() throws Exception {
        Lease first = a.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2));
        first.close();
        try (Lease again = a.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2))) {
            assertEquals(first.token() + 1, again.token());
            assertEquals(again.token(), ((Number) spec("report").get("leaseTransitions")).longValue());
        }
    }

    @Test
    void theWatchdogRenewsWithTheResourceVersionPastTheTtl() throws Exception {
        // a 3 s lease, past whose ttl the test waits: with 1 s a renewal had 333 ms to answer (the watchdog's budget:
        // the renew deadline, 2/3 of the ttl, less the renew interval), which the stand-in API server in this JVM
        // missed on a loaded host (CONNECTION_LOST, 2026-12-06, load average 30 on 2 cores)
        try (Lease lease = a.acquire("report", Duration.ofSeconds(3), Duration.ofSeconds(2))) {
            String renewTime = (String) spec("report").get("renewTime");
            Thread.sleep(3500);
            assertTrue(lease.isValid(), "renewed: " + lease.lossReason());
            assertTrue(((String) spec("report").get("renewTime")).compareTo(renewTime) > 0);
            assertThrows(TimeoutException.class, () -> b.acquire("report", Duration.ofSeconds(1),
                    Duration.ofMillis(300)));
        }
    }

    @Test
    void anAbandonedLeaseIsTakenAfterItsDurationOnTheTakersOwnClock() throws Exception {
        // a client-go elector held it (transitions 4) and crashed; its renewTime is not compared with our clock
        api.create("jobs", "report", "crashed-pod", 2, 4);
        long start = System.nanoTime();
        try (Lease lease = b.acquire("report", Duration.ofSeconds(2), Duration.ofSeconds(6))) {
            assertTrue(System.nanoTime() - start >= TimeUnit.SECONDS.toNanos(2), "waited a full lease duration");
            assertEquals(5, lease.token());
            assertEquals("pod-b", spec("report").get("holderIdentity"));
        }
    }

    @Test
    void aLeaseWrittenByAnotherElectorRefusesTheRenewal() throws Exception {
        Lease first = a.acquire("report", Duration.ofSeconds(2), Duration.ofSeconds(2));
        CompletableFuture<LossReason> heard = new CompletableFuture<>();
        first.addListener((l, r) -> heard.complete(r));
        api.takeOver("jobs", "report", "client-go-pod");
        assertEquals(LossReason.RENEWAL_REFUSED, heard.get(3, TimeUnit.SECONDS));
        assertThrows(LeaseLostException.class, () -> first.checkpoint(Duration.ZERO));
        first.close();
        assertEquals("client-go-pod", spec("report").get("holderIdentity"), "release never frees another's lease");
    }

    @Test
    void aDeletedLeaseIsRevokedAndTheNextTokenStillRises() throws Exception {
        Lease first = a.acquire("report", Duration.ofSeconds(2), Duration.ofSeconds(2));
        CompletableFuture<LossReason> heard = new CompletableFuture<>();
        first.addListener((l, r) -> heard.complete(r));
        api.delete("jobs", "report");
        assertEquals(LossReason.REVOKED, heard.get(3, TimeUnit.SECONDS));
        try (Lease again = a.acquire("report", Duration.ofSeconds(2), Duration.ofSeconds(2))) {
            assertTrue(again.token() > first.token(), "this process remembers the highest token it saw");
        }
    }
}
