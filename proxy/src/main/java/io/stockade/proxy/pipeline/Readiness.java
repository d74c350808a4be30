package io.stockade.proxy.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.policy.StockadeConfig;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.registry.TokenVerifiers;

/**
 * {@code /health/ready}: whether the proxy can decide fences now. It is DOWN while the fence store, a policy's
 * token verifier or a self-fencing backend's database cannot be reached (writes would answer 503), and UP again as
 * soon as they can. An upstream that is down does not make the proxy unready: another replica could not write to
 * it either, and reads and the other policies still work.
 * <p>
 * Each component is asked as a write would ask it, within its own timeout: the store for a scope no write uses,
 * each verifier for a claim no lock holds (a refusal is an answer: only "cannot answer" counts), each self-fencing
 * backend for a connection. One check runs at a time and its result is kept for a second, so probes from several
 * kubelets and load balancers cost one round of lookups a second; a probe that arrives while a check runs gets the
 * last report at once instead of waiting (a lock, not {@code synchronized}: on JDK 21 a virtual thread blocked in
 * a synchronized block holds its carrier thread, and a slow store must not stall the listener). A change of state
 * is logged once.
 */
public final class Readiness {
    private static final Logger LOG = Logger.getLogger(Readiness.class.getName());
    /**
     * The scope the store and the verifiers are asked about: only read, never written, so a policy whose scope
     * could be spelled so loses nothing. A valid Kubernetes name, so that the Lease verifier asks the API server
     * (it refuses names that cannot be Leases without asking).
     */
    static final String PROBE_SCOPE = "stockade-readiness-probe";
    private static final long KEEP_NANOS = TimeUnit.SECONDS.toNanos(1);

    /**
     * The outcome of a check.
     *
     * @param down     what keeps the whole replica from deciding fences: the fence store, and the dependencies of
     *                 policies that gate readiness ({@code readiness: gate}); UP when empty
     * @param policies each policy's own problems (its verifier, its backend's database), empty when it works
     */
    public record Report(List<String> down, Map<String, List<String>> policies) {
        public Report {
            down = List.copyOf(down);
            policies = Collections.unmodifiableMap(new LinkedHashMap<>(policies));
        }

        public Report(List<String> down) {
            this(down, Map.of());
        }

        public boolean up() {
            return down.isEmpty();
        }

        /** Whether a policy can write now: the fence store answers and so do its own dependencies. */
        public boolean up(String policy) {
            return storeUp() && policies.getOrDefault(policy, List.of()).isEmpty();
        }

        /** Whether the fence store answered (a problem of it is the one entry of {@link #down} not a policy's). */
        public boolean storeUp() {
            return down.stream().noneMatch(d -> d.startsWith("fence store: "));
        }
    }

    private final Supplier<StockadeConfig> config;
    private final Supplier<Map<String, Backend>> backends;
    private final FenceStore store;
    private final TokenVerifiers verifiers;
    private final LongSupplier nanoTime;
    private final ReentrantLock checking = new ReentrantLock();
    private volatile Report last;
    private volatile long checkedAt;

    Readiness(Supplier<StockadeConfig> config, Supplier<Map<String, Backend>> backends, FenceStore store,
              TokenVerifiers verifiers, LongSupplier nanoTime) {
        this.config = config;
        this.backends = backends;
        this.store = store;
        this.verifiers = verifiers;
        this.nanoTime = nanoTime;
    }

    /**
     * {@code /health/live}: why the replica should be restarted — its fence store failed on I/O and has not healed
     * within the time it is given ({@link FenceStore#unhealed}) — or empty while it lives. Asks nothing remote.
     */
    public Optional<String> unhealed() {
        return store.unhealed();
    }

    /** The state now, or as checked less than a second ago, or the last one while another probe checks. */
    public Report check() {
        Report known = last;
        if (known != null && nanoTime.getAsLong() - checkedAt < KEEP_NANOS) {
            return known;
        }
        if (known != null ? !checking.tryLock() : !lockInterruptibly()) {
            return known != null ? known : new Report(List.of("interrupted while checking"));
        }
        try {
            if (last != null && nanoTime.getAsLong() - checkedAt < KEEP_NANOS) {
                return last;
            }
            return checkNow();
        } finally {
            checking.unlock();
        }
    }

    private boolean lockInterruptibly() {
        try {
            checking.lockInterruptibly();
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private Report checkNow() {
        Report report = down();
        if (last == null ? !report.up() : last.up() != report.up() || !last.down().equals(report.down())) {
            LOG.warning(report.up() ? "ready: the fence store and verifiers answer again"
                    : "not ready: " + String.join("; ", report.down()));
        }
        report.policies().forEach((policy, problems) -> {
            List<String> before = last == null ? List.of() : last.policies().getOrDefault(policy, List.of());
            if (!problems.equals(before)) {
                LOG.warning(problems.isEmpty() ? "policy '" + policy + "': its dependencies answer again"
                        : "policy '" + policy + "' cannot write now (its writes answer 503): "
                        + String.join("; ", problems));
            }
        });
        last = report;
        checkedAt = nanoTime.getAsLong();
        return report;
    }

    private Report down() {
        List<String> down = new ArrayList<>();
        try {
            store.get(PROBE_SCOPE);
        } catch (StoreUnavailableException e) {
            down.add("fence store: " + e.getMessage());
        }
        IdentityHashMap<TokenVerifier, Optional<String>> asked = new IdentityHashMap<>();
        Map<String, Backend> byPolicy = backends.get();
        Map<String, List<String>> policies = new LinkedHashMap<>();
        for (Policy policy : config.get().policies()) {
            List<String> own = new ArrayList<>();
            TokenVerifier verifier = verifiers.of(policy);
            if (verifier != null) {
                // one question per verifier, however many policies share it
                asked.computeIfAbsent(verifier, v -> v.verify(new TokenVerifier.Claim(PROBE_SCOPE, 1,
                        h -> List.of())) instanceof TokenVerifier.Unavailable unavailable
                        ? Optional.of(v.kind() + " verifier: " + unavailable.reason()) : Optional.empty())
                        .ifPresent(own::add);
            }
            Backend backend = byPolicy.get(policy.name());
            if (backend != null) {
                backend.unreachable().ifPresent(own::add);
            }
            policies.put(policy.name(), own);
            if (policy.readiness() == Policy.Readiness.GATE) {
                own.forEach(why -> down.add("policy '" + policy.name() + "': " + why));
            }
        }
        return new Report(down, policies);
    }
}
