package io.stockade.proxy.pipeline;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.fence.ScopeLimitException;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.verify.TokenVerifier;

import org.jspecify.annotations.Nullable;

/**
 * fence + write, the heart of the proxy: a {@link Plan.Write} carried out. Who keeps the fence decides the path:
 * the storage itself (it checks the token in the same step as the write), or the fence store (the token is admitted
 * durably first; for a serialized write every scope of it is held until the storage answered). The plan's rule is
 * the only rule: nothing here reads the policy's fencing.
 */
final class FencedWrite {
    // the request path's one logger name, as operators configure it (the pipeline's parts log as one)
    private static final Logger LOG = Logger.getLogger(FencePipeline.class.getName());
    /** How long a write may wait for its scope before it is refused as busy. */
    static final Duration SCOPE_WAIT = Duration.ofSeconds(30);

    /** What the serialized class needs to know of the time since start. */
    interface AfterStart {
        /** Nanoseconds until a serialized backend opens after start (writes of a crashed run may still land). */
        long closedFor(Backend backend);

        /** Whole seconds since start, for the refusal. */
        long upSeconds();
    }

    private final Engine engine;
    private final AfterStart afterStart;

    FencedWrite(Engine engine, AfterStart afterStart) {
        this.engine = engine;
        this.afterStart = afterStart;
    }

    /** Carries the write out through the path its keeper names. */
    void run(Call call, Plan.Write write) {
        TokenVerifier verifier = engine.verifiers.of(call.policy());
        switch (write.keeper()) {
            case Keeper.InStorage storage -> fencedInTheStorage(call, write, storage.write(), verifier);
            case Keeper.Serialized serialized -> admittedByTheStore(call, write, serialized.write(), true, verifier);
            case Keeper.Conditional conditional -> admittedByTheStore(call, write, conditional.write(), false,
                    verifier);
            case Keeper.Step step -> admittedByTheStore(call, write, step.write(), false, verifier);
        }
    }

    /**
     * A write fenced by the storage: every scope's token verified first (the store is not consulted, so every token
     * is), then the storage judges it by the plan's rule on each scope, in the same step as the write.
     */
    private void fencedInTheStorage(Call call, Plan.Write write, Keeper.StorageWrite storage,
                                    @Nullable TokenVerifier verifier) {
        long token = write.token();
        if (verifier != null) {
            for (String scope : write.scopes()) {
                if (!engine.verified(call, scope, verifier, token)) {
                    return;
                }
            }
        }
        WriteResult result = engine.inBackend(call, () -> storage.write(call.exchange(), token, write.rule()));
        engine.answer(call, token, result, Outcome.ACCEPTED);
    }

    /**
     * A write fenced by the store: for a serialized write, every scope held ({@link #hold}), none quarantined or
     * settling; every scope's token judged before any is raised ({@link #judged}), then admitted on each, durably
     * ({@link #admit}), before the backend writes; what the backend did is answered, a serialized write whose
     * outcome is unknown quarantining its scopes.
     */
    private void admittedByTheStore(Call call, Plan.Write plan, Keeper.StoreWrite write, boolean serialized,
                            @Nullable TokenVerifier verifier) {
        Policy policy = call.policy();
        String name = policy.name();
        String scope = call.scope();
        List<ScopeGuard.Held> held = new ArrayList<>(plan.scopes().size());
        long heldSince = 0;
        try {
            if (serialized) {
                long waitStart = engine.nanoTime.getAsLong();
                if (!hold(call, plan.scopes(), held)) {
                    return;
                }
                heldSince = engine.nanoTime.getAsLong();
                engine.metrics.scopeWait(name, heldSince - waitStart);
                if (!open(call, plan.scopes())) {
                    return;
                }
            }
            long fenceStart = engine.nanoTime.getAsLong();
            if (!judged(call, plan, verifier)) {
                return;
            }
            FenceState previous = admit(call, plan);
            if (previous == null) {
                return;
            }
            engine.metrics.fenceDecision(name, engine.nanoTime.getAsLong() - fenceStart);
            long token = plan.token();
            call.decision.highest(Math.max(token, previous.token()));
            if (previous.token() >= 0 && FenceRule.raises(token, previous.token())) {
                engine.metrics.handoff(name, token - previous.token());
            }
            Admission admission = new Admission(scope, token, previous, engine.store, plan.rule());
            WriteResult result = engine.inBackend(call, () -> write.write(call.exchange(), admission));
            if (result instanceof WriteResult.Stale stale) {
                // The storage knew a higher token than the store (e.g. the file backend's sidecar after a lost
                // journal): lift the store to it, so later stale writers are refused before the backend.
                engine.store.advance(scope, stale.highest(), true);
            }
            if (result instanceof WriteResult.Unknown unknown && unknown.mayLandLater() && serialized
                    && !call.backend().settle().isZero()) {
                plan.scopes().forEach(s -> engine.guard.quarantine(s, call.backend().settle().toNanos()));
            }
            engine.answer(call, token, result, Outcome.ACCEPTED);
        } catch (ScopeLimitException e) {
            engine.warn(policy, "scope-limit", String.valueOf(e.getMessage()));
            call.refuse(Outcome.SCOPE_LIMIT, Refusals.scopeLimit(scope, String.valueOf(e.getMessage())));
        } catch (StoreUnavailableException e) {
            // One line with the cause, at most one a second per policy (every request fails alike while the
            // store is down); the stack only at FINE.
            engine.warn(policy, "store", "fence store unavailable for scope '" + scope + "': " + e.getMessage());
            LOG.log(Level.FINE, "fence store unavailable for scope " + scope, e);
            engine.metrics.storeError(name);
            call.refuse(Outcome.UNAVAILABLE, Refusals.storeUnavailable(scope, String.valueOf(e.getMessage())));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            call.refuse(Outcome.UNAVAILABLE, Refusals.shuttingDown(scope));
        } finally {
            for (ScopeGuard.Held h : held.reversed()) {
                h.close();
            }
            if (!held.isEmpty()) {
                engine.metrics.scopeHeld(name, engine.nanoTime.getAsLong() - heldSince);
            }
        }
    }

    /**
     * Holds every scope of a serialized write, in sorted order (two writes naming the same scopes cannot each wait
     * for the other), into {@code held}; false when one stayed busy past {@link #SCOPE_WAIT} (answered).
     */
    private boolean hold(Call call, List<String> scopes, List<ScopeGuard.Held> held) throws InterruptedException {
        for (String s : scopes.stream().sorted().toList()) {
            ScopeGuard.Held h = engine.guard.acquire(s, SCOPE_WAIT.toNanos());
            if (h == null) {
                call.refuse(Outcome.UNAVAILABLE, Refusals.scopeBusy(s, SCOPE_WAIT.toSeconds()));
                return false;
            }
            held.add(h);
        }
        return true;
    }

    /**
     * Whether the held scopes may be written: none quarantined after an unknown outcome, and the backend past its
     * settle time after start (a write of a crashed run may still land); else answered 503.
     */
    private boolean open(Call call, List<String> scopes) {
        for (String s : scopes) {
            long quarantined = engine.guard.quarantineRemaining(s);
            if (quarantined > 0) {
                call.refuse(Outcome.QUARANTINED, Refusals.quarantined(s, quarantined));
                return false;
            }
        }
        long settling = afterStart.closedFor(call.backend());
        if (settling > 0) {
            call.refuse(Outcome.QUARANTINED, Refusals.settlingAfterStart(call.policy(), call.scope(), settling,
                    call.backend().settle().toSeconds(), afterStart.upSeconds()));
            return false;
        }
        return true;
    }

    /**
     * Judges the token on every scope before any fence moves, when the store's own admission could not judge it
     * alone: a too-far jump, a stale token on a second scope, a token the verifier refuses all leave every scope as
     * it was. A concurrent raise only makes a jump smaller, so judging against this read is never more lenient than
     * judging atomically. False when refused (answered).
     */
    private boolean judged(Call call, Plan.Write plan, @Nullable TokenVerifier verifier)
            throws StoreUnavailableException {
        Fencing.Rule rule = plan.rule();
        long token = plan.token();
        if (!rule.mayBeTooFar(token) && verifier == null && plan.scopes().size() == 1) {
            return true;
        }
        for (String s : plan.scopes()) {
            long highest = engine.store.get(s).map(FenceState::token).orElse(FenceRule.NONE);
            if (rule.tooFar(token, highest)) {
                call.decision.highest(highest);
                call.refuse(Outcome.TOO_FAR, Refusals.tooFar(call.policy(), rule, s, token, highest));
                return false;
            }
            if (FenceRule.stale(token, highest, rule.acceptEqual())) {
                call.decision.highest(highest);
                call.refuse(Outcome.STALE, Refusals.stale(call.policy(), s, token, highest));
                return false;
            }
            // verify: only a token the fence would admit (a stale one is refused above and raises nothing)
            if (verifier != null && !engine.verified(call, s, verifier, token)) {
                return false;
            }
        }
        return true;
    }

    /**
     * Admits the token on every scope, durably, in the plan's order: the first scope's state before, or null when a
     * scope refused it as stale (answered; only a raise between {@link #judged} and here gets there).
     */
    private @Nullable FenceState admit(Call call, Plan.Write plan) throws StoreUnavailableException {
        long token = plan.token();
        FenceState previous = null;
        for (String s : plan.scopes()) {
            Advance advance = engine.store.advance(s, token, plan.rule().acceptEqual());
            if (advance instanceof Advance.Stale stale) {
                if (previous != null) {
                    // Only a raise between the read of judged() and this advance (an operator's, or a replica's on
                    // a scope the serialized class gives to one replica) gets here; the scopes before keep the
                    // token, which a write with it may reach anyway.
                    LOG.warning("policy '" + call.policy().name() + "': token " + token + " was admitted on '"
                            + call.scope() + "' but is stale on '" + s + "' (highest " + stale.highest()
                            + "); nothing written");
                }
                call.decision.highest(stale.highest());
                call.refuse(Outcome.STALE, Refusals.stale(call.policy(), s, token, stale.highest(),
                        stale.fromFloor()));
                return null;
            }
            if (previous == null) {
                previous = ((Advance.Accepted) advance).previous();
            }
        }
        return previous;
    }
}
