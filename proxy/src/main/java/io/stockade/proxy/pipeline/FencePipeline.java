package io.stockade.proxy.pipeline;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
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
import io.stockade.proxy.backend.FenceClass;
import io.stockade.proxy.backend.SelfFencing;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
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
 * receive → match policy → limits → admit (backend) → fenced? → parse token → verify (fence.verify)
 *         → fence + write (by the storage, or by the store) → answer → metrics and log ({@code Call.close})
 * </pre>
 * Each stage is a method that either hands the request on or answers it. Every refusal is built in
 * {@link Refusals} and answered in the backend's shape ({@link Backend#refuse}). Nothing is forwarded unfenced
 * in {@code enforce} mode: a write reaches a backend's {@link Backend#write} only after the store has durably
 * admitted its token, and only while the engine holds its scope when the backend is of the serialized class.
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
    private final java.util.concurrent.atomic.AtomicInteger inBackend = new java.util.concurrent.atomic.AtomicInteger();
    /** Every backend that served during this run, those a reload replaced too (a clean stop asks them all). */
    private final java.util.Set<Backend> served = java.util.concurrent.ConcurrentHashMap.newKeySet();

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
        return old.backends();
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
                        && withinLimits(call) // headers, declared body (431, 413), a place in the scope (503)
                        && admitted(call)  // the backend's own checks: signatures, paths it cannot take
                        && fenced(call)) { // reads, unfenced methods, mode off: forwarded as they are
                    tokenStage(call);      // token (400, 428) → verify → fence + write → answer
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

        /** Answers a refusal: in the backend's shape once a policy matched, else as a problem. */
        void refuse(Outcome outcome, Problem problem) {
            decision.outcome(outcome, problem.detail());
            if (backend != null && exchange != null) {
                backend.refuse(exchange, problem);
            } else {
                problem.send(res);
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

    /** match: the one policy for the method and the path, its backend, the scope. */
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
        if (call.target.trailingSlash() && !call.backend.takesTrailingSlash()) {
            call.exchange = new Exchange(call.req, call.res, route, "-");
            call.refuse(Outcome.BAD_REQUEST, Refusals.trailingSlash(call.rawPath));
            return false;
        }
        call.exchange = new Exchange(call.req, call.res, route, call.backend.scope(route, call.req),
                limits.bodyBounds(policy, current.config().server().limits().readTimeout()));
        call.decision.policy(policy.name(), policy.backend().type(), call.exchange.scope())
                .holder(call.req.headers().first(HOLDER).orElse(null));
        call.inFlight = metrics.inFlight(policy.name());
        call.inFlight.incrementAndGet();
        return true;
    }

    /** limits: before the token is read, so a request over them never raises a fence or reaches a backend. */
    private boolean withinLimits(Call call) {
        Policy policy = call.policy();
        Optional<Problem> overLimit = Limits.refusal(policy, call.req);
        if (overLimit.isPresent()) {
            call.refuse(Outcome.TOO_LARGE, overLimit.get());
            return false;
        }
        call.permit = limits.enter(policy, call.exchange.scope());
        if (call.permit == null) {
            call.refuse(Outcome.BUSY, Limits.busy(policy, call.exchange.scope()));
            return false;
        }
        return true;
    }

    /** admit: what the backend checks from the request alone, before any fence question. */
    private boolean admitted(Call call) {
        if (!call.backend.admit(call.exchange)) {
            call.decision.outcome(Outcome.BAD_REQUEST, "refused by the " + call.policy().backend().type()
                    + " backend");
            return false;
        }
        return true;
    }

    /** Whether the request is fenced; if not (a read, an unfenced method, mode off), it is forwarded as it is. */
    private boolean fenced(Call call) {
        Policy policy = call.policy();
        if (policy.fence().mode() == Policy.Mode.OFF || !policy.fences(call.method)
                || !call.backend.fences(call.exchange)) {
            call.decision.outcome(Outcome.UNFENCED, null);
            forward(call.backend, call.exchange);
            return false;
        }
        return true;
    }

    /** The raw query, or null when the target has none. */
    private static String rawQuery(ServerRequest req) {
        String raw = req.query().rawValue();
        return raw == null || raw.isEmpty() ? null : raw;
    }

    /** parse token, then (observe) judge and forward, or (enforce) verify, fence and write. */
    private void tokenStage(Call call) {
        Policy policy = call.policy();
        String header = policy.fence().header();
        boolean observe = policy.fence().mode() == Policy.Mode.OBSERVE;
        switch (call.backend.token(call.exchange)) {
            case FencingToken.Malformed malformed -> {
                if (observe) {
                    observed(call, Outcome.MALFORMED, malformed.reason());
                } else {
                    call.refuse(Outcome.MALFORMED, Refusals.malformedToken(policy, call.exchange.scope(),
                            malformed.reason()));
                }
            }
            case FencingToken.Missing missing -> {
                if (policy.fence().missing() == Policy.MissingToken.ALLOW) {
                    call.decision.outcome(Outcome.ALLOWED_WITHOUT_TOKEN, null);
                    forward(call.backend, call.exchange);
                } else if (observe) {
                    observed(call, Outcome.MISSING, "no " + header + " header");
                } else {
                    call.refuse(Outcome.MISSING, Refusals.missingToken(policy, call.exchange.scope(), call.method));
                }
            }
            case FencingToken.Present present -> {
                call.decision.token(present.value());
                if (observe) {
                    observe(call, present.value());
                } else {
                    fencedWrite(call, present.value());
                }
            }
        }
    }

    /**
     * fence + write: the heart of the proxy. Who keeps the fence decides the path: the storage itself (a
     * {@link SelfFencing} backend checks the token in the same step as the write), or the fence store (the engine
     * admits the token durably first; for a serialized backend it holds the scope until the write is answered).
     */
    private void fencedWrite(Call call, long token) {
        TokenVerifier verifier = verifiers.of(call.policy());
        switch (call.backend) {
            case SelfFencing self -> fencedByTheStorage(call, self, verifier, token);
            default -> fencedByTheStore(call, verifier, token);
        }
    }

    private void fencedByTheStorage(Call call, SelfFencing self, TokenVerifier verifier, long token) {
        // The store is not consulted, so every token is verified.
        if (verifier != null && !verified(call, verifier, token)) {
            return;
        }
        long start = nanoTime.getAsLong();
        WriteResult result = self.fencedWrite(call.exchange, token, acceptsEqual(call.policy()));
        metrics.upstream(call.policy().name(), nanoTime.getAsLong() - start);
        answer(call, token, result);
    }

    private void fencedByTheStore(Call call, TokenVerifier verifier, long token) {
        Policy policy = call.policy();
        String name = policy.name();
        String scope = call.exchange.scope();
        Backend backend = call.backend;
        boolean acceptEqual = acceptsEqual(policy);
        boolean serialized = backend.fenceClass() == FenceClass.SERIALIZED;
        ScopeGuard.Held held = null;
        long heldSince = 0;
        try {
            if (serialized) {
                long waitStart = nanoTime.getAsLong();
                held = guard.acquire(scope, SCOPE_WAIT.toNanos());
                heldSince = nanoTime.getAsLong();
                metrics.scopeWait(name, heldSince - waitStart);
                if (held == null) {
                    call.refuse(Outcome.UNAVAILABLE, Refusals.scopeBusy(scope, SCOPE_WAIT.toSeconds()));
                    return;
                }
                long quarantined = guard.quarantineRemaining(scope);
                if (quarantined > 0) {
                    call.refuse(Outcome.QUARANTINED, Refusals.quarantined(scope, quarantined));
                    return;
                }
                long settling = notOpenFor(backend);
                if (settling > 0) {
                    call.refuse(Outcome.QUARANTINED, Refusals.settlingAfterStart(policy, scope, settling,
                            backend.settle().toSeconds(), TimeUnit.NANOSECONDS.toSeconds(nanoTime.getAsLong()
                                    - startedAt)));
                    return;
                }
            }

            long fenceStart = nanoTime.getAsLong();
            if (policy.fence().maxAdvance() != Policy.Fence.UNLIMITED || verifier != null) {
                // Refuse an inflated token before it can raise the fence. A concurrent raise only makes the jump
                // smaller, so judging against this read is never more lenient than judging atomically.
                long highest = store.get(scope).map(FenceState::token).orElse(-1L);
                if (policy.fence().tooFar(token, highest)) {
                    call.decision.highest(highest);
                    call.refuse(Outcome.TOO_FAR, Refusals.tooFar(policy, scope, token, highest));
                    return;
                }
                // verify: only a token the fence would admit. One below the highest (or equal, with equal: reject)
                // is refused as stale by the advance below and can raise nothing; highest tokens never go down.
                boolean admissible = token > highest || token == highest && acceptEqual;
                if (verifier != null && admissible && !verified(call, verifier, token)) {
                    return;
                }
            }
            Advance advance = store.advance(scope, token, acceptEqual);
            metrics.fenceDecision(name, nanoTime.getAsLong() - fenceStart);
            if (advance instanceof Advance.Stale stale) {
                call.decision.highest(stale.highest());
                call.refuse(Outcome.STALE, Refusals.stale(policy, scope, token, stale.highest(), stale.fromFloor()));
                return;
            }
            FenceState previous = ((Advance.Accepted) advance).previous();
            call.decision.highest(Math.max(token, previous.token()));
            if (previous.token() >= 0 && token > previous.token()) {
                metrics.handoff(name, token - previous.token());
            }

            long upstreamStart = nanoTime.getAsLong();
            WriteResult result;
            inBackend.incrementAndGet();
            try {
                result = backend.write(call.exchange, new Admission(scope, token, previous, store));
            } finally {
                inBackend.decrementAndGet();
            }
            metrics.upstream(name, nanoTime.getAsLong() - upstreamStart);
            if (result instanceof WriteResult.Stale stale) {
                // The storage knew a higher token than the store (e.g. the file backend's sidecar after a lost
                // journal): lift the store to it, so later stale writers are refused before the backend.
                store.advance(scope, stale.highest(), true);
            }
            if (result instanceof WriteResult.Unknown && serialized && !backend.settle().isZero()) {
                guard.quarantine(scope, backend.settle().toNanos());
            }
            answer(call, token, result);
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
            if (held != null) {
                held.close();
                metrics.scopeHeld(name, nanoTime.getAsLong() - heldSince);
            }
        }
    }

    private static boolean acceptsEqual(Policy policy) {
        return policy.fence().equal() == Policy.EqualToken.ACCEPT;
    }

    /**
     * verify: asks the policy's verifier whether the token is genuine. A refusal is 403 and an undecided verdict
     * 503 (fail closed); either way nothing is forwarded and the fence is not touched.
     *
     * @return whether the write may go on (otherwise it has been answered)
     */
    private boolean verified(Call call, TokenVerifier verifier, long token) {
        Policy policy = call.policy();
        String name = policy.name();
        String scope = call.exchange.scope();
        switch (verdict(call.exchange, verifier, token)) {
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

    /** The verifier's verdict about this request's token, counted. */
    private TokenVerifier.Verdict verdict(Exchange exchange, TokenVerifier verifier, long token) {
        ServerRequest req = exchange.request();
        TokenVerifier.Verdict verdict = verifier.verify(new TokenVerifier.Claim(exchange.scope(), token,
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

    /** answer: what a fenced write came to, as an answer to the client and a metric. */
    private void answer(Call call, long token, WriteResult result) {
        Policy policy = call.policy();
        String scope = call.exchange.scope();
        switch (result) {
            case WriteResult.Answered answered -> call.decision.outcome(Outcome.ACCEPTED, null);
            case WriteResult.Stale stale -> {
                call.decision.highest(stale.highest());
                call.refuse(Outcome.STALE, Refusals.stale(policy, scope, token, stale.highest()));
            }
            case WriteResult.TooFar tooFar -> {
                call.decision.highest(tooFar.highest());
                call.refuse(Outcome.TOO_FAR, Refusals.tooFar(policy, scope, token, tooFar.highest()));
            }
            case WriteResult.Unavailable unavailable -> {
                warn(policy, "unavailable", "the fence could not be decided for scope '" + scope + "': "
                        + unavailable.reason());
                call.refuse(Outcome.UNAVAILABLE, Refusals.fenceUnavailable(scope, unavailable.reason()));
            }
            case WriteResult.Unknown unknown -> {
                warn(policy, "unknown", "the outcome of the write of token " + token + " to scope '" + scope
                        + "' is unknown: " + unknown.reason());
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
    private void observe(Call call, long token) {
        Policy policy = call.policy();
        Exchange exchange = call.exchange;
        TokenVerifier verifier = verifiers.of(policy);
        if (verifier != null) {
            // A token enforce would refuse as not genuine is forwarded unfenced: it must not raise the fence.
            switch (verdict(exchange, verifier, token)) {
                case TokenVerifier.Refused refused -> {
                    observed(call, Outcome.UNVERIFIED, refused.reason());
                    return;
                }
                case TokenVerifier.Unavailable unavailable -> {
                    observed(call, Outcome.UNAVAILABLE, unavailable.reason());
                    return;
                }
                case TokenVerifier.Genuine genuine -> {
                }
            }
        }
        if (call.backend instanceof SelfFencing self) {
            // The storage keeps the high-water mark; it runs the write unfenced and says what enforce would do.
            long start = nanoTime.getAsLong();
            SelfFencing.Observed observed = self.observe(exchange, token, acceptsEqual(policy));
            metrics.upstream(policy.name(), nanoTime.getAsLong() - start);
            if (observed.wouldReject()) {
                call.decision.highest(observed.highest());
                call.decision.outcome(Outcome.WOULD_REJECT, "stale: token " + token + " is not above the highest "
                        + observed.highest());
            } else {
                call.decision.outcome(Outcome.OBSERVED, null);
            }
            if (!(observed.result() instanceof WriteResult.Answered)) {
                answer(call, token, observed.result());
            }
            return;
        }
        try {
            Advance advance = store.advance(exchange.scope(), token, acceptsEqual(policy));
            if (advance instanceof Advance.Stale stale) {
                call.decision.highest(stale.highest());
                observed(call, Outcome.STALE, "token " + token + " is not above the highest " + stale.highest());
                return;
            }
        } catch (StoreUnavailableException e) {
            observed(call, Outcome.UNAVAILABLE, e.getMessage());
            return;
        }
        call.decision.outcome(Outcome.OBSERVED, null);
        forward(call.backend, exchange);
    }

    /** Observe mode: what enforce would have refused, forwarded anyway; the log line says what and why. */
    private void observed(Call call, Outcome wouldBe, String why) {
        call.decision.outcome(Outcome.WOULD_REJECT, wouldBe.label() + ": " + why);
        forward(call.backend, call.exchange);
    }

    private void forward(Backend backend, Exchange exchange) {
        long start = nanoTime.getAsLong();
        inBackend.incrementAndGet();
        try {
            backend.forward(exchange);
        } finally {
            inBackend.decrementAndGet();
        }
        metrics.upstream(exchange.route().policy().name(), nanoTime.getAsLong() - start);
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
