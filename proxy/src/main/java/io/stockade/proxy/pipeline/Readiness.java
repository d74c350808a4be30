package io.stockade.proxy.pipeline;

import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
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

import org.jspecify.annotations.Nullable;

/**
 * {@code /health/ready}: whether the proxy can decide fences now. It is DOWN while the fence store (when a policy's
 * writes ask it), a policy's token verifier or a self-fencing backend's database cannot be reached (writes would
 * answer 503), and UP again as soon as they can. An upstream that is down does not make the proxy unready: another
 * replica could not write to it either, and reads and the other policies still work.
 * <p>
 * A policy's own state is computed from what its writes need: the fence store only when its backend asks it
 * ({@link Backend#needsFenceStore()}: not the postgres backend nor the atomic S3 class, which keep their fence in
 * their own storage), its verifier, its backend's database. The replica is DOWN for the store only while some policy
 * needs it.
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
     * @param down     what keeps the whole replica from deciding fences: the fence store while a policy needs it,
     *                 and the dependencies of policies that gate readiness ({@code readiness: gate}); UP when empty
     * @param policies each policy's problems, among what its writes need (the fence store if they ask it, its
     *                 verifier, its backend's database); empty when it can write
     */
    public record Report(List<String> down, Map<String, List<String>> policies) {
        public Report {
            down = List.copyOf(down);
            Map<String, List<String>> copy = new LinkedHashMap<>();
            policies.forEach((name, problems) -> copy.put(name, List.copyOf(problems)));
            policies = Collections.unmodifiableMap(copy);
        }

        public Report(List<String> down) {
            this(down, Map.of());
        }

        public boolean up() {
            return down.isEmpty();
        }

        /** Whether a policy can write now: everything its writes need answers. */
        public boolean up(String policy) {
            return policies.getOrDefault(policy, List.of()).isEmpty();
        }
    }

    /**
     * A part of the proxy that is not an HTTP policy but has policies of its own (the SQL listener): asked at each
     * check for each of its policies' problems (empty when it works).
     */
    public interface Part {
        /** Each policy's problems, by name. */
        Map<String, List<String>> problems();

        /** Whether a policy's problems make the whole replica unready ({@code readiness: gate}). */
        boolean gates(String policy);
    }

    private final List<Part> parts = new CopyOnWriteArrayList<>();
    private final Supplier<StockadeConfig> config;
    private final Supplier<Map<String, Backend>> backends;
    private final FenceStore store;
    private final TokenVerifiers verifiers;
    private final LongSupplier nanoTime;
    private final ReentrantLock checking = new ReentrantLock();
    /** The last check's report; null until the first. */
    private volatile @Nullable Report last;
    private volatile long checkedAt;

    Readiness(Supplier<StockadeConfig> config, Supplier<Map<String, Backend>> backends, FenceStore store,
              TokenVerifiers verifiers, LongSupplier nanoTime) {
        this.config = config;
        this.backends = backends;
        this.store = store;
        this.verifiers = verifiers;
        this.nanoTime = nanoTime;
    }

    /** Asks {@code part} at every check from now on. */
    public void include(Part part) {
        parts.add(part);
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
        Optional<String> storeDown;
        try {
            store.get(PROBE_SCOPE);
            storeDown = Optional.empty();
        } catch (StoreUnavailableException e) {
            storeDown = Optional.of("fence store: " + e.getMessage());
        }
        List<String> down = new ArrayList<>();
        IdentityHashMap<TokenVerifier, Optional<String>> asked = new IdentityHashMap<>();
        Map<String, Backend> byPolicy = backends.get();
        Map<String, List<String>> policies = new LinkedHashMap<>();
        for (Policy policy : config.get().policies()) {
            List<String> own = new ArrayList<>();
            Backend backend = byPolicy.get(policy.name());
            boolean onStore = backend == null || backend.needsFenceStore();
            if (onStore && storeDown.isPresent()) {
                own.add(storeDown.get());
                if (!down.contains(storeDown.get())) {
                    down.add(0, storeDown.get()); // the replica's: first, once
                }
            }
            TokenVerifier verifier = verifiers.of(policy);
            if (verifier != null) {
                // one question per verifier, however many policies share it
                Optional<String> unavailable = asked.computeIfAbsent(verifier, v -> v.verify(
                        new TokenVerifier.Claim(PROBE_SCOPE, 1, h -> List.of())) instanceof TokenVerifier.Unavailable u
                        ? Optional.of(v.kind() + " verifier: " + u.reason()) : Optional.empty());
                unavailable.ifPresent(own::add);
                if (policy.readiness() == Policy.Readiness.GATE) {
                    unavailable.ifPresent(why -> down.add("policy '" + policy.name() + "': " + why));
                }
            }
            if (backend != null) {
                Optional<String> unreachable = backend.unreachable();
                unreachable.ifPresent(own::add);
                if (policy.readiness() == Policy.Readiness.GATE) {
                    unreachable.ifPresent(why -> down.add("policy '" + policy.name() + "': " + why));
                }
            }
            policies.put(policy.name(), own);
        }
        for (Part part : parts) {
            part.problems().forEach((policy, own) -> {
                policies.put(policy, own);
                if (part.gates(policy)) {
                    own.forEach(why -> down.add("policy '" + policy + "': " + why));
                }
            });
        }
        return new Report(down, policies);
    }
}
