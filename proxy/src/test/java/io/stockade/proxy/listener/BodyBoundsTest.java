package io.stockade.proxy.listener;

import java.io.InputStream;
import java.util.concurrent.atomic.AtomicLong;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;

class BodyBoundsTest {
    private static final long MS = 1_000_000;

    @Test
    void anErrorInARead_disarmsTheWatchdog() throws Exception {
        // Regression: only IOException and RuntimeException ended the read; after an Error the stream stayed
        // registered as reading, and the watchdog later interrupted the thread (by then serving another request).
        AtomicLong now = new AtomicLong();
        BodyBounds bounds = new BodyBounds(1024, Long.MAX_VALUE, 10 * MS, now::get);
        InputStream in = bounds.wrap(new InputStream() {
            @Override
            public int read() {
                throw new AssertionError("a bug below the body stream");
            }

            @Override
            public int read(byte[] b, int off, int len) {
                throw new AssertionError("a bug below the body stream");
            }
        });
        assertThrows(AssertionError.class, () -> in.read(new byte[16]));
        now.set(60_000 * MS); // long past the read timeout
        Thread.sleep(3 * BodyBounds.WATCH_PERIOD_MILLIS + 50);
        assertFalse(Thread.interrupted(), "the watchdog interrupted a thread that is no longer reading the body");
        assertEquals(null, bounds.refused());
    }

    @Test
    void aReadBlockedPastTheReadTimeoutIsCutOff() throws Exception {
        AtomicLong now = new AtomicLong();
        BodyBounds bounds = new BodyBounds(1024, Long.MAX_VALUE, 10 * MS, now::get);
        InputStream in = bounds.wrap(new InputStream() {
            @Override
            public int read() {
                return -1;
            }

            @Override
            public int read(byte[] b, int off, int len) {
                now.set(60_000 * MS);
                try {
                    Thread.sleep(10_000);
                    return -1;
                } catch (InterruptedException e) {
                    throw new java.io.UncheckedIOException(new java.io.IOException("closed", e));
                }
            }
        });
        BodyBounds.BodyRefused refused = assertThrows(BodyBounds.BodyRefused.class, () -> in.read(new byte[16]));
        assertEquals(408, refused.problem().status());
        assertFalse(Thread.interrupted(), "the watchdog's interrupt must be cleared");
    }

    @Test
    void theBodyTimeoutCountsFromTheFirstRead() throws Exception {
        AtomicLong now = new AtomicLong();
        BodyBounds bounds = new BodyBounds(1024, 1000 * MS, Long.MAX_VALUE, now::get);
        InputStream in = bounds.wrap(new java.io.ByteArrayInputStream(new byte[100]));
        now.addAndGet(30_000 * MS); // waited for the scope and the verifier
        assertEquals(10, in.read(new byte[10]), "the wait before the first read is not the body's time");
        now.addAndGet(500 * MS);
        assertEquals(10, in.read(new byte[10]));
        now.addAndGet(600 * MS); // 1.1 s after the first read
        BodyBounds.BodyRefused refused = assertThrows(BodyBounds.BodyRefused.class, () -> in.read(new byte[10]));
        assertEquals(408, refused.problem().status());
    }

    @Test
    void aHugeDurationIsNoBoundRatherThanAnOverflow() {
        assertEquals(Long.MAX_VALUE, Durations.nanos(java.time.Duration.ofHours(10_000_000)));
        assertEquals(5 * MS, Durations.nanos(java.time.Duration.ofMillis(5)));
    }
}
