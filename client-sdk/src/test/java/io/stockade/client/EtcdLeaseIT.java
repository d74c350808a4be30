package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.stockade.testing.EtcdServer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The etcd provider against a real etcd. */
class EtcdLeaseIT {

    private static EtcdServer etcd;
    private static LeaseProvider a;
    private static LeaseProvider b;
    private static Client admin;

    @BeforeAll
    static void start() throws Exception {
        etcd = EtcdServer.single();
        a = Leases.newBuilder().holderIdentity("a").etcd(etcd.endpoints());
        b = Leases.newBuilder().holderIdentity("b").etcd(etcd.endpoints());
        admin = Client.builder().endpoints(etcd.endpoints()).build();
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (admin != null) {
                admin.close();
            }
            if (a != null) {
                a.close();
            }
            if (b != null) {
                b.close();
            }
        } finally {
            if (etcd != null) {
                etcd.close();
            }
        }
    }

    @Test
    void acquireContendReleaseAndTokensStrictlyIncreaseAcrossHolders() throws Exception {
        Lease first = a.acquire("jobs/contend", Duration.ofSeconds(5), Duration.ofSeconds(5));
        assertTrue(first.isValid());
        assertThrows(TimeoutException.class, () -> b.acquire("jobs/contend", Duration.ofSeconds(5),
                Duration.ofMillis(700)));
        first.close();
        Lease second = b.acquire("jobs/contend", Duration.ofSeconds(5), Duration.ofSeconds(5));
        assertTrue(second.token() > first.token(), second.token() + " > " + first.token());
        second.close();
        Lease third = a.acquire("jobs/contend", Duration.ofSeconds(5), Duration.ofSeconds(5));
        assertTrue(third.token() > second.token());
        third.close();
    }

    @Test
    void aWaitingHolderGetsTheLeaseWhenTheHolderReleases() throws Exception {
        Lease first = a.acquire("jobs/queue", Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<Lease> waiting = CompletableFuture.supplyAsync(() -> {
            try {
                return b.acquire("jobs/queue", Duration.ofSeconds(3), Duration.ofSeconds(20));
            } catch (Exception e) {
                throw new IllegalStateException(e);
            }
        });
        Thread.sleep(4000); // longer than the ttl: the waiter must keep its own lease alive while queued
        assertFalse(waiting.isDone());
        first.close();
        try (Lease second = waiting.get(10, TimeUnit.SECONDS)) {
            assertTrue(second.token() > first.token());
            assertTrue(second.isValid());
        }
    }

    /**
     * A waiter granted the lock after queueing starts with its whole ttl: its validity counts from a keep-alive sent
     * after the grant, not from the grant request or a keep-alive sent while it queued (it used to, and a waiter
     * granted just before its next queued keep-alive lost the lease at once on a loaded host).
     */
    @Test
    void aQueuedWaitersValidityCountsFromTheGrant() throws Exception {
        Duration ttl = Duration.ofSeconds(3);
        String[] endpoints = etcd.endpoints().split(",");
        try (EtcdLeaseService first = new EtcdLeaseService(endpoints, Ticker.system());
             EtcdLeaseService second = new EtcdLeaseService(endpoints, Ticker.system())) {
            LeaseService.Grant held = first.acquire("jobs/granted", "a", ttl, Duration.ofSeconds(5));
            CompletableFuture<LeaseService.Grant> waiting = CompletableFuture.supplyAsync(() -> {
                try {
                    return second.acquire("jobs/granted", "b", ttl, Duration.ofSeconds(20));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (admin.getKVClient().get(ByteSequence.from("jobs/granted/", StandardCharsets.UTF_8),
                    GetOption.builder().isPrefix(true).build()).get(5, TimeUnit.SECONDS).getCount() < 2) {
                assertTrue(System.nanoTime() < deadline, "the waiter queued");
                Thread.sleep(10);
            }
            long released = System.nanoTime();
            first.release("jobs/granted", "a", held);
            LeaseService.Grant granted = waiting.get(10, TimeUnit.SECONDS);
            assertTrue(granted.sentAt() - released >= 0,
                    "validity counted from " + (released - granted.sentAt()) / 1_000_000 + " ms before the grant");
            second.release("jobs/granted", "b", granted);
        }
    }

    @Test
    void theWatchdogRenewsPastTheTtl() throws Exception {
        try (Lease lease = a.acquire("jobs/renew", Duration.ofSeconds(2), Duration.ofSeconds(5))) {
            Thread.sleep(3500); // 1.75 ttls: five renewals, one every ttl/3
            assertTrue(lease.isValid(), "renewed: " + lease.lossReason());
            lease.checkpoint(Duration.ofMillis(500));
        }
    }

    @Test
    void deletingTheLockKeyRevokesTheLeaseAndAnotherHolderTakesItWithAHigherToken() throws Exception {
        Lease first = a.acquire("jobs/revoke", Duration.ofSeconds(3), Duration.ofSeconds(5));
        CompletableFuture<LossReason> heard = new CompletableFuture<>();
        first.addListener((l, r) -> heard.complete(r));
        ByteSequence prefix = ByteSequence.from("jobs/revoke/", StandardCharsets.UTF_8);
        List<KeyValue> keys = admin.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build())
                .get(5, TimeUnit.SECONDS).getKvs();
        assertEquals(1, keys.size());
        assertEquals(first.token(), keys.get(0).getCreateRevision());
        admin.getKVClient().delete(keys.get(0).getKey()).get(5, TimeUnit.SECONDS);
        assertEquals(LossReason.REVOKED, heard.get(3, TimeUnit.SECONDS), "noticed within one renew interval");
        assertThrows(LeaseLostException.class, () -> first.checkpoint(Duration.ZERO));
        try (Lease second = b.acquire("jobs/revoke", Duration.ofSeconds(3), Duration.ofSeconds(5))) {
            assertTrue(second.token() > first.token());
        }
        first.close();
        // the same holder comes back after losing it: a new, higher token
        try (Lease again = a.acquire("jobs/revoke", Duration.ofSeconds(3), Duration.ofSeconds(5))) {
            assertTrue(again.token() > first.token());
        }
    }

    @Test
    void aLostConnectionEndsTheLease() throws Exception {
        EtcdServer own = EtcdServer.single();
        try (LeaseProvider p = Leases.newBuilder().etcd(own.endpoints())) {
            Lease lease = p.acquire("jobs/conn", Duration.ofSeconds(3), Duration.ofSeconds(10));
            CompletableFuture<LossReason> heard = new CompletableFuture<>();
            lease.addListener((l, r) -> heard.complete(r));
            own.close();
            LossReason r = heard.get(5, TimeUnit.SECONDS);
            assertTrue(r == LossReason.CONNECTION_LOST || r == LossReason.EXPIRED, r.toString());
            assertFalse(lease.isValid());
            lease.close();
        } finally {
            own.close();
        }
    }
}
