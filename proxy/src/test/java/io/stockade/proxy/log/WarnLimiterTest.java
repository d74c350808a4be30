package io.stockade.proxy.log;

import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class WarnLimiterTest {
    private final AtomicLong now = new AtomicLong(1_000);
    private final WarnLimiter limiter = new WarnLimiter(now::get, 1_000);

    @Test
    void oneLineAnIntervalPerKeyAndTheNextLineCountsTheOnesLeftOut() {
        assertEquals(0, limiter.admit("a refused"));
        assertEquals(-1, limiter.admit("a refused"));
        assertEquals(-1, limiter.admit("a refused"));
        assertEquals(0, limiter.admit("b refused"), "another key has its own window");
        now.addAndGet(999);
        assertEquals(-1, limiter.admit("a refused"));
        now.addAndGet(1);
        assertEquals(3, limiter.admit("a refused"));
        now.addAndGet(5_000);
        assertEquals(0, limiter.admit("a refused"));
    }

    @Test
    void leftOutSaysHowMany() {
        assertEquals("", WarnLimiter.leftOut(0));
        assertEquals(" [1 more such line left out since the previous one: at most one a second per policy]",
                WarnLimiter.leftOut(1));
        assertEquals(" [7 more such lines left out since the previous one: at most one a second per policy]",
                WarnLimiter.leftOut(7));
    }
}
