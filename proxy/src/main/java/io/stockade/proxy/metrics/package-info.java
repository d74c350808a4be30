/**
 * {@code ProxyMetrics}: Micrometer meters; {@code MetricsEndpoint}: the Prometheus text at {@code /metrics}.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.metrics;

import org.jspecify.annotations.NullMarked;
