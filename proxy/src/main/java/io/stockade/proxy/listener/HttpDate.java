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

    public HttpDate(Clock clock) {
        this.clock = clock;
    }

    /** Now, as an IMF-fixdate. */
    static String now() {
        return IMF_FIXDATE.format(Instant.now());
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        res.beforeSend(() -> {
            if (!res.headers().contains(HeaderNames.DATE)) {
                res.header(HeaderNames.DATE, IMF_FIXDATE.format(clock.instant()));
            }
        });
        chain.proceed();
    }
}
