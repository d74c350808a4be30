package io.stockade.proxy.pipeline;

import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.log.WarnLimiter;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

/**
 * What the parts of the request path after the plan share ({@link FencedWrite}, {@link Observer}, the pipeline's
 * forward): the fence store, the scope guard, the verifiers, the metrics and the clock, and what each of them does
 * alike: send a request to a backend counted as in flight ({@link #inBackend}), forward one without a token
 * ({@link #forward}), ask the verifier ({@link #verified}), and turn what the backend did into the answer and the
 * decision ({@link #answer}).
 */
final class Engine {
    // the request path's one logger name, as operators configure it (the pipeline's parts log as one)
    private static final Logger LOG = Logger.getLogger(FencePipeline.class.getName());
    final FenceStore store;
    final ScopeGuard guard;
    final ProxyMetrics metrics;
    final LongSupplier nanoTime;
    final TokenVerifiers verifiers;
    /** Verifier warnings, at most one line a second per policy: a client sending forged tokens cannot flood. */
    private final WarnLimiter warnings;
    /** Requests inside a backend's forward or write now, fenced or not (a clean stop waits for them). */
    private final AtomicInteger inBackend = new AtomicInteger();

    Engine(FenceStore store, ScopeGuard guard, ProxyMetrics metrics, LongSupplier nanoTime,
           TokenVerifiers verifiers) {
        this.store = store;
        this.guard = guard;
        this.metrics = metrics;
        this.nanoTime = nanoTime;
        this.verifiers = verifiers;
        this.warnings = new WarnLimiter(nanoTime, WarnLimiter.INTERVAL_NANOS);
    }

    /** Requests inside a backend now. */
    int inBackend() {
        return inBackend.get();
    }

    /** Runs a backend's call counted as in flight, and times it as the policy's upstream time. */
    WriteResult inBackend(Call call, Supplier<WriteResult> backend) {
        long start = nanoTime.getAsLong();
        inBackend.incrementAndGet();
        try {
            return backend.get();
        } finally {
            inBackend.decrementAndGet();
            metrics.upstream(call.policy().name(), nanoTime.getAsLong() - start);
        }
    }

    /**
     * verify: asks the policy's verifier whether the token is genuine for {@code scope}. A refusal is 403 and an
     * undecided verdict 503 (fail closed); either way nothing is forwarded and the fence is not touched.
     *
     * @return whether the write may go on (otherwise it has been answered)
     */
    boolean verified(Call call, String scope, TokenVerifier verifier, long token) {
        Policy policy = call.policy();
        switch (verdict(call.exchange(), scope, verifier, token)) {
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
    TokenVerifier.Verdict verdict(Exchange exchange, String scope, TokenVerifier verifier, long token) {
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
    void warn(Policy policy, String kind, String text) {
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
    void answer(Call call, long token, WriteResult result, Outcome answered) {
        Policy policy = call.policy();
        String scope = call.scope();
        switch (result) {
            case WriteResult.Answered ok when ok.notApplied() != null -> {
                // answered (an S3 DeleteObjects' 200, an entry per key), a part of it not applied: counted and
                // logged as that part came to, on its scope, so that a stale key is seen as the stale writer it is
                call.exchange = call.exchange().withScope(ok.notApplied().scope());
                call.decision.scope(ok.notApplied().scope());
                answer(call, token, ok.notApplied().result(), answered);
            }
            case WriteResult.Answered ok -> call.decision.outcome(answered, null);
            case WriteResult.Refused refused -> call.refuse(FencePipeline.outcomeOf(refused.problem()),
                    refused.problem());
            case WriteResult.Stale stale -> {
                call.decision.highest(stale.highest());
                call.refuse(Outcome.STALE, Refusals.stale(policy, scope, token, stale.highest()));
            }
            case WriteResult.TooFar tooFar -> {
                call.decision.highest(tooFar.highest());
                call.refuse(Outcome.TOO_FAR, Refusals.tooFar(policy, call.exchange().fencing().rule(), scope, token,
                        tooFar.highest()));
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
                        guard.quarantineRemaining(scope) > 0 ? call.backend().settle().toSeconds() : 0));
            }
        }
    }

    /**
     * Sends a request the plan forwards without a token; the decision's outcome (unfenced, observed, allowed
     * without a token) stands unless the backend refused it or it failed.
     */
    void forward(Call call, Plan.Action action) {
        WriteResult result = inBackend(call, () -> action.run(call.exchange()));
        if (!(result instanceof WriteResult.Answered)) {
            answer(call, -1, result, Objects.requireNonNull(call.decision.outcome(),
                    "every caller sets the outcome before it forwards"));
        }
    }
}
