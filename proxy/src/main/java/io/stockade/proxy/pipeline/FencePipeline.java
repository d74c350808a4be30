package io.stockade.proxy.pipeline;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;

import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;
import io.stockade.policy.Route;
import io.stockade.policy.StockadeConfig;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * The request path of the proxy, one stage after another, listed in order in {@link #handle}:
 * <pre>
 * receive → match policy → limits → plan (the backend's one decision) → forward | refuse | write:
 *         parse token → verify (fence.verify) → fence + write (by the storage, or by the store) → answer
 *         → metrics and log ({@code Call.close})
 * </pre>
 * Each stage is a method that either hands the request on or answers it. The backend's {@link Plan} is handled in
 * one exhaustive {@code switch}: nothing reaches a storage but what a plan forwards or writes. Every refusal is a
 * problem of {@code ProblemType}'s vocabulary, answered in the backend's shape ({@link Backend#refuse}). Nothing is
 * forwarded unfenced in {@code enforce} mode: a planned write reaches its {@link Keeper}'s write only after the
 * store has durably admitted its token on every scope it names (holding them all when it is serialized), or
 * through the storage's own fence.
 */
public final class FencePipeline implements Handler {
    /** Optional header naming the lock holder, for the decision log only. */
    static final HeaderName HOLDER = HeaderNames.create("Fencing-Holder");

    /** The policies and their backends, swapped as one by a reload; a request uses the pair it started with. */
    private volatile Active active;
    private final ScopeGuard guard;
    private final ProxyMetrics metrics;
    private final LongSupplier nanoTime;
    private final long startedAt;
    private final Limits limits;
    /** What the parts after the plan share: the store, the guard, the verifiers, metrics, answers. */
    private final Engine engine;
    private final FencedWrite fencedWrite;
    private final Observer observer;
    private final Readiness readiness;
    /** The previous run stopped cleanly: no write of it can still land, so nothing settles after start. */
    private volatile boolean previousRunClean;
    /** Every backend that served during this run, those a reload replaced too (a clean stop asks them all). */
    private final Set<Backend> served = ConcurrentHashMap.newKeySet();

    /**
     * @param backends one backend per policy name
     */
    public FencePipeline(StockadeConfig config, Map<String, Backend> backends, FenceStore store, ScopeGuard guard,
                         ProxyMetrics metrics, LongSupplier nanoTime, TokenVerifiers verifiers) {
        this.active = Active.of(config, backends);
        this.guard = guard;
        this.metrics = metrics;
        this.nanoTime = nanoTime;
        this.startedAt = nanoTime.getAsLong();
        this.limits = new Limits(nanoTime);
        this.engine = new Engine(store, guard, metrics, nanoTime, verifiers);
        this.fencedWrite = new FencedWrite(engine, new FencedWrite.AfterStart() {
            @Override
            public long closedFor(Backend backend) {
                return notOpenFor(backend);
            }

            @Override
            public long upSeconds() {
                return TimeUnit.NANOSECONDS.toSeconds(nanoTime.getAsLong() - startedAt);
            }
        });
        this.observer = new Observer(engine);
        this.readiness = new Readiness(() -> active.config(), () -> active.backends(), store, verifiers, nanoTime);
        this.served.addAll(backends.values());
        registerPolicyGauges(config);
    }

    /**
     * The previous run on this journal stopped cleanly (nothing in flight, nothing quarantined): serialized
     * policies open at once instead of settling after start. Called before the listener starts.
     */
    public void previousRunStoppedCleanly() {
        previousRunClean = true;
    }

    /**
     * Whether a stop now leaves nothing that may still land: no request inside a backend or holding a scope, no
     * scope quarantined after an unknown outcome, no request of this run (fenced, observed or unfenced) that may
     * have reached a storage without an answer, and no serialized policy still settling after start (writes of a
     * crashed run before this one may still be in flight). Backends a reload replaced count too.
     */
    public boolean quiescent() {
        return writesInFlight() == 0 && guard.quarantinedScopes() == 0
                && served.stream().filter(b -> !b.settle().isZero()).noneMatch(Backend::leftOutcomesUnknown)
                && served.stream().allMatch(b -> notOpenFor(b) == 0);
    }

    /** Requests inside a backend now or holding a scope (a serialized write holds it until the upstream answered). */
    public int writesInFlight() {
        return engine.inBackend() + guard.activeScopes();
    }

    /** {@code /health/ready}: whether the fence store and the policies' verifiers can be reached now. */
    public Readiness readiness() {
        return readiness;
    }

    /** The policies in force, their backends, and each policy's fencing read once (at load, or reload). */
    private record Active(StockadeConfig config, Map<String, Backend> backends, Map<String, Fencing> fencing) {
        static Active of(StockadeConfig config, Map<String, Backend> backends) {
            Map<String, Fencing> fencing = new HashMap<>();
            config.policies().forEach(p -> fencing.put(p.name(), Fencing.of(p)));
            return new Active(config, Map.copyOf(backends), Map.copyOf(fencing));
        }
    }

    /** The policies in force. */
    public StockadeConfig config() {
        return active.config();
    }

    /**
     * Puts new policies and their backends in force for every request that starts from now on.
     *
     * @return the backends they replace (requests that started before may still be using them)
     */
    public Map<String, Backend> swap(StockadeConfig config, Map<String, Backend> backends) {
        Active old = active;
        served.addAll(backends.values());
        active = Active.of(config, backends);
        registerPolicyGauges(config);
        return old.backends();
    }

    /** Policies that have a {@code stockade_policy_up} gauge (one per name, kept across reloads). */
    private final Set<String> gauged = ConcurrentHashMap.newKeySet();

    /**
     * {@code stockade_policy_up{policy}}: 1 while the policy can write (the fence store and its own dependencies
     * answer), 0 while its writes answer 503, NaN once a reload removed it. Read at scrape time from the readiness
     * check (at most one round of questions a second), so an outage of any dependency a write needs moves a metric
     * an alert watches ({@code StockadePolicyDown}).
     */
    private void registerPolicyGauges(StockadeConfig config) {
        for (Policy policy : config.policies()) {
            String name = policy.name();
            if (gauged.add(name)) {
                metrics.policyGauge("stockade.policy.up", "1 while the policy can write (the fence store and its own"
                        + " dependencies answer), 0 while its writes answer 503", name, () -> {
                            Readiness.Report report = readiness.check();
                            return !report.policies().containsKey(name) ? Double.NaN : report.up(name) ? 1 : 0;
                        });
            }
        }
    }

    /** Requests holding a place under {@code max-concurrent-per-scope} on a scope of a policy now. */
    public int inFlight(String policy, String scope) {
        return limits.inFlight(policy, scope);
    }

    /** Scopes with requests holding a place under {@code max-concurrent-per-scope} now (tests: none may leak). */
    public int scopesInFlight() {
        return limits.scopesInFlight();
    }

    /**
     * The request path, one stage after another. Each stage either hands the request on or has answered it (and
     * said so in the decision); the per-request bookkeeping (in-flight counts, the per-scope place, a body cut off
     * while it streamed, metrics and the decision log) is {@link Call#close}, whatever happened.
     */
    @Override
    public void handle(ServerRequest req, ServerResponse res) {
        try (Call call = new Call(req, res, metrics, nanoTime)) {
            try {
                if (receive(call)          // one canonical form of the target (400)
                        && match(call)     // the one policy for method and path (404)
                        && withinLimits(call)) { // headers, declared body (431, 413)
                    // the backend's one plan, the only decider of what is fenced: carried out, never judged again
                    Plan plan = plan(call);
                    switch (plan) {
                        case Plan.Refuse refuse -> call.refuse(outcomeOf(refuse.problem()), refuse.problem());
                        case Plan.Forward forward -> {
                            if (enter(call, List.of(forward.scope()))) { // a place in the scope (503)
                                call.decision.outcome(unfencedOutcome(forward.why()), null);
                                engine.forward(call, forward.action());
                            }
                        }
                        case Plan.Write write -> {
                            if (enter(call, write.scopes())) { // a place in every scope it writes
                                call.decision.token(write.token());
                                fencedWrite.run(call, write); // verify → fence + write → answer
                            }
                        }
                        case Plan.Observe observe -> {
                            if (enter(call, observe.scopes())) {
                                observer.run(call, observe); // judged as enforce would, forwarded whatever
                            }
                        }
                    }
                }
            } catch (CloseConnectionException e) {
                // A backend's answer broke off after it started: the connection is closed under the client.
                call.brokeOff();
                throw e;
            }
        }
    }

    /** receive: the target's one canonical form, from which the scope and the storage's resource both come. */
    private boolean receive(Call call) {
        switch (RequestTarget.parse(call.rawPath, rawQuery(call.req), call.req.prologue().fragment().hasValue())) {
            case RequestTarget.Accepted accepted -> {
                call.target = accepted.target();
                return true;
            }
            case RequestTarget.Refused refused -> {
                // Answered in the shape of the policy the target was most likely meant for (S3 XML for s3).
                Active current = active;
                Optional<Policy> meant = current.config().policyForRefusal(call.method, call.rawPath);
                if (meant.isPresent()) {
                    call.backend = current.backends().get(meant.get().name());
                    call.exchange = new Exchange(call.req, call.res, new Route(meant.get(), Map.of(), null), "-");
                }
                call.refuse(Outcome.BAD_REQUEST, Refusals.badPath(call.rawPath, refused.reason()));
                return false;
            }
        }
    }

    /** match: the one policy for the method and the path, and its backend. */
    private boolean match(Call call) {
        Active current = active;
        Optional<Route> matched = current.config().route(call.method, call.target());
        if (matched.isEmpty()) {
            call.refuse(Outcome.NO_POLICY, Refusals.noPolicy(call.method, call.rawPath));
            return false;
        }
        Route route = matched.get();
        Policy policy = route.policy();
        Backend backend = Objects.requireNonNull(current.backends().get(policy.name()),
                "the backends hold one per policy (StockadeServer and Reloader open them so)");
        call.backend = backend;
        Exchange exchange = new Exchange(call.req, call.res, route, route.scope(),
                limits.bodyBounds(policy, current.config().server().limits().readTimeout()),
                Objects.requireNonNull(current.fencing().get(policy.name()), "Active.of reads one for every policy"),
                (method, target) -> current.config().route(method, target).map(Route::policy));
        call.exchange = exchange;
        call.decision.policy(policy.name(), policy.backend().type(), exchange.scope())
                .holder(call.req.headers().first(HOLDER).orElse(null));
        AtomicInteger inFlight = metrics.inFlight(policy.name());
        call.inFlight = inFlight;
        inFlight.incrementAndGet();
        if (call.target().trailingSlash() && !backend.takesTrailingSlash()) {
            call.refuse(Outcome.BAD_REQUEST, Refusals.trailingSlash(call.rawPath));
            return false;
        }
        return true;
    }

    /** limits: before the backend reads anything, so a request over them never raises a fence or is read. */
    private boolean withinLimits(Call call) {
        Optional<Problem> overLimit = Limits.refusal(call.policy(), call.req);
        if (overLimit.isPresent()) {
            call.refuse(Outcome.TOO_LARGE, overLimit.get());
            return false;
        }
        return true;
    }

    /**
     * plan: the backend reads the request as its storage would and decides; the exchange gets the plan's scope. A
     * scope longer than the policy's {@code max-scope-bytes} is refused here (414), before any store sees it.
     */
    private Plan plan(Call call) {
        Plan plan = call.backend().plan(call.exchange());
        if (!plan.scope().equals(call.exchange().scope())) {
            call.exchange = call.exchange().withScope(plan.scope());
            call.decision.scope(plan.scope());
        }
        List<String> scopes = switch (plan) {
            case Plan.Write write -> write.scopes();
            case Plan.Observe observe -> observe.scopes();
            case Plan.Forward forward -> List.of(forward.scope());
            case Plan.Refuse refuse -> List.of();
        };
        int max = call.policy().limits().maxScopeBytes();
        for (String scope : scopes) {
            int bytes = Limits.utf8Length(scope);
            if (bytes > max) {
                call.exchange = call.exchange().withScope(Limits.shortened(scope));
                call.decision.scope(call.exchange().scope());
                return new Plan.Refuse(call.exchange().scope(), Limits.scopeTooLong(call.policy(), bytes));
            }
        }
        return plan;
    }

    /**
     * A place in each scope the plan names under the policy's {@code max-concurrent-per-scope} (503 naming the first
     * full one; the places taken are given back when the request ends).
     */
    private boolean enter(Call call, List<String> scopes) {
        for (String scope : scopes) {
            Limits.Permit permit = limits.enter(call.policy(), scope);
            if (permit == null) {
                call.refuse(Outcome.BUSY, Limits.busy(call.policy(), scope));
                return false;
            }
            call.permits.add(permit);
        }
        return true;
    }

    /** The outcome a request forwarded without a token is counted as, by the plan's reason. */
    private static Outcome unfencedOutcome(Plan.Unfenced why) {
        return switch (why) {
            case READ, NOT_FENCED -> Outcome.UNFENCED;
            case WITHOUT_TOKEN -> Outcome.ALLOWED_WITHOUT_TOKEN;
        };
    }

    /** The outcome a refusal is counted as, by its kind: one entry per kind, no default. */
    static Outcome outcomeOf(Problem problem) {
        return switch (problem.kind()) {
            case BAD_PATH, BAD_REQUEST, MALFORMED_BODY, INCOMPLETE_BODY, BAD_PARAMETER, NOT_FOUND, UNKNOWN_SCOPE,
                 NOT_A_FILE, SCOPE_NOT_COVERED, LEASE_VALID, FORCE_REQUIRED, SCOPE_CHANGED, PRECONDITION_FAILED,
                 CONSTRAINT_VIOLATION, UNIQUE_VIOLATION,
                 SERIALIZATION_FAILURE, PATH_TOO_LONG, INVALID_POLICY_FILE, RESTART_REQUIRED,
                 NO_SUCH_OPERATION -> Outcome.BAD_REQUEST;
            case REFUSED_HEADER, BAD_DESTINATION, UNKNOWN_OPERATION, METHOD_NOT_ALLOWED, NOT_SUPPORTED, UNAUTHORIZED,
                 ACCESS_DENIED -> Outcome.REFUSED;
            case MALFORMED_TOKEN -> Outcome.MALFORMED;
            case MISSING_TOKEN -> Outcome.MISSING;
            case STALE_TOKEN -> Outcome.STALE;
            case TOKEN_TOO_FAR -> Outcome.TOO_FAR;
            case UNVERIFIED_TOKEN -> Outcome.UNVERIFIED;
            case NO_POLICY -> Outcome.NO_POLICY;
            case BODY_TOO_LARGE, HEADERS_TOO_LARGE, REQUEST_LINE_TOO_LONG, SCOPE_TOO_LONG -> Outcome.TOO_LARGE;
            case SCOPE_LIMIT -> Outcome.SCOPE_LIMIT;
            case BODY_TIMEOUT -> Outcome.TIMED_OUT;
            case SCOPE_BUSY -> Outcome.BUSY;
            case SCOPE_QUARANTINED -> Outcome.QUARANTINED;
            case STORE_UNAVAILABLE, VERIFIER_UNAVAILABLE, DATABASE_UNAVAILABLE, STORAGE_ERROR,
                 SHUTTING_DOWN, SLOW_DOWN, BACKEND_UNAVAILABLE, UPSTREAM_UNREACHABLE, STATEMENT_FAILED,
                 STATEMENT_TIMEOUT,
                 ANSWER_UNREADABLE -> Outcome.UNAVAILABLE;
            case UNKNOWN_OUTCOME, UPSTREAM_TIMEOUT -> Outcome.UNKNOWN_OUTCOME;
            case HTTP_VERSION_NOT_SUPPORTED -> Outcome.BAD_REQUEST;
            case INTERNAL_ERROR -> Outcome.ERROR;
        };
    }

    /** The raw query, or null when the target has none. */
    private static @Nullable String rawQuery(ServerRequest req) {
        String raw = req.query().rawValue();
        return raw == null || raw.isEmpty() ? null : raw;
    }

    /** Nanoseconds until a serialized backend opens after start (writes of a crashed run may still land). */
    private long notOpenFor(Backend backend) {
        return previousRunClean ? 0 : Math.max(0, startedAt + backend.settle().toNanos() - nanoTime.getAsLong());
    }
}
