package io.stockade.proxy.listener;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Locale;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;

/**
 * The {@code Date} of every answer the proxy writes itself, in RFC 9110's IMF-fixdate ({@code Wed, 02 Dec 2026
 * 01:50:00 GMT}: a two-digit day). Helidon's own formats the day of the month with one digit on the first nine
 * days of a month, which strict clients refuse. An answer relayed from a storage keeps the storage's {@code Date}.
 */
public final class HttpDate implements Filter {
    /** RFC 9110 section 5.6.7: IMF-fixdate. */
    static final DateTimeFormatter IMF_FIXDATE = DateTimeFormatter.ofPattern("EEE, dd MMM yyyy HH:mm:ss 'GMT'",
            Locale.ROOT).withZone(ZoneOffset.UTC);

    private final Clock clock;
    /** The last second formatted, and its text: one format a second, not one an answer. */
    private volatile Formatted last = new Formatted(Long.MIN_VALUE, "");

    public HttpDate(Clock clock) {
        this.clock = clock;
    }

    private record Formatted(long second, String text) {
    }

    /** The clock's second as an IMF-fixdate, formatted once a second (it was 3 % of a database write's CPU). */
    String date() {
        Instant now = clock.instant();
        Formatted f = last;
        if (f.second() != now.getEpochSecond()) {
            f = new Formatted(now.getEpochSecond(), IMF_FIXDATE.format(now));
            last = f;
        }
        return f.text();
    }

    /** Now, as an IMF-fixdate. */
    static String now() {
        return IMF_FIXDATE.format(Instant.now());
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        res.beforeSend(() -> {
            if (!res.headers().contains(HeaderNames.DATE)) {
                res.header(HeaderNames.DATE, date());
            }
        });
        chain.proceed();
    }
}
