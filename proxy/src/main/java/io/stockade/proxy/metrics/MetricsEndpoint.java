package io.stockade.proxy.metrics;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerResponse;

/** The {@code /metrics} answer (routed by {@code StockadeServer}): the meters in Prometheus text format. */
public final class MetricsEndpoint {
    private MetricsEndpoint() {
    }

    /** Answers with every meter of {@code metrics}, scraped now. */
    public static void serve(ServerResponse res, ProxyMetrics metrics) {
        res.header(HeaderNames.CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8");
        res.send(metrics.scrape());
    }
}
