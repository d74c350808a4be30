package io.stockade.proxy.pipeline;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;
import io.stockade.policy.Route;
import io.stockade.policy.StockadeConfig;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BodyBounds;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.FenceClass;
import io.stockade.proxy.backend.SelfFencing;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.http.Problem;
import io.stockade.proxy.log.Decision;
import io.stockade.proxy.log.DecisionLog;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.token.FencingToken;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.TokenVerifiers;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The request path of the proxy, one stage after another, top to bottom in {@link #handle}:
 * <pre>
 * receive → match policy → parse token → verify (fence.verify) → fence + write through the backend → answer
 *         → metrics
 * </pre>
 * Every refusal is an RFC 9457 problem. Nothing is forwarded unfenced in {@code enforce} mode: a write reaches
 * a backend's {@link Backend#write} only after the store has durably admitted its token, and only while the
 * engine holds its scope when the backend is of the serialized class.
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
    private final WarnLimiter verifierWarnings;

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
        this.verifierWarnings = new WarnLimiter(nanoTime, WarnLimiter.INTERVAL_NANOS);
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

    @Override
    public void handle(ServerRequest req, ServerResponse res) {
        String method = req.prologue().method().text();
        String rawPath = req.path().rawPath();
        long received = nanoTime.getAsLong();
        Decision decision = new Decision(received, method, rawPath);
        AtomicInteger inFlight = null;
        Backend backend = null;
        Exchange exchange = null;
        Limits.Permit permit = null;
        try {
            // receive: one canonical form of the target, from which the scope and the storage's resource both come
            RequestTarget target;
            switch (RequestTarget.parse(rawPath, rawQuery(req), req.prologue().fragment().hasValue())) {
                case RequestTarget.Refused refused -> {
                    badTarget(decision, req, res, Problem.of(400, "bad-path", "Path refused", refused.reason())
                            .with("path", rawPath));
                    return;
                }
                case RequestTarget.Accepted accepted -> target = accepted.target();
            }

            // match policy
            Active current = active;
            Optional<Route> matched = current.config().route(method, target);
            if (matched.isEmpty()) {
                refuse(decision, res, Outcome.NO_POLICY, Problem.of(404, "no-policy", "No policy",
                        "no policy matches " + method + " " + rawPath).with("path", rawPath));
                return;
            }
            Route route = matched.get();
            Policy policy = route.policy();
            backend = current.backends().get(policy.name());
            if (target.trailingSlash() && !backend.takesTrailingSlash()) {
                refuse(decision, backend, new Exchange(req, res, route, "-"), Outcome.BAD_REQUEST,
                        Problem.of(400, "bad-path", "Path refused", "the path ends with '/' (an empty last segment);"
                                + " name the resource without a trailing slash").with("path", rawPath));
                return;
            }
            exchange = new Exchange(req, res, route, backend.scope(route, req),
                    limits.bodyBounds(policy, current.config().server().limits().readTimeout()));
            decision.policy(policy.name(), policy.backend().type(), exchange.scope())
                    .holder(req.headers().first(HOLDER).orElse(null));
            inFlight = metrics.inFlight(policy.name());
            inFlight.incrementAndGet();

            // limits: before the token is read, so a request over them never raises a fence or reaches a backend
            Optional<Problem> overLimit = Limits.refusal(policy, req);
            if (overLimit.isPresent()) {
                refuse(decision, backend, exchange, Outcome.TOO_LARGE, overLimit.get());
                return;
            }
            permit = limits.enter(policy, exchange.scope());
            if (permit == null) {
                refuse(decision, backend, exchange, Outcome.BUSY, Limits.busy(policy, exchange.scope()));
                return;
            }
            if (!backend.admit(exchange)) {
                decision.outcome(Outcome.BAD_REQUEST, "refused by the " + policy.backend().type() + " backend");
                return;
            }
            if (policy.fence().mode() == Policy.Mode.OFF || !policy.fences(method) || !backend.fences(exchange)) {
                decision.outcome(Outcome.UNFENCED, null);
                forward(backend, exchange);
                return;
            }

            // parse token
            tokenStage(decision, backend, exchange);
        } catch (CloseConnectionException e) {
            // A backend's answer broke off after it started: the connection is closed under the client.
            if (decision.outcome() == null) {
                decision.outcome(Outcome.ACCEPTED, "the storage's answer broke off midway; the connection was closed");
            }
            throw e;
        } finally {
            if (permit != null) {
                permit.close();
            }
            if (inFlight != null) {
                inFlight.decrementAndGet();
            }
            // limits: a body cut off while it streamed (too large, too slow) was abandoned by the backend
            if (exchange != null && exchange.bounds().refused() != null) {
                bodyRefused(decision, backend, exchange);
            }
            // metrics + log: once per request, whatever happened above. No outcome means an exception is on its
            // way to the server's error handler (a 500): count it as such rather than hide it behind another.
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

    /**
     * A refused target: answered in the shape of the policy it was most likely meant for (S3 XML for an s3 policy),
     * else as a problem. Nothing else of that policy runs.
     */
    private void badTarget(Decision decision, ServerRequest req, ServerResponse res, Problem problem) {
        Active current = active;
        Optional<Policy> meant = current.config().policyForRefusal(req.prologue().method().text(),
                req.path().rawPath());
        if (meant.isEmpty()) {
            refuse(decision, res, Outcome.BAD_REQUEST, problem);
            return;
        }
        Backend backend = current.backends().get(meant.get().name());
        refuse(decision, backend, new Exchange(req, res, new Route(meant.get(), Map.of(), null), "-"),
                Outcome.BAD_REQUEST, problem);
    }

    /** The raw query, or null when the target has none. */
    private static String rawQuery(ServerRequest req) {
        String raw = req.query().rawValue();
        return raw == null || raw.isEmpty() ? null : raw;
    }

    private void tokenStage(Decision decision, Backend backend, Exchange exchange) {
        Policy policy = exchange.route().policy();
        String name = policy.name();
        String header = policy.fence().header();
        ServerRequest req = exchange.request();
        FencingToken.Parsed parsed = backend.token(exchange);
        boolean observe = policy.fence().mode() == Policy.Mode.OBSERVE;
        switch (parsed) {
            case FencingToken.Malformed malformed -> {
                if (observe) {
                    observed(decision, backend, exchange, Outcome.MALFORMED, malformed.reason());
                } else {
                    refuse(decision, backend, exchange, Outcome.MALFORMED, Problem.of(400, "malformed-token",
                            "Malformed fencing token", malformed.reason()).with("policy", name)
                            .with("scope", exchange.scope()));
                }
            }
            case FencingToken.Missing missing -> {
                if (policy.fence().missing() == Policy.MissingToken.ALLOW) {
                    decision.outcome(Outcome.ALLOWED_WITHOUT_TOKEN, null);
                    forward(backend, exchange);
                } else if (observe) {
                    observed(decision, backend, exchange, Outcome.MISSING, "no " + header + " header");
                } else {
                    refuse(decision, backend, exchange, Outcome.MISSING, Problem.of(428, "missing-token",
                            "Fencing token required", req.prologue().method().text() + " is fenced by policy '"
                                    + name + "': send the token of your lock in the " + header + " header")
                            .with("policy", name).with("scope", exchange.scope()));
                }
            }
            case FencingToken.Present present -> {
                decision.token(present.value());
                if (observe) {
                    observe(decision, backend, exchange, present.value());
                } else {
                    fencedWrite(decision, backend, exchange, present.value());
                }
            }
        }
    }

    /** fence + write: the heart of the proxy. */
    private void fencedWrite(Decision decision, Backend backend, Exchange exchange, long token) {
        Policy policy = exchange.route().policy();
        String name = policy.name();
        String scope = exchange.scope();
        boolean acceptEqual = policy.fence().equal() == Policy.EqualToken.ACCEPT;
        TokenVerifier verifier = verifiers.of(policy);

        if (backend instanceof SelfFencing self) {
            // The storage checks the token in the same step as the write; the store is not consulted, so every
            // token is verified.
            if (verifier != null && !verified(decision, backend, exchange, verifier, token)) {
                return;
            }
            long start = nanoTime.getAsLong();
            WriteResult result = self.fencedWrite(exchange, token, acceptEqual);
            metrics.upstream(name, nanoTime.getAsLong() - start);
            answer(decision, backend, exchange, token, result);
            return;
        }

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
                    refuse(decision, backend, exchange, Outcome.UNAVAILABLE, unavailable("scope-busy", "Scope busy",
                            "other writes of this scope held it for " + SCOPE_WAIT.toSeconds() + " s", scope, 1));
                    return;
                }
                long closed = Math.max(guard.quarantineRemaining(scope), notOpenFor(backend));
                if (closed > 0) {
                    refuse(decision, backend, exchange, Outcome.QUARANTINED, unavailable("scope-quarantined",
                            "Scope quarantined", "an earlier write to this scope has an unknown outcome and may "
                                    + "still land; writes resume when the settle time has passed", scope,
                            seconds(closed)));
                    return;
                }
            }

            long fenceStart = nanoTime.getAsLong();
            if (policy.fence().maxAdvance() != Policy.Fence.UNLIMITED || verifier != null) {
                // Refuse an inflated token before it can raise the fence. A concurrent raise only makes the jump
                // smaller, so judging against this read is never more lenient than judging atomically.
                long highest = store.get(scope).map(FenceState::token).orElse(-1L);
                if (policy.fence().tooFar(token, highest)) {
                    decision.highest(highest);
                    refuse(decision, backend, exchange, Outcome.TOO_FAR, tooFarProblem(policy, scope, token, highest));
                    return;
                }
                // verify: only a token the fence would admit. One below the highest (or equal, with equal: reject)
                // is refused as stale by the advance below and can raise nothing; highest tokens never go down.
                boolean admissible = token > highest || token == highest && acceptEqual;
                if (verifier != null && admissible && !verified(decision, backend, exchange, verifier, token)) {
                    return;
                }
            }
            Advance advance = store.advance(scope, token, acceptEqual);
            metrics.fenceDecision(name, nanoTime.getAsLong() - fenceStart);
            if (advance instanceof Advance.Stale stale) {
                decision.highest(stale.highest());
                refuse(decision, backend, exchange, Outcome.STALE, staleProblem(policy, scope, token, stale.highest()));
                return;
            }
            FenceState previous = ((Advance.Accepted) advance).previous();
            decision.highest(Math.max(token, previous.token()));
            if (previous.token() >= 0 && token > previous.token()) {
                metrics.handoff(name, token - previous.token());
            }

            long upstreamStart = nanoTime.getAsLong();
            WriteResult result = backend.write(exchange, new Admission(scope, token, previous, store));
            metrics.upstream(name, nanoTime.getAsLong() - upstreamStart);
            if (result instanceof WriteResult.Stale stale) {
                // The storage knew a higher token than the store (e.g. the file backend's sidecar after a lost
                // journal): lift the store to it, so later stale writers are refused before the backend.
                store.advance(scope, stale.highest(), true);
            }
            if (result instanceof WriteResult.Unknown && serialized && !backend.settle().isZero()) {
                guard.quarantine(scope, backend.settle().toNanos());
            }
            answer(decision, backend, exchange, token, result);
        } catch (StoreUnavailableException e) {
            LOG.log(Level.WARNING, "fence store unavailable for scope " + scope, e);
            metrics.storeError(name);
            refuse(decision, backend, exchange, Outcome.UNAVAILABLE, unavailable("store-unavailable",
                    "Fence store unavailable", "the fence could not be decided, nothing was written: "
                            + e.getMessage(), scope, 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            refuse(decision, backend, exchange, Outcome.UNAVAILABLE, unavailable("shutting-down", "Shutting down",
                    "the proxy is stopping", scope, 1));
        } finally {
            if (held != null) {
                held.close();
                metrics.scopeHeld(name, nanoTime.getAsLong() - heldSince);
            }
        }
    }

    /**
     * verify: asks the policy's verifier whether the token is genuine. A refusal is 403 and an undecided verdict
     * 503 (fail closed); either way nothing is forwarded and the fence is not touched.
     *
     * @return whether the write may go on (otherwise it has been answered)
     */
    private boolean verified(Decision decision, Backend backend, Exchange exchange, TokenVerifier verifier,
                             long token) {
        String name = exchange.route().policy().name();
        String scope = exchange.scope();
        switch (verdict(exchange, verifier, token)) {
            case TokenVerifier.Genuine genuine -> {
                return true;
            }
            case TokenVerifier.Refused refused -> {
                // The log line may say what the holder's token is (the operator's business); the client's answer
                // never does, or a forger would read it and send it back. Every refusal is counted and in the
                // decision log; the WARN line is limited, since any client can cause one per request.
                long leftOut = verifierWarnings.admit(name + " refused");
                if (leftOut >= 0) {
                    LOG.warning("policy '" + name + "': token " + token + " for scope '" + scope + "' refused by the "
                            + verifier.kind() + " verifier: " + refused.forLog() + WarnLimiter.leftOut(leftOut));
                }
                refuse(decision, backend, exchange, Outcome.UNVERIFIED, Problem.of(403, "unverified-token",
                                "Token not verified", "token " + token + " for scope '" + scope + "' was not verified"
                                        + " by the " + verifier.kind() + " verifier (" + refused.reason()
                                        + "); it was not accepted and did not raise the fence")
                        .with("policy", name).with("scope", scope).with("token", token));
                return false;
            }
            case TokenVerifier.Unavailable unavailable -> {
                long leftOut = verifierWarnings.admit(name + " unavailable");
                if (leftOut >= 0) {
                    LOG.warning("policy '" + name + "': " + verifier.kind() + " verifier unavailable for scope '"
                            + scope + "': " + unavailable.reason() + WarnLimiter.leftOut(leftOut));
                }
                refuse(decision, backend, exchange, Outcome.UNAVAILABLE, unavailable("verifier-unavailable",
                        "Token verifier unavailable", "the token could not be verified, nothing was written: "
                                + unavailable.reason(), scope, 1));
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

    /** answer: what a fenced write came to, as an answer to the client and a metric. */
    private void answer(Decision decision, Backend backend, Exchange exchange, long token, WriteResult result) {
        Policy policy = exchange.route().policy();
        String scope = exchange.scope();
        switch (result) {
            case WriteResult.Answered answered -> decision.outcome(Outcome.ACCEPTED, null);
            case WriteResult.Stale stale -> {
                decision.highest(stale.highest());
                refuse(decision, backend, exchange, Outcome.STALE, staleProblem(policy, scope, token, stale.highest()));
            }
            case WriteResult.TooFar tooFar -> {
                decision.highest(tooFar.highest());
                refuse(decision, backend, exchange, Outcome.TOO_FAR,
                        tooFarProblem(policy, scope, token, tooFar.highest()));
            }
            case WriteResult.Unavailable unavailable -> refuse(decision, backend, exchange, Outcome.UNAVAILABLE,
                    unavailable("store-unavailable", "Fence unavailable", "the fence could not be decided, "
                            + "nothing was written: " + unavailable.reason(), scope, 1));
            case WriteResult.Unknown unknown -> {
                boolean quarantined = guard.quarantineRemaining(scope) > 0;
                refuse(decision, backend, exchange, Outcome.UNKNOWN_OUTCOME, Problem.of(504, "unknown-outcome",
                                "Outcome unknown", unknown.reason() + "; the write may or may not have been applied"
                                        + (quarantined ? "; the scope is quarantined for "
                                        + backend.settle().toSeconds() + " s" : ""))
                        .with("policy", policy.name()).with("scope", scope).with("token", token));
            }
        }
    }

    /**
     * Observe mode: the token is judged and the high-water mark kept exactly as in enforce mode (so that switching
     * to enforce later starts from the truth), but the request is forwarded whatever the verdict, with no scope
     * held. What enforce would have refused is counted and logged.
     */
    private void observe(Decision decision, Backend backend, Exchange exchange, long token) {
        Policy policy = exchange.route().policy();
        TokenVerifier verifier = verifiers.of(policy);
        if (verifier != null) {
            // A token enforce would refuse as not genuine is forwarded unfenced: it must not raise the fence.
            switch (verdict(exchange, verifier, token)) {
                case TokenVerifier.Refused refused -> {
                    observed(decision, backend, exchange, Outcome.UNVERIFIED, refused.reason());
                    return;
                }
                case TokenVerifier.Unavailable unavailable -> {
                    observed(decision, backend, exchange, Outcome.UNAVAILABLE, unavailable.reason());
                    return;
                }
                case TokenVerifier.Genuine genuine -> {
                }
            }
        }
        if (backend instanceof SelfFencing self) {
            // The storage keeps the high-water mark; it runs the write unfenced and says what enforce would do.
            long start = nanoTime.getAsLong();
            SelfFencing.Observed observed = self.observe(exchange, token,
                    policy.fence().equal() == Policy.EqualToken.ACCEPT);
            metrics.upstream(policy.name(), nanoTime.getAsLong() - start);
            if (observed.wouldReject()) {
                decision.highest(observed.highest());
                decision.outcome(Outcome.WOULD_REJECT, "stale: token " + token + " is not above the highest "
                        + observed.highest());
            } else {
                decision.outcome(Outcome.OBSERVED, null);
            }
            if (!(observed.result() instanceof WriteResult.Answered)) {
                answer(decision, backend, exchange, token, observed.result());
            }
            return;
        }
        try {
            Advance advance = store.advance(exchange.scope(), token,
                    policy.fence().equal() == Policy.EqualToken.ACCEPT);
            if (advance instanceof Advance.Stale stale) {
                decision.highest(stale.highest());
                observed(decision, backend, exchange, Outcome.STALE,
                        "token " + token + " is not above the highest " + stale.highest());
                return;
            }
        } catch (StoreUnavailableException e) {
            observed(decision, backend, exchange, Outcome.UNAVAILABLE, e.getMessage());
            return;
        }
        decision.outcome(Outcome.OBSERVED, null);
        forward(backend, exchange);
    }

    /** Observe mode: what enforce would have refused, forwarded anyway; the log line says what and why. */
    private void observed(Decision decision, Backend backend, Exchange exchange, Outcome wouldBe, String why) {
        decision.outcome(Outcome.WOULD_REJECT, wouldBe.label() + ": " + why);
        forward(backend, exchange);
    }

    private void forward(Backend backend, Exchange exchange) {
        long start = nanoTime.getAsLong();
        backend.forward(exchange);
        metrics.upstream(exchange.route().policy().name(), nanoTime.getAsLong() - start);
    }

    /**
     * A body that went over a bound, or proved malformed, while it streamed: the backend abandoned the write (nothing
     * was committed); the client gets the refusal unless the backend's answer has already started.
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
        return Math.max(0, startedAt + backend.settle().toNanos() - nanoTime.getAsLong());
    }

    /** A refusal before any policy matched: always a problem body. */
    private static void refuse(Decision decision, ServerResponse res, Outcome outcome, Problem problem) {
        decision.outcome(outcome, problem.detail());
        problem.send(res);
    }

    /** A refusal of a policy's request, in the shape its backend's clients understand. */
    private static void refuse(Decision decision, Backend backend, Exchange exchange, Outcome outcome,
                               Problem problem) {
        decision.outcome(outcome, problem.detail());
        backend.refuse(exchange, problem);
    }

    private static Problem staleProblem(Policy policy, String scope, long token, long highest) {
        return Problem.of(409, "stale-token", "Stale fencing token",
                        "token " + token + " is " + (token == highest ? "equal to" : "below")
                                + " the highest token " + highest + " accepted for scope '" + scope
                                + "'; a newer holder owns this resource")
                .with("policy", policy.name()).with("scope", scope).with("token", token).with("highest", highest);
    }

    private static Problem tooFarProblem(Policy policy, String scope, long token, long highest) {
        return Problem.of(422, "token-too-far", "Token jumps too far", "token " + token + " is more than "
                        + policy.fence().maxAdvance() + " above the highest token " + highest + " of scope '" + scope
                        + "' (the policy's max-advance); it was not accepted and did not raise the fence")
                .with("policy", policy.name()).with("scope", scope).with("token", token)
                .with("highest", highest).with("maxAdvance", policy.fence().maxAdvance());
    }

    private static Problem unavailable(String type, String title, String detail, String scope, long retryAfter) {
        return Problem.of(503, type, title, detail).with("scope", scope).retryAfter(retryAfter);
    }

    private static long seconds(long nanos) {
        return Math.max(1, TimeUnit.NANOSECONDS.toSeconds(nanos + 999_999_999L));
    }
}
