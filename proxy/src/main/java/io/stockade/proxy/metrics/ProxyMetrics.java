package io.stockade.proxy.metrics;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.jvm.ClassLoaderMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.FileDescriptorMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.core.instrument.binder.system.UptimeMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;

/**
 * The proxy's meters, exposed in Prometheus text format at {@code /metrics}.
 * <p>
 * Labels are bounded: policy names come from the policy file, outcomes from {@link Outcome}. A scope or a token
 * is never a label (unbounded cardinality).
 */
public final class ProxyMetrics {
    private static final Duration[] BUCKETS = {
            Duration.ofMillis(1), Duration.ofMillis(5), Duration.ofMillis(10), Duration.ofMillis(25),
            Duration.ofMillis(50), Duration.ofMillis(100), Duration.ofMillis(250), Duration.ofMillis(500),
            Duration.ofSeconds(1), Duration.ofSeconds(2), Duration.ofSeconds(5), Duration.ofSeconds(10),
            Duration.ofSeconds(30)};

    private final PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final ConcurrentHashMap<String, Counter> decisions = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> fenceTimers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> upstreamTimers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> waitTimers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Timer> heldTimers = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> staleRejections = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> handoffs = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> storeErrors = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> upstreamErrors = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, DistributionSummary> jumps = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, AtomicInteger> inFlight = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Counter> verifications = new ConcurrentHashMap<>();

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
        /** Refused: the token jumps further over the highest than the policy's max-advance allows (422). */
        TOO_FAR,
        /** Refused: the policy's verifier did not find the token genuine (403; {@code fence.verify}). */
        UNVERIFIED,
        /** Refused: the request itself is unacceptable, e.g. a path trick (400). */
        BAD_REQUEST,
        /**
         * Refused by the backend's closed table: a method, sub-resource, parameter or header whose meaning to the
         * storage the proxy does not take (405, 501, 400 {@code unknown-operation} or {@code refused-header}), or a
         * request its own authentication refused (403).
         */
        REFUSED,
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
        NO_POLICY,
        /** Refused: headers or body over a limit of the policy (431, 413), before any fence; or a body cut off. */
        TOO_LARGE,
        /** Refused: the body did not arrive in time (408); nothing was committed. */
        TIMED_OUT,
        /** Refused: the scope has as many requests in flight as the policy's max-concurrent-per-scope (503). */
        BUSY,
        /**
         * Refused: a write of a new scope while the memory store holds as many scopes as its {@code max-scopes} or
         * {@code max-scope-memory} allow (503); writes of known scopes go on.
         */
        SCOPE_LIMIT,
        /** A bug: an exception escaped the pipeline before it decided (500, logged with its stack trace). */
        ERROR;

        final String label = name().toLowerCase(Locale.ROOT);

        /** The value of the {@code outcome} label. */
        public String label() {
            return label;
        }
    }

    public ProxyMetrics() {
        // the JVM and the process: memory and collections, threads, classes, CPU, uptime, file descriptors
        new JvmMemoryMetrics().bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ClassLoaderMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        new UptimeMetrics().bindTo(registry);
        new FileDescriptorMetrics().bindTo(registry);
        String[] build = buildInfo();
        Gauge.builder("stockade.build.info", () -> 1).description("The proxy's version and the commit it was built"
                + " from (1)").tag("version", build[0]).tag("commit", build[1]).register(registry);
    }

    /** The version and commit the build wrote beside this class ({@code proxy/pom.xml}, build-info). */
    static String[] buildInfo() {
        try (InputStream in = ProxyMetrics.class.getResourceAsStream("build-info")) {
            if (in != null) {
                // limit 0 (split's default) kept: trailing empty lines are dropped
                String[] lines = new String(in.readAllBytes(), StandardCharsets.UTF_8).split("\n", 0);
                String commit = lines.length > 1 && lines[1].strip().matches("[0-9a-f]{40}") ? lines[1].strip()
                        : "unknown";
                return new String[] {lines[0].strip(), commit};
            }
        } catch (IOException e) {
            // unknown
        }
        return new String[] {"unknown", "unknown"};
    }

    /** Registers a gauge read at scrape time. */
    public void gauge(String name, String help, Supplier<Number> value) {
        Gauge.builder(name, value).description(help).register(registry);
    }

    /** A gauge of one policy, read at scrape time. */
    public void policyGauge(String name, String help, String policy, Supplier<Number> value) {
        Gauge.builder(name, value).description(help).tag("policy", policy).register(registry);
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

    /**
     * Counts one decision. A stale refusal is also counted in {@code stockade_stale_rejections_total}: each one
     * means some writer believed it held a lock it had lost.
     */
    public void decision(String policy, String backend, Outcome outcome) {
        decisions.computeIfAbsent(policy + '\0' + outcome.label, k -> Counter.builder("stockade.decisions")
                .description("Fence decisions by policy and outcome")
                .tag("policy", policy)
                .tag("backend", backend)
                .tag("outcome", outcome.label)
                .register(registry)).increment();
        if (outcome == Outcome.STALE) {
            counter(staleRejections, "stockade.stale.rejections",
                    "Writes refused because a newer holder's token was accepted: a writer that lost its lock",
                    policy).increment();
        }
    }

    /** The highest token of a scope was raised: a new holder took over. */
    public void handoff(String policy, long jump) {
        counter(handoffs, "stockade.handoffs", "Accepted writes that raised a scope's highest token", policy)
                .increment();
        jumps.computeIfAbsent(policy, p -> DistributionSummary.builder("stockade.token.jump")
                .description("How far a handoff raised the highest token")
                .tag("policy", p)
                .register(registry)).record((double) jump);
    }

    /**
     * A verifier judged a token ({@code fence.verify}).
     *
     * @param verdict {@code genuine} (looked up), {@code remembered} (from the verdict cache: no lookup),
     *                {@code refused} or {@code unavailable}
     */
    public void verification(String policy, String verdict) {
        verifications.computeIfAbsent(policy + '\0' + verdict, k -> Counter.builder("stockade.token.verifications")
                .description("Tokens judged by the policy's verifier, by verdict (remembered: no lookup)")
                .tag("policy", policy)
                .tag("verdict", verdict)
                .register(registry)).increment();
    }

    /** Verifier verdicts counted so far, for tests. */
    public double verifications(String policy, String verdict) {
        Counter c = verifications.get(policy + '\0' + verdict);
        return c == null ? 0 : c.count();
    }

    /** The fence store failed to decide (the write was refused with 503). */
    public void storeError(String policy) {
        counter(storeErrors, "stockade.store.errors", "Fence store calls that failed (writes refused)", policy)
                .increment();
    }

    /**
     * The backend failed to answer.
     *
     * @param reason {@code timeout} or {@code unreachable}
     */
    public void upstreamError(String policy, String reason) {
        upstreamErrors.computeIfAbsent(policy + '\0' + reason, k -> Counter.builder("stockade.upstream.errors")
                .description("Backend calls that got no answer, by reason")
                .tag("policy", policy)
                .tag("reason", reason)
                .register(registry)).increment();
    }

    /** Time a fenced write held its scope (serialized class): the fence check and the upstream call. */
    public void scopeHeld(String policy, long nanos) {
        timer(heldTimers, "stockade.scope.held", "Time a fenced write held its scope", policy)
                .record(nanos, TimeUnit.NANOSECONDS);
    }

    /** Requests of a policy being handled now; increment on entry, decrement on exit. */
    public AtomicInteger inFlight(String policy) {
        return inFlight.computeIfAbsent(policy, p -> {
            AtomicInteger value = new AtomicInteger();
            Gauge.builder("stockade.inflight.requests", value, AtomicInteger::get)
                    .description("Requests of a policy being handled now (a convoy shows as a rising line)")
                    .tag("policy", p)
                    .register(registry);
            return value;
        });
    }

    private Counter counter(ConcurrentHashMap<String, Counter> cache, String name, String help, String policy) {
        return cache.computeIfAbsent(policy, p -> Counter.builder(name).description(help).tag("policy", p)
                .register(registry));
    }

    /** The registry, for meters other components register (a cache, a store). */
    public MeterRegistry registry() {
        return registry;
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
                // A few fixed buckets (not Micrometer's ~70): enough for histogram_quantile in alerts and the
                // dashboard, few series per policy.
                .serviceLevelObjectives(BUCKETS)
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
