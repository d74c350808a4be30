package io.stockade.proxy.pipeline;

import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;
import io.stockade.policy.Route;
import io.stockade.policy.StockadeConfig;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.fence.ScopeLimitException;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.log.Decision;
import io.stockade.proxy.log.DecisionLog;
import io.stockade.proxy.log.WarnLimiter;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.token.FencingToken;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

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
    private static final Logger LOG = Logger.getLogger(FencePipeline.class.getName());
    /** How long a write may wait for its scope before it is refused as busy. */
    static final Duration SCOPE_WAIT = Duration.ofSeconds(30);
    /** Optional header naming the lock holder, for the decision log only. */
    static final HeaderName HOLDER = HeaderNames.create("Fencing-Holder");

    /** The policies and their backends, swapped as one by a reload; a request uses the pair it started with. */
    private volatile Active active;
    private final FenceStore store;
    private final ScopeGuard guard;
    private final ProxyMetrics metrics;
    private final LongSupplier nanoTime;
    private final long startedAt;
    private final TokenVerifiers verifiers;
    private final Limits limits;
    /** Verifier warnings, at most one line a second per policy: a client sending forged tokens cannot flood. */
    private final WarnLimiter warnings;
    private final Readiness readiness;
    /** The previous run stopped cleanly: no write of it can still land, so nothing settles after start. */
    private volatile boolean previousRunClean;
    /** Requests inside a backend's forward or write now, fenced or not (a clean stop waits for them). */
    private final AtomicInteger inBackend = new AtomicInteger();
    /** Every backend that served during this run, those a reload replaced too (a clean stop asks them all). */
    private final Set<Backend> served = ConcurrentHashMap.newKeySet();

    /**
     * @param backends one backend per policy name
     */
    public FencePipeline(StockadeConfig config, Map<String, Backend> backends, FenceStore store, ScopeGuard guard,
                         ProxyMetrics metrics, LongSupplier nanoTime, TokenVerifiers verifiers) {
        this.active = new Active(config, Map.copyOf(backends));
        this.store = store;
        this.guard = guard;
        this.metrics = metrics;
        this.nanoTime = nanoTime;
        this.startedAt = nanoTime.getAsLong();
        this.verifiers = verifiers;
        this.limits = new Limits(nanoTime);
        this.warnings = new WarnLimiter(nanoTime, WarnLimiter.INTERVAL_NANOS);
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
        return inBackend.get() + guard.activeScopes();
    }

    /** {@code /health/ready}: whether the fence store and the policies' verifiers can be reached now. */
    public Readiness readiness() {
        return readiness;
    }

    private record Active(StockadeConfig config, Map<String, Backend> backends) {
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
        active = new Active(config, Map.copyOf(backends));
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
        try (Call call = new Call(req, res)) {
            try {
                if (receive(call)          // one canonical form of the target (400)
                        && match(call)     // the one policy for method and path (404)
                        && withinLimits(call)) { // headers, declared body (431, 413)
                    Plan plan = plan(call); // the backend's one plan: forward, fenced write, or refuse
                    switch (plan) {
                        case Plan.Refuse refuse -> call.refuse(outcomeOf(refuse.problem()), refuse.problem());
                        case Plan.Forward forward -> {
                            if (enter(call)) { // a place in the scope (503)
                                call.decision.outcome(Outcome.UNFENCED, null);
                                forward(call, forward.action());
                            }
                        }
                        case Plan.Write write -> {
                            if (enter(call)) {
                                tokenStage(call, write); // token (400, 428) → verify → fence + write → answer
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

    /**
     * One request on its way: what the stages found so far, and the bookkeeping {@link #close} does once, whatever
     * happened (the {@code finally} of the request path).
     */
    private final class Call implements AutoCloseable {
        final ServerRequest req;
        final ServerResponse res;
        final String method;
        final String rawPath;
        final Decision decision;
        RequestTarget target;
        Backend backend;
        Exchange exchange;
        AtomicInteger inFlight;
        Limits.Permit permit;

        Call(ServerRequest req, ServerResponse res) {
            this.req = req;
            this.res = res;
            this.method = req.prologue().method().text();
            this.rawPath = req.path().rawPath();
            this.decision = new Decision(nanoTime.getAsLong(), method, rawPath);
        }

        Policy policy() {
            return exchange.route().policy();
        }

        String scope() {
            return exchange.scope();
        }

        /**
         * Answers a refusal: in the backend's shape once a policy matched, else as a problem. A client gone before
         * its answer (a body that broke off) is logged with the refusal it would have got.
         */
        void refuse(Outcome outcome, Problem problem) {
            decision.outcome(outcome, problem.detail());
            if (res.isSent()) {
                return;
            }
            try {
                if (backend != null && exchange != null) {
                    Problem named = exchange.route().target() == null ? problem
                            : problem.withDefault("policy", policy().name())
                            .withDefault("scope", Limits.shortened(scope()));
                    backend.refuse(exchange, named);
                } else {
                    problem.send(res);
                }
            } catch (CloseConnectionException e) {
                throw e;
            } catch (UncheckedIOException e) {
                LOG.log(Level.FINE, "the client went away before its refusal was sent", e);
            }
        }

        void brokeOff() {
            if (decision.outcome() == null) {
                decision.outcome(Outcome.ACCEPTED, "the storage's answer broke off midway; the connection was closed");
            }
        }

        @Override
        public void close() {
            if (permit != null) {
                permit.close();
            }
            if (inFlight != null) {
                inFlight.decrementAndGet();
            }
            // limits: a body cut off while it streamed (too large, too slow, malformed) was abandoned by the backend
            if (exchange != null && exchange.bounds().refused() != null) {
                bodyRefused(decision, backend, exchange);
            }
            // metrics + log: once per request. No outcome means an exception is on its way to the server's error
            // handler (a 500): count it as such rather than hide it behind another.
            boolean escaped = decision.outcome() == null;
            if (escaped) {
                decision.outcome(Outcome.ERROR, "an exception escaped the pipeline; see the log");
            }
            int status = escaped && !res.isSent() ? 500 : res.status().code();
            decision.status(status);
            metrics.decision(decision.policy(), decision.backend(), decision.outcome());
            if (status == 502 || status == 504) {
                metrics.upstreamError(decision.policy(), status == 504 ? "timeout" : "unreachable");
            }
            DecisionLog.write(decision, nanoTime.getAsLong());
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
        Optional<Route> matched = current.config().route(call.method, call.target);
        if (matched.isEmpty()) {
            call.refuse(Outcome.NO_POLICY, Refusals.noPolicy(call.method, call.rawPath));
            return false;
        }
        Route route = matched.get();
        Policy policy = route.policy();
        call.backend = current.backends().get(policy.name());
        call.exchange = new Exchange(call.req, call.res, route, route.scope(),
                limits.bodyBounds(policy, current.config().server().limits().readTimeout()));
        call.decision.policy(policy.name(), policy.backend().type(), call.exchange.scope())
                .holder(call.req.headers().first(HOLDER).orElse(null));
        call.inFlight = metrics.inFlight(policy.name());
        call.inFlight.incrementAndGet();
        if (call.target.trailingSlash() && !call.backend.takesTrailingSlash()) {
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
        Plan plan = call.backend.plan(call.exchange);
        if (!plan.scope().equals(call.exchange.scope())) {
            call.exchange = call.exchange.withScope(plan.scope());
            call.decision.scope(plan.scope());
        }
        List<String> scopes = switch (plan) {
            case Plan.Write write -> write.scopes();
            case Plan.Forward forward -> List.of(forward.scope());
            case Plan.Refuse refuse -> List.of();
        };
        int max = call.policy().limits().maxScopeBytes();
        for (String scope : scopes) {
            int bytes = Limits.utf8Length(scope);
            if (bytes > max) {
                call.exchange = call.exchange.withScope(Limits.shortened(scope));
                call.decision.scope(call.exchange.scope());
                return new Plan.Refuse(call.exchange.scope(), Limits.scopeTooLong(call.policy(), bytes));
            }
        }
        return plan;
    }

    /** A place in the scope under the policy's {@code max-concurrent-per-scope} (503 when there is none). */
    private boolean enter(Call call) {
        call.permit = limits.enter(call.policy(), call.scope());
        if (call.permit == null) {
            call.refuse(Outcome.BUSY, Limits.busy(call.policy(), call.scope()));
            return false;
        }
        return true;
    }

    /** The outcome a refusal is counted as, by its kind: one entry per kind, no default. */
    static Outcome outcomeOf(Problem problem) {
        return switch (problem.kind()) {
            case BAD_PATH, BAD_REQUEST, MALFORMED_BODY, INCOMPLETE_BODY, BAD_PARAMETER, NOT_FOUND, UNKNOWN_SCOPE,
                 NOT_A_FILE, SCOPE_NOT_COVERED, LEASE_VALID, FORCE_REQUIRED, SCOPE_CHANGED, PRECONDITION_FAILED,
                 CONSTRAINT_VIOLATION, UNIQUE_VIOLATION,
                 SERIALIZATION_FAILURE, UPSTREAM_CONFLICT, PATH_TOO_LONG, INVALID_POLICY_FILE, RESTART_REQUIRED,
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
                 ANSWER_UNREADABLE -> Outcome.UNAVAILABLE;
            case UNKNOWN_OUTCOME, UPSTREAM_TIMEOUT, STATEMENT_TIMEOUT -> Outcome.UNKNOWN_OUTCOME;
            case HTTP_VERSION_NOT_SUPPORTED -> Outcome.BAD_REQUEST;
            case INTERNAL_ERROR -> Outcome.ERROR;
        };
    }

    /** The raw query, or null when the target has none. */
    private static String rawQuery(ServerRequest req) {
        String raw = req.query().rawValue();
        return raw == null || raw.isEmpty() ? null : raw;
    }

    /**
     * A write the policy does not fence (mode off, a method outside fence.methods) is forwarded as it is; otherwise
     * the token: (observe) judged and forwarded, or (enforce) verified, fenced and written.
     */
    private void tokenStage(Call call, Plan.Write write) {
        Policy policy = call.policy();
        if (policy.fence().mode() == Policy.Mode.OFF || !policy.fences(call.method)) {
            call.decision.outcome(Outcome.UNFENCED, null);
            forward(call, write.unfenced());
            return;
        }
        boolean observe = policy.fence().mode() == Policy.Mode.OBSERVE;
        switch (write.token()) {
            case FencingToken.Malformed malformed -> {
                if (observe) {
                    observed(call, write, Outcome.MALFORMED, malformed.reason());
                } else {
                    call.refuse(Outcome.MALFORMED, Refusals.malformedToken(policy, call.scope(), malformed.reason()));
                }
            }
            case FencingToken.Missing missing -> {
                if (policy.fence().missing() == Policy.MissingToken.ALLOW) {
                    call.decision.outcome(Outcome.ALLOWED_WITHOUT_TOKEN, null);
                    forward(call, write.unfenced());
                } else if (observe) {
                    observed(call, write, Outcome.MISSING, "no " + policy.fence().header() + " header");
                } else {
                    call.refuse(Outcome.MISSING, Refusals.missingToken(policy, call.scope(), call.method));
                }
            }
            case FencingToken.Present present -> {
                call.decision.token(present.value());
                if (observe) {
                    observe(call, write, present.value());
                } else {
                    fencedWrite(call, write, present.value());
                }
            }
        }
    }

    /**
     * fence + write: the heart of the proxy. Who keeps the fence decides the path: the storage itself (it checks
     * the token in the same step as the write), or the fence store (the engine admits the token durably first; for
     * a serialized write it holds every scope of the write until the storage answered).
     */
    private void fencedWrite(Call call, Plan.Write write, long token) {
        TokenVerifier verifier = verifiers.of(call.policy());
        switch (write.keeper()) {
            case Keeper.InStorage storage -> fencedByTheStorage(call, storage.write(), verifier, token);
            case Keeper.Serialized serialized -> fencedByTheStore(call, write.scopes(), serialized.write(), true,
                    verifier, token);
            case Keeper.Conditional conditional -> fencedByTheStore(call, write.scopes(), conditional.write(), false,
                    verifier, token);
        }
    }

    private void fencedByTheStorage(Call call, Keeper.StorageWrite storage, TokenVerifier verifier, long token) {
        // The store is not consulted, so every token is verified.
        if (verifier != null && !verified(call, call.scope(), verifier, token)) {
            return;
        }
        long start = nanoTime.getAsLong();
        WriteResult result;
        inBackend.incrementAndGet();
        try {
            result = storage.write(call.exchange, token, acceptsEqual(call.policy()));
        } finally {
            inBackend.decrementAndGet();
        }
        metrics.upstream(call.policy().name(), nanoTime.getAsLong() - start);
        answer(call, token, result, Outcome.ACCEPTED);
    }

    /**
     * A write fenced by the store: for a serialized write, every scope held (in sorted order, so two writes naming
     * the same scopes cannot each wait for the other), none quarantined or settling; every scope's token judged
     * before any is raised, then admitted on each, durably, before the backend writes.
     */
    private void fencedByTheStore(Call call, List<String> scopes, Keeper.StoreWrite write, boolean serialized,
                                  TokenVerifier verifier, long token) {
        Policy policy = call.policy();
        String name = policy.name();
        String scope = call.scope();
        boolean acceptEqual = acceptsEqual(policy);
        List<ScopeGuard.Held> held = new ArrayList<>(scopes.size());
        long heldSince = 0;
        try {
            if (serialized) {
                long waitStart = nanoTime.getAsLong();
                for (String s : scopes.stream().sorted().toList()) {
                    ScopeGuard.Held h = guard.acquire(s, SCOPE_WAIT.toNanos());
                    if (h == null) {
                        call.refuse(Outcome.UNAVAILABLE, Refusals.scopeBusy(s, SCOPE_WAIT.toSeconds()));
                        return;
                    }
                    held.add(h);
                }
                heldSince = nanoTime.getAsLong();
                metrics.scopeWait(name, heldSince - waitStart);
                for (String s : scopes) {
                    long quarantined = guard.quarantineRemaining(s);
                    if (quarantined > 0) {
                        call.refuse(Outcome.QUARANTINED, Refusals.quarantined(s, quarantined));
                        return;
                    }
                }
                long settling = notOpenFor(call.backend);
                if (settling > 0) {
                    call.refuse(Outcome.QUARANTINED, Refusals.settlingAfterStart(policy, scope, settling,
                            call.backend.settle().toSeconds(), TimeUnit.NANOSECONDS.toSeconds(nanoTime.getAsLong()
                                    - startedAt)));
                    return;
                }
            }

            long fenceStart = nanoTime.getAsLong();
            if (policy.fence().mayBeTooFar(token) || verifier != null || scopes.size() > 1) {
                // Judge the token on every scope before any fence moves: a too-far jump, a stale token on a second
                // scope, a token the verifier refuses all leave every scope as it was. A concurrent raise only
                // makes a jump smaller, so judging against this read is never more lenient than judging atomically.
                for (String s : scopes) {
                    long highest = store.get(s).map(FenceState::token).orElse(FenceRule.NONE);
                    if (policy.fence().tooFar(token, highest)) {
                        call.decision.highest(highest);
                        call.refuse(Outcome.TOO_FAR, Refusals.tooFar(policy, s, token, highest));
                        return;
                    }
                    if (FenceRule.stale(token, highest, acceptEqual)) {
                        call.decision.highest(highest);
                        call.refuse(Outcome.STALE, Refusals.stale(policy, s, token, highest));
                        return;
                    }
                    // verify: only a token the fence would admit (a stale one is refused above and raises nothing)
                    if (verifier != null && !verified(call, s, verifier, token)) {
                        return;
                    }
                }
            }
            FenceState previous = null;
            for (String s : scopes) {
                Advance advance = store.advance(s, token, acceptEqual);
                if (advance instanceof Advance.Stale stale) {
                    if (previous != null) {
                        // Only a raise between the read above and this advance (an operator's, or a replica's on
                        // a scope the serialized class gives to one replica) gets here; the scopes before keep
                        // the token, which a write with it may reach anyway.
                        LOG.warning("policy '" + name + "': token " + token + " was admitted on '" + scope
                                + "' but is stale on '" + s + "' (highest " + stale.highest() + "); nothing written");
                    }
                    call.decision.highest(stale.highest());
                    call.refuse(Outcome.STALE, Refusals.stale(policy, s, token, stale.highest(), stale.fromFloor()));
                    return;
                }
                if (previous == null) {
                    previous = ((Advance.Accepted) advance).previous();
                }
            }
            metrics.fenceDecision(name, nanoTime.getAsLong() - fenceStart);
            call.decision.highest(Math.max(token, previous.token()));
            if (previous.token() >= 0 && FenceRule.raises(token, previous.token())) {
                metrics.handoff(name, token - previous.token());
            }

            long upstreamStart = nanoTime.getAsLong();
            WriteResult result;
            inBackend.incrementAndGet();
            try {
                result = write.write(call.exchange, new Admission(scope, token, previous, store));
            } finally {
                inBackend.decrementAndGet();
            }
            metrics.upstream(name, nanoTime.getAsLong() - upstreamStart);
            if (result instanceof WriteResult.Stale stale) {
                // The storage knew a higher token than the store (e.g. the file backend's sidecar after a lost
                // journal): lift the store to it, so later stale writers are refused before the backend.
                store.advance(scope, stale.highest(), true);
            }
            if (result instanceof WriteResult.Unknown && serialized && !call.backend.settle().isZero()) {
                scopes.forEach(s -> guard.quarantine(s, call.backend.settle().toNanos()));
            }
            answer(call, token, result, Outcome.ACCEPTED);
        } catch (ScopeLimitException e) {
            warn(policy, "scope-limit", e.getMessage());
            call.refuse(Outcome.SCOPE_LIMIT, Refusals.scopeLimit(scope, e.getMessage()));
        } catch (StoreUnavailableException e) {
            // One line with the cause, at most one a second per policy (every request fails alike while the
            // store is down); the stack only at FINE.
            warn(policy, "store", "fence store unavailable for scope '" + scope + "': " + e.getMessage());
            LOG.log(Level.FINE, "fence store unavailable for scope " + scope, e);
            metrics.storeError(name);
            call.refuse(Outcome.UNAVAILABLE, Refusals.storeUnavailable(scope, e.getMessage()));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.refuse(Outcome.UNAVAILABLE, Refusals.shuttingDown(scope));
        } finally {
            for (ScopeGuard.Held h : held.reversed()) {
                h.close();
            }
            if (!held.isEmpty()) {
                metrics.scopeHeld(name, nanoTime.getAsLong() - heldSince);
            }
        }
    }

    private static boolean acceptsEqual(Policy policy) {
        return policy.fence().equal() == Policy.EqualToken.ACCEPT;
    }

    /**
     * verify: asks the policy's verifier whether the token is genuine for {@code scope}. A refusal is 403 and an
     * undecided verdict 503 (fail closed); either way nothing is forwarded and the fence is not touched.
     *
     * @return whether the write may go on (otherwise it has been answered)
     */
    private boolean verified(Call call, String scope, TokenVerifier verifier, long token) {
        Policy policy = call.policy();
        switch (verdict(call.exchange, scope, verifier, token)) {
            case TokenVerifier.Genuine genuine -> {
                return true;
            }
            case TokenVerifier.Refused refused -> {
                // The log line may say what the holder's token is (the operator's business); the client's answer
                // never does, or a forger would read it and send it back. Every refusal is counted and in the
                // decision log; the WARN line is limited, since any client can cause one per request.
                warn(policy, "refused", "token " + token + " for scope '" + scope + "' refused by the "
                        + verifier.kind() + " verifier: " + refused.forLog());
                call.refuse(Outcome.UNVERIFIED, Refusals.unverified(policy, scope, token, verifier.kind(),
                        refused.reason()));
                return false;
            }
            case TokenVerifier.Unavailable unavailable -> {
                warn(policy, "verifier", verifier.kind() + " verifier unavailable for scope '" + scope + "': "
                        + unavailable.reason());
                call.refuse(Outcome.UNAVAILABLE, Refusals.verifierUnavailable(scope, unavailable.reason()));
                return false;
            }
        }
    }

    /** The verifier's verdict about this request's token on {@code scope}, counted. */
    private TokenVerifier.Verdict verdict(Exchange exchange, String scope, TokenVerifier verifier, long token) {
        ServerRequest req = exchange.request();
        TokenVerifier.Verdict verdict = verifier.verify(new TokenVerifier.Claim(scope, token,
                h -> req.headers().all(HeaderNames.create(h), List::of)));
        metrics.verification(exchange.route().policy().name(), verdict.label());
        return verdict;
    }

    /**
     * One WARN line for a failure every request may meet alike while something is down: at most one a second per
     * policy and kind, with the count of the lines left out.
     */
    private void warn(Policy policy, String kind, String text) {
        long leftOut = warnings.admit(policy.name() + " " + kind);
        if (leftOut >= 0) {
            LOG.warning("policy '" + policy.name() + "': " + text + WarnLimiter.leftOut(leftOut));
        }
    }

    /**
     * answer: what a request sent to the storage came to, as an answer to the client and a metric.
     *
     * @param token    the admitted token, or -1 for a request forwarded without one
     * @param answered the outcome when the backend answered (accepted, unfenced, observed...)
     */
    private void answer(Call call, long token, WriteResult result, Outcome answered) {
        Policy policy = call.policy();
        String scope = call.scope();
        switch (result) {
            case WriteResult.Answered ok -> call.decision.outcome(answered, null);
            case WriteResult.Refused refused -> call.refuse(outcomeOf(refused.problem()), refused.problem());
            case WriteResult.Stale stale -> {
                call.decision.highest(stale.highest());
                call.refuse(Outcome.STALE, Refusals.stale(policy, scope, token, stale.highest()));
            }
            case WriteResult.TooFar tooFar -> {
                call.decision.highest(tooFar.highest());
                call.refuse(Outcome.TOO_FAR, Refusals.tooFar(policy, scope, token, tooFar.highest()));
            }
            case WriteResult.Unavailable unavailable -> {
                warn(policy, "unavailable", (token < 0 ? call.method + " " + call.rawPath + " (scope '" + scope
                        + "') was not sent: " : "the fence could not be decided for scope '" + scope + "': ")
                        + unavailable.reason());
                call.refuse(Outcome.UNAVAILABLE, token < 0 ? Refusals.storageUnavailable(scope, unavailable.reason())
                        : Refusals.fenceUnavailable(scope, unavailable.reason()));
            }
            case WriteResult.Unknown unknown -> {
                warn(policy, "unknown", "the outcome of " + (token < 0 ? call.method + " " + call.rawPath
                        : "the write of token " + token) + " to scope '" + scope + "' is unknown: " + unknown.reason());
                call.refuse(Outcome.UNKNOWN_OUTCOME, Refusals.unknownOutcome(policy, scope, token, unknown.reason(),
                        guard.quarantineRemaining(scope) > 0 ? call.backend.settle().toSeconds() : 0));
            }
        }
    }

    /**
     * Observe mode: the token is judged and the high-water mark kept exactly as in enforce mode (so that switching
     * to enforce later starts from the truth), but the request is forwarded whatever the verdict, with no scope
     * held. What enforce would have refused is counted and logged.
     */
    private void observe(Call call, Plan.Write write, long token) {
        Policy policy = call.policy();
        Exchange exchange = call.exchange;
        TokenVerifier verifier = verifiers.of(policy);
        if (verifier != null) {
            // A token enforce would refuse as not genuine is forwarded unfenced: it must not raise the fence.
            switch (verdict(exchange, call.scope(), verifier, token)) {
                case TokenVerifier.Refused refused -> {
                    observed(call, write, Outcome.UNVERIFIED, refused.reason());
                    return;
                }
                case TokenVerifier.Unavailable unavailable -> {
                    observed(call, write, Outcome.UNAVAILABLE, unavailable.reason());
                    return;
                }
                case TokenVerifier.Genuine genuine -> {
                }
            }
        }
        if (write.keeper() instanceof Keeper.InStorage storage) {
            // The storage keeps the high-water mark; it runs the write unfenced and says what enforce would do.
            long start = nanoTime.getAsLong();
            Keeper.Observed observed;
            inBackend.incrementAndGet();
            try {
                observed = storage.write().observe(exchange, token, acceptsEqual(policy));
            } finally {
                inBackend.decrementAndGet();
            }
            metrics.upstream(policy.name(), nanoTime.getAsLong() - start);
            if (observed.wouldReject()) {
                call.decision.highest(observed.highest());
                call.decision.outcome(Outcome.WOULD_REJECT, "stale: token " + token + " is not above the highest "
                        + observed.highest());
            } else {
                call.decision.outcome(Outcome.OBSERVED, null);
            }
            if (!(observed.result() instanceof WriteResult.Answered)) {
                answer(call, token, observed.result(), call.decision.outcome());
            }
            return;
        }
        try {
            if (write.scopes().size() > 1) {
                // as enforce judges a write of several scopes: on every scope before any fence moves
                for (String scope : write.scopes()) {
                    long highest = store.get(scope).map(FenceState::token).orElse(FenceRule.NONE);
                    if (FenceRule.stale(token, highest, acceptsEqual(policy))) {
                        call.decision.highest(highest);
                        observed(call, write, Outcome.STALE, "token " + token + " is not above the highest "
                                + highest + " of scope '" + scope + "'");
                        return;
                    }
                }
            }
            for (String scope : write.scopes()) {
                Advance advance = store.advance(scope, token, acceptsEqual(policy));
                if (advance instanceof Advance.Stale stale) {
                    call.decision.highest(stale.highest());
                    observed(call, write, Outcome.STALE, "token " + token + " is not above the highest "
                            + stale.highest() + " of scope '" + scope + "'");
                    return;
                }
            }
        } catch (StoreUnavailableException e) {
            observed(call, write, Outcome.UNAVAILABLE, e.getMessage());
            return;
        }
        call.decision.outcome(Outcome.OBSERVED, null);
        forward(call, write.unfenced());
    }

    /** Observe mode: what enforce would have refused, forwarded anyway; the log line says what and why. */
    private void observed(Call call, Plan.Write write, Outcome wouldBe, String why) {
        call.decision.outcome(Outcome.WOULD_REJECT, wouldBe.label() + ": " + why);
        forward(call, write.unfenced());
    }

    /**
     * Sends a request the plan forwards without a token; the decision's outcome (unfenced, observed, allowed
     * without a token) stands unless the backend refused it or it failed.
     */
    private void forward(Call call, Plan.Action action) {
        long start = nanoTime.getAsLong();
        WriteResult result;
        inBackend.incrementAndGet();
        try {
            result = action.run(call.exchange);
        } finally {
            inBackend.decrementAndGet();
        }
        metrics.upstream(call.policy().name(), nanoTime.getAsLong() - start);
        if (!(result instanceof WriteResult.Answered)) {
            answer(call, -1, result, call.decision.outcome());
        }
    }

    /**
     * A body that went over a bound while it streamed: the backend abandoned the write (nothing was committed); the
     * client gets the bound's answer unless the backend's answer has already started.
     */
    private static void bodyRefused(Decision decision, Backend backend, Exchange exchange) {
        BodyBounds.BodyRefused refused = exchange.bounds().refused();
        Problem problem = refused.problem().with("policy", exchange.route().policy().name())
                .with("scope", exchange.scope());
        decision.outcome(bodyOutcome(problem.status()), problem.detail());
        if (!exchange.response().isSent()) {
            try {
                backend.refuse(exchange, problem);
            } catch (RuntimeException e) {
                LOG.log(Level.FINE, "could not answer a cut-off body", e);
            }
        }
    }

    /** The outcome of a body refused while it streamed: too slow (408), malformed (400), else too large. */
    static Outcome bodyOutcome(int status) {
        return switch (status) {
            case 408 -> Outcome.TIMED_OUT;
            case 400 -> Outcome.BAD_REQUEST;
            default -> Outcome.TOO_LARGE;
        };
    }

    /** Nanoseconds until a serialized backend opens after start (writes of a crashed run may still land). */
    private long notOpenFor(Backend backend) {
        return previousRunClean ? 0 : Math.max(0, startedAt + backend.settle().toNanos() - nanoTime.getAsLong());
    }
}
