package io.stockade.proxy.metrics;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.Timer;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/**
 * The proxy's meters, exposed in Prometheus text format at {@code /metrics}.
 * <p>
 * Labels are bounded: policy names come from the policy file, outcomes from {@link Outcome}. A scope or a token
 * is never a label (unbounded cardinality).
 */
public final class ProxyMetrics {
    /** Policy label for requests no policy matched. */
    public static final String NO_POLICY = "-";

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ConcurrentHashMap<String, Counter> decisions = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> fenceTimers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> upstreamTimers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> waitTimers = new ConcurrentHashMap<>();

    /** What the proxy decided about one request. */
    public enum Outcome {
        /** A fenced write whose token was admitted. */
        ACCEPTED,
        /** Refused: a higher token was already accepted (409). */
        STALE,
        /** Refused: no token on a fenced method (428). */
        MISSING,
        /** Refused: the token header is not a token (400). */
        MALFORMED,
        /** Refused: the request itself is unacceptable, e.g. a path trick (400). */
        BAD_REQUEST,
        /** Refused: the fence could not be decided (503). */
        UNAVAILABLE,
        /** Refused: the scope is quarantined after an unknown outcome (503). */
        QUARANTINED,
        /** The upstream did not answer in time after the write left: outcome unknown (504). */
        UNKNOWN_OUTCOME,
        /** Not fenced: a read, an unfenced method, or a policy in {@code off} mode. */
        UNFENCED,
        /** A tokenless write forwarded because the policy allows it. */
        ALLOWED_WITHOUT_TOKEN,
        /** Observe mode: would have been refused, forwarded anyway. */
        WOULD_REJECT,
        /** Observe mode: would have been accepted. */
        OBSERVED,
        /** No policy matches the request (404). */
        NO_POLICY;

        final String label = name().toLowerCase(java.util.Locale.ROOT);
    }

    public ProxyMetrics() {
    }

    /** Registers a gauge read at scrape time. */
    public void gauge(String name, String help, Supplier<Number> value) {
        Gauge.builder(name, value).description(help).register(registry);
    }

    /** The token cache's meters, read at scrape time. */
    public void cache(Supplier<Number> hits, Supplier<Number> misses, Supplier<Number> evictions,
                      Supplier<Number> size) {
        FunctionCounter.builder("stockade.token.cache.hits", hits, s -> s.get().doubleValue())
                .description("Stale tokens refused from the token cache, without a store round trip")
                .register(registry);
        FunctionCounter.builder("stockade.token.cache.misses", misses, s -> s.get().doubleValue())
                .description("Fence decisions the token cache passed on to the store").register(registry);
        FunctionCounter.builder("stockade.token.cache.evictions", evictions, s -> s.get().doubleValue())
                .description("Scopes the token cache forgot to stay within max-scopes").register(registry);
        gauge("stockade.token.cache.scopes", "Scopes the token cache holds", size);
    }

    public void decision(String policy, Outcome outcome) {
        decisions.computeIfAbsent(policy + '\0' + outcome.label, k -> Counter.builder("stockade.decisions")
                .description("Fence decisions by policy and outcome")
                .tag("policy", policy)
                .tag("outcome", outcome.label)
                .register(registry)).increment();
    }

    /** Time to decide the fence (the store's advance, durable). */
    public void fenceDecision(String policy, long nanos) {
        timer(fenceTimers, "stockade.fence.decision", "Time to admit or refuse a token in the fence store", policy)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /** Time the backend took for a request. */
    public void upstream(String policy, long nanos) {
        timer(upstreamTimers, "stockade.upstream", "Time the backend took to answer", policy)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /** Time a write waited for its scope (contention). */
    public void scopeWait(String policy, long nanos) {
        timer(waitTimers, "stockade.scope.wait", "Time a fenced write waited for its scope", policy)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    private Timer timer(ConcurrentHashMap<String, Timer> cache, String name, String help, String policy) {
        return cache.computeIfAbsent(policy, p -> Timer.builder(name)
                .description(help)
                .tag("policy", p)
                .publishPercentileHistogram(false)
                .maximumExpectedValue(Duration.ofSeconds(60))
                .register(registry));
    }

    /** The Prometheus text exposition. */
    public String scrape() {
        return registry.scrape();
    }

    /** Counter value, for tests. */
    public double count(String policy, Outcome outcome) {
        Counter c = decisions.get(policy + '\0' + outcome.label);
        return c == null ? 0 : c.count();
    }
}
