package io.stockade.proxy.fence;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

class ScopeGuardTest {
    final AtomicLong now = new AtomicLong(1_000);
    final ScopeGuard guard = new ScopeGuard(now::get);

    @Test
    void oneHolderPerScopeAtATime() throws Exception {
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger maxInside = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(16);
        try {
            CountDownLatch go = new CountDownLatch(1);
            Future<?>[] all = new Future<?>[16];
            for (int i = 0; i < all.length; i++) {
                all[i] = pool.submit(() -> {
                    go.await();
                    for (int n = 0; n < 200; n++) {
                        try (ScopeGuard.Held held = guard.acquire("s", TimeUnit.SECONDS.toNanos(10))) {
                            assertNotNull(held);
                            maxInside.accumulateAndGet(inside.incrementAndGet(), Math::max);
                            Thread.onSpinWait();
                            inside.decrementAndGet();
                        }
                    }
                    return null;
                });
            }
            go.countDown();
            for (Future<?> f : all) {
                f.get(30, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
        assertEquals(1, maxInside.get());
        assertEquals(0, guard.activeScopes(), "lock entries are dropped when nobody holds or waits");
    }

    @Test
    void otherScopesAreNotBlocked() throws Exception {
        try (ScopeGuard.Held a = guard.acquire("a", 0)) {
            assertNotNull(a);
            try (ScopeGuard.Held b = guard.acquire("b", 0)) {
                assertNotNull(b);
            }
        }
    }

    @Test
    void aWaitThatTimesOutReturnsNullAndLeavesNoEntry() throws Exception {
        try (ScopeGuard.Held held = guard.acquire("s", 0)) {
            Thread other = Thread.ofVirtual().start(() -> {
                try {
                    assertNull(guard.acquire("s", TimeUnit.MILLISECONDS.toNanos(50)));
                } catch (InterruptedException e) {
                    throw new AssertionError(e);
                }
            });
            other.join();
        }
        assertEquals(0, guard.activeScopes());
    }

    @Test
    void quarantineLastsExactlyTheSettleTime() {
        guard.quarantine("s", 500);
        assertEquals(500, guard.quarantineRemaining("s"));
        assertEquals(1, guard.quarantinedScopes());
        now.addAndGet(499);
        assertEquals(1, guard.quarantineRemaining("s"));
        now.addAndGet(1);
        assertEquals(0, guard.quarantineRemaining("s"));
        assertEquals(0, guard.quarantinedScopes());
        assertEquals(0, guard.quarantineRemaining("other"));
    }

    @Test
    void aShorterQuarantineNeverShortensALongerOne() {
        guard.quarantine("s", 1000);
        guard.quarantine("s", 10);
        assertEquals(1000, guard.quarantineRemaining("s"));
    }
}
