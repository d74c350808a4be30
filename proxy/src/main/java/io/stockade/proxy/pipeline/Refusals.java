package io.stockade.proxy.pipeline;

import java.util.concurrent.TimeUnit;

import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

/**
 * Every refusal the pipeline decides, as an RFC 9457 problem, in one place: its status, type, title and the words
 * a client reads. A backend may answer them in another shape ({@code Backend.refuse}: S3 XML), keeping the status
 * and the meaning.
 */
final class Refusals {
    private Refusals() {
    }

    static Problem badPath(String rawPath, String reason) {
        return Problem.of(ProblemType.BAD_PATH, reason).with("path", rawPath);
    }

    static Problem trailingSlash(String rawPath) {
        return badPath(rawPath, "the path ends with '/' (an empty last segment); name the resource without a "
                + "trailing slash");
    }

    static Problem noPolicy(String method, String rawPath) {
        return Problem.of(ProblemType.NO_POLICY, "no policy matches " + method + " " + rawPath)
                .with("path", rawPath);
    }

    static Problem stale(Policy policy, String scope, long token, long highest) {
        return stale(policy, scope, token, highest, false);
    }

    /** @param fromFloor whether the highest is a prefix floor an operator raised, not a write's token */
    static Problem stale(Policy policy, String scope, long token, long highest, boolean fromFloor) {
        Problem problem = Problem.of(ProblemType.STALE_TOKEN, fromFloor
                        ? "token " + token + " is " + (token == highest ? "equal to" : "below") + " the floor "
                        + highest + " an operator raised over scope '" + scope + "' (fence raise --prefix; see "
                        + "'fence floors'); lock tokens must now start above it"
                        : token == highest ? "token " + token + " was already accepted for scope '" + scope
                        + "', and this policy admits each token once (equal: reject): an earlier write with it "
                        + "(yours, even one that never landed, or an operator's raise) used it up; send a greater "
                        + "token (your lock's next)"
                        : "token " + token + " is below the highest token " + highest + " accepted for scope '"
                        + scope + "': a newer holder of the lock wrote with it, or an operator raised the scope to it")
                .with("policy", policy.name()).with("scope", scope).with("token", token).with("highest", highest);
        return fromFloor ? problem.with("floor", true) : problem;
    }

    static Problem tooFar(Policy policy, Fencing.Rule rule, String scope, long token, long highest) {
        if (highest < 0) {
            return Problem.of(ProblemType.TOKEN_TOO_FAR, "token " + token + " is above " + rule.firstTokenMax()
                            + ", the most a scope's first token may be (the policy's first-token-max), and scope '"
                            + scope + "' has no token yet; it was not accepted and did not raise the fence (a genuine"
                            + " first token this high: raise first-token-max)")
                    .with("policy", policy.name()).with("scope", scope).with("token", token)
                    .with("firstTokenMax", rule.firstTokenMax());
        }
        return Problem.of(ProblemType.TOKEN_TOO_FAR, "token " + token + " is more than "
                        + rule.maxAdvance() + " above the highest token " + highest + " of scope '" + scope
                        + "' (the policy's max-advance); it was not accepted and did not raise the fence")
                .with("policy", policy.name()).with("scope", scope).with("token", token)
                .with("highest", highest).with("maxAdvance", rule.maxAdvance());
    }

    static Problem unverified(Policy policy, String scope, long token, String kind, String reason) {
        return Problem.of(ProblemType.UNVERIFIED_TOKEN, "token " + token + " for scope '" + scope
                        + "' was not verified by the " + kind + " verifier (" + reason
                        + "); it was not accepted and did not raise the fence")
                .with("policy", policy.name()).with("scope", scope).with("token", token);
    }

    static Problem verifierUnavailable(String scope, String reason) {
        return unavailable(ProblemType.VERIFIER_UNAVAILABLE, "the token could not be verified,"
                + " nothing was written: " + reason, scope, 1);
    }

    static Problem storeUnavailable(String scope, String reason) {
        return unavailable(ProblemType.STORE_UNAVAILABLE, "the fence could not be decided, "
                + "nothing was written: " + reason, scope, 1);
    }

    /** The backend's own fence (the storage's) could not decide. */
    static Problem fenceUnavailable(String scope, String reason) {
        return unavailable(ProblemType.STORE_UNAVAILABLE, "the fence could not be decided, "
                + "nothing was written: " + reason, scope, 1);
    }

    /** A request forwarded without a token could not be sent: nothing reached the storage. */
    static Problem storageUnavailable(String scope, String reason) {
        return unavailable(ProblemType.STORAGE_ERROR, "the storage could not be reached, nothing was sent: "
                + reason, scope, 1);
    }

    /** The memory store holds as many scopes as it may: a write of a new scope waits for an operator. */
    static Problem scopeLimit(String scope, String reason) {
        return unavailable(ProblemType.SCOPE_LIMIT, reason + "; nothing was written, and writes of scopes the store"
                + " already holds go on. An operator raises the store's max-scopes or max-scope-memory (and the"
                + " heap), or retires scopes no writer uses any more (fence retire)", scope, 60);
    }

    static Problem scopeBusy(String scope, long waitedSeconds) {
        return unavailable(ProblemType.SCOPE_BUSY, "other writes of this scope held it for " + waitedSeconds
                + " s", scope, 1);
    }

    /** An earlier write of the scope has an unknown outcome and may still land. */
    static Problem quarantined(String scope, long closedNanos) {
        return unavailable(ProblemType.SCOPE_QUARANTINED, "an earlier write to this scope has an "
                + "unknown outcome and may still land; writes resume when the settle time has passed", scope,
                seconds(closedNanos));
    }

    /** A serialized scope right after start: a write of a previous run may still be in flight. */
    static Problem settlingAfterStart(Policy policy, String scope, long closedNanos, long settleSeconds,
                                      long upSeconds) {
        return unavailable(ProblemType.SCOPE_QUARANTINED, "the proxy started " + upSeconds
                + " s ago; serialized scopes of policy '" + policy.name() + "' open after its settle time ("
                + settleSeconds + " s) in case a write of a previous run is still in flight", scope,
                seconds(closedNanos));
    }

    static Problem shuttingDown(String scope) {
        return unavailable(ProblemType.SHUTTING_DOWN, "the proxy is stopping", scope, 1);
    }

    static Problem unknownOutcome(Policy policy, String scope, long token, String reason, long quarantineSeconds) {
        return Problem.of(ProblemType.UNKNOWN_OUTCOME, reason
                        + "; the write may or may not have been applied" + (quarantineSeconds > 0
                        ? "; the scope is quarantined for " + quarantineSeconds + " s" : ""))
                .with("policy", policy.name()).with("scope", scope).with("token", token);
    }

    private static Problem unavailable(ProblemType kind, String detail, String scope, long retryAfter) {
        return Problem.of(kind, detail).with("scope", scope).retryAfter(retryAfter);
    }

    /** Whole seconds, rounded up, at least 1: a {@code Retry-After}. */
    static long seconds(long nanos) {
        return Math.max(1, TimeUnit.NANOSECONDS.toSeconds(nanos + 999_999_999L));
    }
}
