package io.stockade.proxy.listener;

import java.time.Instant;

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
}
