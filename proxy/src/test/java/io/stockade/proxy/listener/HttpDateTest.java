package io.stockade.proxy.listener;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.time.ZoneOffset;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Hostile-load report: the proxy's own answers said {@code Date: Tue, 1 Dec 2026}; RFC 9110 wants a two-digit day. */
class HttpDateTest {
    @Test
    void theDayOfTheMonthHasTwoDigits() {
        assertEquals("Tue, 01 Dec 2026 09:05:03 GMT",
                HttpDate.IMF_FIXDATE.format(Instant.parse("2026-12-01T09:05:03Z")));
        assertEquals("Thu, 31 Dec 2026 23:59:59 GMT",
                HttpDate.IMF_FIXDATE.format(Instant.parse("2026-12-31T23:59:59Z")));
    }

    /** The date is formatted once a second and kept: it must still follow the clock, forwards and backwards. */
    @Test
    void theKeptDateFollowsTheClock() {
        AtomicReference<Instant> now = new AtomicReference<>(Instant.parse("2026-12-01T09:05:03.100Z"));
        HttpDate date = new HttpDate(new Clock() {
            @Override
            public ZoneId getZone() {
                return ZoneOffset.UTC;
            }

            @Override
            public Clock withZone(ZoneId zone) {
                return this;
            }

            @Override
            public Instant instant() {
                return now.get();
            }
        });
        assertEquals("Tue, 01 Dec 2026 09:05:03 GMT", date.date());
        now.set(Instant.parse("2026-12-01T09:05:03.999Z"));
        assertEquals("Tue, 01 Dec 2026 09:05:03 GMT", date.date());
        now.set(Instant.parse("2026-12-01T09:05:04Z"));
        assertEquals("Tue, 01 Dec 2026 09:05:04 GMT", date.date());
        now.set(Instant.parse("2026-12-01T09:04:59.500Z")); // a clock stepped back
        assertEquals("Tue, 01 Dec 2026 09:04:59 GMT", date.date());
    }
}
