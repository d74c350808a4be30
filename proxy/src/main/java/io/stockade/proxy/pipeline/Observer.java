package io.stockade.proxy.pipeline;

import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.ScopeLimitException;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.token.FencingToken;
import io.stockade.proxy.verify.TokenVerifier;

/**
 * A {@link Plan.Observe} carried out ({@code mode: observe}): judged as enforce would judge it, with the high-water
 * mark kept as enforce keeps it, and forwarded whatever the verdict; what enforce would have refused is counted and
 * logged ({@code would_reject}).
 */
final class Observer {
    private final Engine engine;

    Observer(Engine engine) {
        this.engine = engine;
    }

    /**
     * Observe mode: the token is judged and the high-water mark kept exactly as in enforce mode (so that switching
     * to enforce later starts from the truth): verified and judged by the plan's rule on every scope before any
     * fence moves, a token enforce would refuse raising nothing. The request is forwarded whatever the verdict, with
     * no scope held; what enforce would have refused is counted and logged.
     */
    void run(Call call, Plan.Observe plan) {
        long token;
        switch (plan.token()) {
            case FencingToken.Malformed malformed -> {
                observed(call, plan, Outcome.MALFORMED, malformed.reason());
                return;
            }
            case FencingToken.Missing missing -> {
                observed(call, plan, Outcome.MISSING, "no token");
                return;
            }
            case FencingToken.Present present -> token = present.value();
        }
        call.decision.token(token);
        Policy policy = call.policy();
        Exchange exchange = call.exchange();
        Fencing.Rule rule = plan.rule();
        TokenVerifier verifier = engine.verifiers.of(policy);
        if (verifier != null) {
            // A token enforce would refuse as not genuine is forwarded unfenced: it must not raise the fence.
            for (String scope : plan.scopes()) {
                switch (engine.verdict(exchange, scope, verifier, token)) {
                    case TokenVerifier.Refused refused -> {
                        observed(call, plan, Outcome.UNVERIFIED, refused.reason());
                        return;
                    }
                    case TokenVerifier.Unavailable unavailable -> {
                        observed(call, plan, Outcome.UNAVAILABLE, unavailable.reason());
                        return;
                    }
                    case TokenVerifier.Genuine genuine -> {
                    }
                }
            }
        }
        if (plan.keeper() instanceof Keeper.InStorage storage) {
            // The storage keeps the high-water mark; it runs the write unfenced and says what enforce would do.
            Keeper.Observed[] observedBox = new Keeper.Observed[1];
            engine.inBackend(call, () -> {
                observedBox[0] = storage.write().observe(exchange, token, rule);
                return observedBox[0].result();
            });
            Keeper.Observed observed = observedBox[0];
            Outcome outcome = observed.wouldReject() ? Outcome.WOULD_REJECT : Outcome.OBSERVED;
            if (observed.wouldReject()) {
                call.decision.highest(observed.highest());
                call.decision.outcome(outcome, (rule.tooFar(token, observed.highest())
                        ? "too-far: token " + token + " jumps more than " + rule.maxAdvance() + " over the highest "
                        : "stale: token " + token + " is not above the highest ") + observed.highest());
            } else {
                call.decision.outcome(outcome, null);
            }
            if (!(observed.result() instanceof WriteResult.Answered)) {
                engine.answer(call, token, observed.result(), outcome);
            }
            return;
        }
        try {
            // as enforce judges it: on every scope before any fence moves
            for (String scope : plan.scopes()) {
                long highest = engine.store.get(scope).map(FenceState::token).orElse(FenceRule.NONE);
                if (rule.tooFar(token, highest) || FenceRule.stale(token, highest, rule.acceptEqual())) {
                    call.decision.highest(highest);
                    observed(call, plan, rule.tooFar(token, highest) ? Outcome.TOO_FAR : Outcome.STALE, "token "
                            + token + (rule.tooFar(token, highest) ? " jumps more than " + rule.maxAdvance()
                            + " over" : " is not above") + " the highest " + highest + " of scope '" + scope + "'");
                    return;
                }
            }
            for (String scope : plan.scopes()) {
                Advance advance = engine.store.advance(scope, token, rule.acceptEqual());
                if (advance instanceof Advance.Stale stale) {
                    call.decision.highest(stale.highest());
                    observed(call, plan, Outcome.STALE, "token " + token + " is not above the highest "
                            + stale.highest() + " of scope '" + scope + "'");
                    return;
                }
            }
        } catch (StoreUnavailableException e) { // a ScopeLimitException too: the store holds as many as it may
            observed(call, plan, e instanceof ScopeLimitException ? Outcome.SCOPE_LIMIT : Outcome.UNAVAILABLE,
                    String.valueOf(e.getMessage()));
            return;
        }
        call.decision.outcome(Outcome.OBSERVED, null);
        engine.forward(call, plan.forward());
    }

    /** Observe mode: what enforce would have refused, forwarded anyway; the log line says what and why. */
    private void observed(Call call, Plan.Observe plan, Outcome wouldBe, String why) {
        call.decision.outcome(Outcome.WOULD_REJECT, wouldBe.label() + ": " + why);
        engine.forward(call, plan.forward());
    }
}
