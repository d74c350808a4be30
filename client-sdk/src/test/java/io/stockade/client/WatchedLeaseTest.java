package io.stockade.client;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lease's clock arithmetic and watchdog, with time advanced by hand. */
class WatchedLeaseTest {

    private static final Duration TTL = Duration.ofSeconds(15);

    private final FakeTicker ticker = new FakeTicker();
    private final FakeLeaseService service = new FakeLeaseService(ticker);
    private final List<LossReason> heard = new CopyOnWriteArrayList<>();
    private final List<Integer> exits = new CopyOnWriteArrayList<>();

    private WatchedLease acquire(Leases.Builder builder) throws Exception {
        Leases.Settings s = builder.ticker(ticker).exiter(exits::add).settings();
        LeaseService.Grant g = service.acquire("job", s.holder(), TTL, Duration.ZERO);
        WatchedLease lease = new WatchedLease("job", s.holder(), service, g, ticker, TTL,
                Leases.Settings.scale(TTL, s.renewDeadlineFraction()),
                s.exitStatus() == null ? null : s.exiter(), s.exitStatus() == null ? 0 : s.exitStatus());
        lease.addListener((l, r) -> heard.add(r));
        return lease;
    }

    private WatchedLease acquire() throws Exception {
        return acquire(Leases.newBuilder());
    }

    /**
     * A close while a renewal is on its way releases after the renewal's answer, never during it: the release of a
     * service that fences by a value the renewal replaces (DynamoDB's rvn) would carry the old one and fail.
     */
    @Test
    void aReleaseWaitsForTheRenewalOnItsWay() throws Exception {
        CountDownLatch renewing = new CountDownLatch(1);
        CountDownLatch answer = new CountDownLatch(1);
        AtomicBoolean inRenewal = new AtomicBoolean();
        AtomicBoolean releasedDuringRenewal = new AtomicBoolean();
        AtomicInteger releases = new AtomicInteger();
        LeaseService slow = new LeaseService() {
            @Override
            public Grant acquire(String name, String holder, Duration ttl, Duration timeout) {
                return new Grant(7, ticker.read(), null);
            }

            @Override
            public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout)
                    throws Exception {
                inRenewal.set(true);
                renewing.countDown();
                assertTrue(answer.await(10, TimeUnit.SECONDS));
                inRenewal.set(false);
                return Renewal.RENEWED;
            }

            @Override
            public void release(String name, String holder, Grant grant) {
                releasedDuringRenewal.compareAndSet(false, inRenewal.get());
                releases.incrementAndGet();
            }

            @Override
            public void close() {
            }
        };
        WatchedLease lease = new WatchedLease("job", "me", slow, slow.acquire("job", "me", TTL, Duration.ZERO), ticker,
                TTL, Leases.Settings.scale(TTL, Leases.newBuilder().settings().renewDeadlineFraction()), null, 0);
        Thread watchdog = Thread.ofPlatform().start(lease::tick);
        assertTrue(renewing.await(10, TimeUnit.SECONDS));
        Thread closer = Thread.ofPlatform().start(lease::close);
        closer.join(300);
        assertTrue(closer.isAlive(), "the close released while the renewal was on its way");
        answer.countDown();
        closer.join(10_000);
        watchdog.join(10_000);
        assertFalse(releasedDuringRenewal.get());
        assertEquals(1, releases.get());
    }

    @Test
    void remainingSubtractsTheWholeRoundTripOfTheAcquiringCall() throws Exception {
        service.acquireRoundTrip = Duration.ofSeconds(4);
        WatchedLease lease = acquire();
        assertEquals(Duration.ofSeconds(11), lease.remaining());
        ticker.advance(Duration.ofSeconds(1));
        assertEquals(Duration.ofSeconds(10), lease.remaining());
    }

    @Test
    void checkpointPassesWithEnoughBudgetAndThrowsPastThePointOfNoReturn() throws Exception {
        WatchedLease lease = acquire();
        ticker.advance(Duration.ofSeconds(12));
        lease.checkpoint(Duration.ofSeconds(3));
        ticker.advance(Duration.ofMillis(1));
        LeaseLostException e = assertThrows(LeaseLostException.class, () -> lease.checkpoint(Duration.ofSeconds(3)));
        assertEquals(LossReason.EXPIRED, e.reason());
        assertTrue(lease.isValid(), "past the point of no return is not yet lost");
        assertTrue(heard.isEmpty());
    }

    @Test
    void expiryOnTheMonotonicClockEndsTheLeaseOnceWithExpired() throws Exception {
        WatchedLease lease = acquire();
        ticker.advance(TTL);
        assertFalse(lease.isValid());
        assertEquals(Duration.ZERO, lease.remaining());
        assertThrows(LeaseLostException.class, () -> lease.checkpoint(Duration.ZERO));
        lease.close();
        assertEquals(List.of(LossReason.EXPIRED), heard);
    }

    @Test
    void aListenerAddedAfterTheLossIsCalledOnceAtOnce() throws Exception {
        WatchedLease lease = acquire();
        lease.close();
        AtomicInteger late = new AtomicInteger();
        lease.addListener((l, r) -> {
            assertEquals(LossReason.RELEASED, r);
            late.incrementAndGet();
        });
        lease.close();
        assertEquals(1, late.get());
        assertEquals(List.of(LossReason.RELEASED), heard);
    }

    @Test
    void closeIsIdempotentAndReleasesOnce() throws Exception {
        WatchedLease lease = acquire();
        lease.close();
        lease.close();
        assertEquals(1, service.releases.get());
        assertEquals(List.of(LossReason.RELEASED), heard);
        assertFalse(lease.isValid());
    }

    @Test
    void aRenewalExtendsValidityFromWhenItWasSent() throws Exception {
        WatchedLease lease = acquire();
        ticker.advance(Duration.ofSeconds(5));
        service.then(LeaseService.Renewal.RENEWED, Duration.ofSeconds(2));
        lease.tick();
        // sent at t=5 s: valid until 20 s; now is 7 s
        assertEquals(Duration.ofSeconds(13), lease.remaining());
    }

    @Test
    void aRefusedRenewalEndsTheLeaseAtOnce() throws Exception {
        WatchedLease lease = acquire();
        ticker.advance(Duration.ofSeconds(5));
        service.then(LeaseService.Renewal.REFUSED, Duration.ZERO);
        lease.tick();
        assertEquals(List.of(LossReason.RENEWAL_REFUSED), heard);
        assertEquals(LossReason.RENEWAL_REFUSED,
                assertThrows(LeaseLostException.class, () -> lease.checkpoint(Duration.ZERO)).reason());
    }

    @Test
    void aRevokedLeaseIsReportedAsRevoked() throws Exception {
        WatchedLease lease = acquire();
        service.then(LeaseService.Renewal.REVOKED, Duration.ZERO);
        lease.tick();
        assertEquals(List.of(LossReason.REVOKED), heard);
    }

    @Test
    void aFailedRenewalEndsTheLeaseWithConnectionLost() throws Exception {
        WatchedLease lease = acquire();
        service.thenFail(new IOException("connection refused"));
        lease.tick();
        assertEquals(List.of(LossReason.CONNECTION_LOST), heard);
        assertFalse(lease.isValid());
    }

    @Test
    void aLateWatchdogGivesTheLeaseUpWithoutRenewing() throws Exception {
        WatchedLease lease = acquire();
        ticker.advance(Duration.ofSeconds(11)); // renew deadline is 10 s (2/3 of 15 s): the process was paused
        lease.tick();
        assertEquals(0, service.renewals.get());
        assertEquals(List.of(LossReason.EXPIRED), heard);
    }

    @Test
    void aRenewalAnsweredAfterLocalExpiryDoesNotRevive() throws Exception {
        WatchedLease lease = acquire();
        ticker.advance(Duration.ofSeconds(9));
        service.then(LeaseService.Renewal.RENEWED, Duration.ofSeconds(7));
        lease.tick();
        assertEquals(List.of(LossReason.EXPIRED), heard);
        assertFalse(lease.isValid());
    }

    @Test
    void exitOnLossRunsListenersFirstAndNotOnRelease() throws Exception {
        WatchedLease lost = acquire(Leases.newBuilder().exitOnLoss(75));
        lost.addListener((l, r) -> assertTrue(exits.isEmpty(), "listeners run before the exit"));
        service.then(LeaseService.Renewal.REFUSED, Duration.ZERO);
        lost.tick();
        assertEquals(List.of(75), exits);

        WatchedLease released = acquire(Leases.newBuilder().exitOnLoss(75));
        released.close();
        assertEquals(List.of(75), exits);
    }

    @Test
    void aFailingListenerDoesNotStopTheOthers() throws Exception {
        WatchedLease lease = acquire();
        lease.addListener((l, r) -> {
            throw new IllegalStateException("boom");
        });
        AtomicInteger after = new AtomicInteger();
        lease.addListener((l, r) -> after.incrementAndGet());
        lease.close();
        assertEquals(1, after.get());
    }

    @Test
    void theLeaderElectionArithmeticIsChecked() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
                () -> Leases.newBuilder().renewFraction(0.5).renewDeadline(0.55).settings());
        assertTrue(e.getMessage().contains("jitter factor 1.2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> Leases.checkArithmetic(Duration.ofSeconds(10),
                Duration.ofSeconds(10), Duration.ofSeconds(2)));
        assertThrows(IllegalArgumentException.class, () -> Leases.checkArithmetic(Duration.ofSeconds(15),
                Duration.ofSeconds(10), Duration.ofMillis(8400)));
        Leases.checkArithmetic(Duration.ofSeconds(15), Duration.ofSeconds(10), Duration.ofSeconds(2));
    }
}
