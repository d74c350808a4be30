package io.stockade.proxy.verify.cache;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongFunction;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.TokenVerifier.Genuine;
import io.stockade.proxy.verify.TokenVerifier.Verdict;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The expiry arithmetic of remembered verdicts on a fake monotonic clock: {@code sent + min(ttl, left - margin)},
 * counted from when the lookup was sent, the bound for a service that reports no time left, and no remembering of
 * a verdict whose window closed before its answer came.
 */
class RememberingVerifierTest {
    private static final long MS = TimeUnit.MILLISECONDS.toNanos(1);
    /** Far from zero and near the wrap of a long, as System.nanoTime() may be. */
    private static final long START = Long.MAX_VALUE - 3_000 * MS;

    private final AtomicLong clock = new AtomicLong(START);
    private final AtomicInteger lookups = new AtomicInteger();

    /** A lock service whose lookup takes {@code latencyMs} and answers {@code answer(sent)}. */
    private TokenVerifier service(long latencyMs, LongFunction<Verdict> answer) {
        return new TokenVerifier() {
            @Override
            public Verdict verify(Claim claim) {
                lookups.incrementAndGet();
                long sent = clock.get();
                clock.addAndGet(latencyMs * MS);
                return answer.apply(sent);
            }

            @Override
            public String kind() {
                return "fake";
            }

            @Override
            public void close() {
            }
        };
    }

    private RememberingVerifier cache(TokenVerifier service, Duration ttl) {
        return new RememberingVerifier(service, new TokenVerification.Cache(true, ttl, 1000), clock::get);
    }

    private static TokenVerifier.Claim claim() {
        return new TokenVerifier.Claim("s", 7, name -> List.of());
    }

    /** Asks at {@code atMs} after the start; true when the answer came from the cache. */
    private boolean rememberedAt(RememberingVerifier v, long atMs) {
        clock.set(START + atMs * MS);
        return v.verify(claim()) instanceof Genuine g && g.remembered();
    }

    @Test
    void aVerdictEndsWithTheLeaseLessTheMarginCountedFromTheSend() {
        // the lease had 4 s left when the lookup was sent; the answer took 300 ms
        RememberingVerifier v = cache(service(300, sent -> Genuine.leaseLeft(sent, 4_000 * MS)),
                Duration.ofSeconds(10));
        assertFalse(rememberedAt(v, 0));
        // margin: 5 % of 4 s = 200 ms, so remembered until 3800 ms after the send
        assertTrue(rememberedAt(v, 3_799));
        assertFalse(rememberedAt(v, 3_800), "the verdict outlived the lease less its margin");
        assertEquals(2, lookups.get());
    }

    @Test
    void theMarginIsAtLeast100Ms() {
        assertEquals(100 * MS, RememberingVerifier.margin(1_000 * MS));
        assertEquals(500 * MS, RememberingVerifier.margin(10_000 * MS));
        RememberingVerifier v = cache(service(0, sent -> Genuine.leaseLeft(sent, 1_000 * MS)),
                Duration.ofSeconds(10));
        assertFalse(rememberedAt(v, 0));
        assertTrue(rememberedAt(v, 899));
        assertFalse(rememberedAt(v, 900));
    }

    @Test
    void neverLongerThanTheTtl() {
        RememberingVerifier v = cache(service(10, sent -> Genuine.leaseLeft(sent, 60_000 * MS)),
                Duration.ofSeconds(2));
        assertFalse(rememberedAt(v, 0));
        assertTrue(rememberedAt(v, 1_999));
        assertFalse(rememberedAt(v, 2_000));
    }

    @Test
    void noTimeLeftKnownIsRememberedForTheBound() {
        RememberingVerifier v = cache(service(50, Genuine::noTimeLeftKnown), Duration.ofSeconds(10));
        assertFalse(rememberedAt(v, 0));
        assertTrue(rememberedAt(v, RememberingVerifier.UNKNOWN_BOUND.toMillis() - 1));
        assertFalse(rememberedAt(v, RememberingVerifier.UNKNOWN_BOUND.toMillis()));
        // and the ttl still caps the bound
        RememberingVerifier shortTtl = cache(service(0, Genuine::noTimeLeftKnown), Duration.ofMillis(300));
        assertFalse(rememberedAt(shortTtl, 5_000));
        assertTrue(rememberedAt(shortTtl, 5_299));
        assertFalse(rememberedAt(shortTtl, 5_300));
    }

    @Test
    void aWindowClosedBeforeTheAnswerCameIsNotRemembered() {
        // 150 ms left, less the 100 ms margin: 50 ms, and the answer took 80 ms
        RememberingVerifier v = cache(service(80, sent -> Genuine.leaseLeft(sent, 150 * MS)),
                Duration.ofSeconds(10));
        assertFalse(rememberedAt(v, 0));
        assertFalse(rememberedAt(v, 81));
        assertEquals(2, lookups.get());
        // a lease with nothing left (gone between two reads) is genuine once, never remembered
        RememberingVerifier none = cache(service(0, sent -> Genuine.leaseLeft(sent, 0)), Duration.ofSeconds(10));
        assertFalse(rememberedAt(none, 1_000));
        assertFalse(rememberedAt(none, 1_000));
    }

    @Test
    void aVerdictWithoutASendTimeIsNotRemembered() {
        // an implementation that still answers new Genuine(false): no send time, so nothing to count from
        RememberingVerifier v = cache(service(0, sent -> new Genuine(false)), Duration.ofSeconds(10));
        assertFalse(rememberedAt(v, 0));
        assertFalse(rememberedAt(v, 1));
    }
}
