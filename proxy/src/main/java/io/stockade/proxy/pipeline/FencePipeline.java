package io.stockade.proxy.pipeline;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.stockade.policy.Policy;
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
import io.stockade.proxy.http.Problem;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.token.FencingToken;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The request path of the proxy, one stage after another, top to bottom in {@link #handle}:
 * <pre>
 * receive → match policy → parse token → fence + write through the backend → answer → metrics
 * </pre>
 * Every refusal is an RFC 9457 problem. Nothing is forwarded unfenced in {@code enforce} mode: a write reaches
 * a backend's {@link Backend#write} only after the store has durably admitted its token, and only while the
 * engine holds its scope when the backend is of the serialized class.
 */
public final class FencePipeline implements Handler {
    private static final Logger LOG = Logger.getLogger(FencePipeline.class.getName());
    /** How long a write may wait for its scope before it is refused as busy. */
    static final Duration SCOPE_WAIT = Duration.ofSeconds(30);

    private final StockadeConfig config;
    private final Map<String, Backend> backends;
    private final FenceStore store;
    private final ScopeGuard guard;
    private final ProxyMetrics metrics;
    private final LongSupplier nanoTime;
    private final long startedAt;

    /**
     * @param backends one backend per policy name
     */
    public FencePipeline(StockadeConfig config, Map<String, Backend> backends, FenceStore store, ScopeGuard guard,
                         ProxyMetrics metrics, LongSupplier nanoTime) {
        this.config = config;
        this.backends = Map.copyOf(backends);
        this.store = store;
        this.guard = guard;
        this.metrics = metrics;
        this.nanoTime = nanoTime;
        this.startedAt = nanoTime.getAsLong();
    }

    @Override
    public void handle(ServerRequest req, ServerResponse res) {
        String method = req.prologue().method().text();
        String rawPath = req.path().rawPath();

        // receive: one spelling per resource
        Optional<String> badPath = RequestPath.problem(rawPath);
        if (badPath.isPresent()) {
            refuse(res, ProxyMetrics.NO_POLICY, Outcome.BAD_REQUEST,
                    Problem.of(400, "bad-path", "Path refused", badPath.get()).with("path", rawPath));
            return;
        }

        // match policy
        Optional<Route> matched = config.route(method, rawPath);
        if (matched.isEmpty()) {
            refuse(res, ProxyMetrics.NO_POLICY, Outcome.NO_POLICY, Problem.of(404, "no-policy", "No policy",
                    "no policy matches " + method + " " + rawPath).with("path", rawPath));
            return;
        }
        Route route = matched.get();
        Policy policy = route.policy();
        String name = policy.name();
        Backend backend = backends.get(name);
        Exchange exchange = new Exchange(req, res, route, route.scope());
        if (policy.fence().mode() == Policy.Mode.OFF || !policy.fences(method)) {
            metrics.decision(name, Outcome.UNFENCED);
            forward(backend, exchange);
            return;
        }

        // parse token
        String header = policy.fence().header();
        FencingToken.Parsed parsed = FencingToken.parse(header, req.headers().all(HeaderNames.create(header), List::of));
        boolean observe = policy.fence().mode() == Policy.Mode.OBSERVE;
        switch (parsed) {
            case FencingToken.Malformed malformed -> {
                if (observe) {
                    observed(backend, exchange, Outcome.MALFORMED, malformed.reason());
                } else {
                    refuse(backend, exchange, Outcome.MALFORMED, Problem.of(400, "malformed-token", "Malformed fencing token",
                            malformed.reason()).with("policy", name).with("scope", exchange.scope()));
                }
            }
            case FencingToken.Missing missing -> {
                if (policy.fence().missing() == Policy.MissingToken.ALLOW) {
                    metrics.decision(name, Outcome.ALLOWED_WITHOUT_TOKEN);
                    forward(backend, exchange);
                } else if (observe) {
                    observed(backend, exchange, Outcome.MISSING, "no " + header + " header");
                } else {
                    refuse(backend, exchange, Outcome.MISSING, Problem.of(428, "missing-token", "Fencing token required",
                            method + " is fenced by policy '" + name + "': send the token of your lock in the "
                                    + header + " header").with("policy", name).with("scope", exchange.scope()));
                }
            }
            case FencingToken.Present present -> {
                if (observe) {
                    observe(backend, exchange, present.value());
                } else {
                    fencedWrite(backend, exchange, present.value());
                }
            }
        }
    }

    /** fence + write: the heart of the proxy. */
    private void fencedWrite(Backend backend, Exchange exchange, long token) {
        Policy policy = exchange.route().policy();
        String name = policy.name();
        String scope = exchange.scope();
        boolean acceptEqual = policy.fence().equal() == Policy.EqualToken.ACCEPT;

        if (backend instanceof SelfFencing self) {
            // The storage checks the token in the same step as the write; the store is not consulted.
            long start = nanoTime.getAsLong();
            WriteResult result = self.fencedWrite(exchange, token, acceptEqual);
            metrics.upstream(name, nanoTime.getAsLong() - start);
            answer(backend, exchange, token, result);
            return;
        }

        boolean serialized = backend.fenceClass() == FenceClass.SERIALIZED;
        ScopeGuard.Held held = null;
        try {
            if (serialized) {
                long waitStart = nanoTime.getAsLong();
                held = guard.acquire(scope, SCOPE_WAIT.toNanos());
                metrics.scopeWait(name, nanoTime.getAsLong() - waitStart);
                if (held == null) {
                    refuse(backend, exchange, Outcome.UNAVAILABLE, unavailable("scope-busy", "Scope busy",
                            "other writes of this scope held it for " + SCOPE_WAIT.toSeconds() + " s", scope, 1));
                    return;
                }
                long closed = Math.max(guard.quarantineRemaining(scope), notOpenFor(backend));
                if (closed > 0) {
                    refuse(backend, exchange, Outcome.QUARANTINED, unavailable("scope-quarantined",
                            "Scope quarantined", "an earlier write to this scope has an unknown outcome and may "
                                    + "still land; writes resume when the settle time has passed", scope,
                            seconds(closed)));
                    return;
                }
            }

            long fenceStart = nanoTime.getAsLong();
            Advance advance = store.advance(scope, token, acceptEqual);
            metrics.fenceDecision(name, nanoTime.getAsLong() - fenceStart);
            if (advance instanceof Advance.Stale stale) {
                refuse(backend, exchange, Outcome.STALE, staleProblem(policy, scope, token, stale.highest()));
                return;
            }
            FenceState previous = ((Advance.Accepted) advance).previous();

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
            answer(backend, exchange, token, result);
        } catch (StoreUnavailableException e) {
            LOG.log(Level.WARNING, "fence store unavailable for scope " + scope, e);
            refuse(backend, exchange, Outcome.UNAVAILABLE, unavailable("store-unavailable",
                    "Fence store unavailable", "the fence could not be decided, nothing was written: "
                            + e.getMessage(), scope, 1));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            refuse(backend, exchange, Outcome.UNAVAILABLE, unavailable("shutting-down", "Shutting down",
                    "the proxy is stopping", scope, 1));
        } finally {
            if (held != null) {
                held.close();
            }
        }
    }

    /** answer: what a fenced write came to, as an answer to the client and a metric. */
    private void answer(Backend backend, Exchange exchange, long token, WriteResult result) {
        Policy policy = exchange.route().policy();
        String scope = exchange.scope();
        switch (result) {
            case WriteResult.Answered answered -> metrics.decision(policy.name(), Outcome.ACCEPTED);
            case WriteResult.Stale stale -> refuse(backend, exchange, Outcome.STALE,
                    staleProblem(policy, scope, token, stale.highest()));
            case WriteResult.Unavailable unavailable -> refuse(backend, exchange, Outcome.UNAVAILABLE,
                    unavailable("store-unavailable", "Fence unavailable", "the fence could not be decided, "
                            + "nothing was written: " + unavailable.reason(), scope, 1));
            case WriteResult.Unknown unknown -> {
                boolean quarantined = guard.quarantineRemaining(scope) > 0;
                refuse(backend, exchange, Outcome.UNKNOWN_OUTCOME, Problem.of(504, "unknown-outcome",
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
    private void observe(Backend backend, Exchange exchange, long token) {
        Policy policy = exchange.route().policy();
        if (backend instanceof SelfFencing self) {
            // The storage keeps the high-water mark; it runs the write unfenced and says what enforce would do.
            long start = nanoTime.getAsLong();
            SelfFencing.Observed observed = self.observe(exchange, token,
                    policy.fence().equal() == Policy.EqualToken.ACCEPT);
            metrics.upstream(policy.name(), nanoTime.getAsLong() - start);
            if (observed.wouldReject()) {
                metrics.decision(policy.name(), Outcome.WOULD_REJECT);
                LOG.info(() -> "observe: policy " + policy.name() + " would refuse token " + token + " for scope "
                        + exchange.scope() + " (stale: the highest was " + observed.highest() + ")");
            } else if (observed.result() instanceof WriteResult.Answered) {
                metrics.decision(policy.name(), Outcome.OBSERVED);
            }
            if (!(observed.result() instanceof WriteResult.Answered)) {
                answer(backend, exchange, token, observed.result());
            }
            return;
        }
        try {
            Advance advance = store.advance(exchange.scope(), token,
                    policy.fence().equal() == Policy.EqualToken.ACCEPT);
            if (advance instanceof Advance.Stale stale) {
                observed(backend, exchange, Outcome.STALE,
                        "token " + token + " is not above the highest " + stale.highest());
                return;
            }
        } catch (StoreUnavailableException e) {
            observed(backend, exchange, Outcome.UNAVAILABLE, e.getMessage());
            return;
        }
        metrics.decision(policy.name(), Outcome.OBSERVED);
        forward(backend, exchange);
    }

    private void observed(Backend backend, Exchange exchange, Outcome wouldBe, String why) {
        String name = exchange.route().policy().name();
        metrics.decision(name, Outcome.WOULD_REJECT);
        LOG.info(() -> "observe: policy " + name + " would refuse " + exchange.request().prologue().method().text()
                + " " + exchange.request().path().rawPath() + " (" + wouldBe.name().toLowerCase() + ": " + why + ")");
        forward(backend, exchange);
    }

    private void forward(Backend backend, Exchange exchange) {
        long start = nanoTime.getAsLong();
        backend.forward(exchange);
        metrics.upstream(exchange.route().policy().name(), nanoTime.getAsLong() - start);
    }

    /** Nanoseconds until a serialized backend opens after start (writes of a crashed run may still land). */
    private long notOpenFor(Backend backend) {
        return Math.max(0, startedAt + backend.settle().toNanos() - nanoTime.getAsLong());
    }

    /** A refusal before any policy matched: always a problem body. */
    private void refuse(ServerResponse res, String policy, Outcome outcome, Problem problem) {
        metrics.decision(policy, outcome);
        problem.send(res);
    }

    /** A refusal of a policy's request, in the shape its backend's clients understand. */
    private void refuse(Backend backend, Exchange exchange, Outcome outcome, Problem problem) {
        metrics.decision(exchange.route().policy().name(), outcome);
        backend.refuse(exchange, problem);
    }

    private static Problem staleProblem(Policy policy, String scope, long token, long highest) {
        return Problem.of(409, "stale-token", "Stale fencing token",
                        "token " + token + " is " + (token == highest ? "equal to" : "below")
                                + " the highest token " + highest + " accepted for scope '" + scope
                                + "'; a newer holder owns this resource")
                .with("policy", policy.name()).with("scope", scope).with("token", token).with("highest", highest);
    }

    private static Problem unavailable(String type, String title, String detail, String scope, long retryAfter) {
        return Problem.of(503, type, title, detail).with("scope", scope).retryAfter(retryAfter);
    }

    private static long seconds(long nanos) {
        return Math.max(1, TimeUnit.NANOSECONDS.toSeconds(nanos + 999_999_999L));
    }
}
