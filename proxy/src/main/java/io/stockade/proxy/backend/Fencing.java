package io.stockade.proxy.backend;

import java.util.List;
import java.util.Objects;
import java.util.Set;

import io.stockade.policy.Policy;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.token.FencingToken;

/**
 * How one policy fences its writes, read from the policy once, at load: the one place that reads the policy's
 * fencing fields ({@code fence.methods}, {@code mode}, {@code missing}, {@code equal}, {@code max-advance}). A
 * backend's planner asks it which of its requests are writes (by method, for the backends whose table is methods;
 * S3's table is operations and never asks) and turns each write into its {@link Plan} with {@link #plan}; the
 * pipeline carries the plan out and reads none of these fields again (an ArchUnit rule keeps it so).
 */
public final class Fencing {
    private final String policy;
    private final String header;
    private final Set<String> methods;
    private final Policy.Mode mode;
    private final Policy.MissingToken missing;
    private final Rule rule;

    private Fencing(Policy policy) {
        Policy.Fence fence = policy.fence();
        this.policy = policy.name();
        this.header = fence.header();
        this.methods = fence.methods();
        this.mode = fence.mode();
        this.missing = fence.missing();
        this.rule = new Rule(fence, fence.equal() == Policy.EqualToken.ACCEPT);
    }

    /** The policy's fencing, read once. */
    public static Fencing of(Policy policy) {
        return new Fencing(policy);
    }

    /**
     * Whether a request of this method is a write of the policy's scope, for the backends whose closed table is
     * methods (file, http, postgres): the methods of {@code fence.methods}. S3's table is operations and never asks.
     */
    public boolean fencesMethod(String method) {
        return methods.contains(method);
    }

    /** The methods {@code fence.methods} names (for an {@code Allow} header). */
    public Set<String> methods() {
        return methods;
    }

    /** The header that carries the token. */
    public String header() {
        return header;
    }

    /**
     * Whether tokens are enforced (mode {@code enforce}): refused when missing, malformed, stale or forged. A
     * planner that requires more of a carrier of the token when it is enforced (S3's signed token) asks this.
     */
    public boolean enforced() {
        return mode == Policy.Mode.ENFORCE;
    }

    /** The rule a token is judged by on this policy's scopes. */
    public Rule rule() {
        return rule;
    }

    /**
     * The plan of a write of {@code scopes} with {@code token}, as the policy fences it: with mode {@code off} a
     * forward ({@link Plan.Unfenced#NOT_FENCED}); without a token and {@code missing: allow} a forward
     * ({@link Plan.Unfenced#WITHOUT_TOKEN}); in observe mode an {@link Plan.Observe}; else a malformed or missing
     * token is refused, and a token is a {@link Plan.Write} judged by {@code rule}.
     *
     * @param what    what the request does, for a client told it needs a token ({@code PUT}, {@code PutObject})
     * @param scopes  every scope the write changes, the request's own first
     * @param token   the request's token, as the backend found it
     * @param rule    the rule ({@link #rule()}, or {@link Rule#continuing()} for a later step of one write)
     * @param keeper  who keeps the fence of these scopes, and the write
     * @param forward sends the request without a token (mode off, observe, {@code missing: allow})
     */
    public Plan plan(String what, List<String> scopes, FencingToken.Parsed token, Rule rule, Keeper keeper,
                     Plan.Action forward) {
        String scope = scopes.getFirst();
        if (mode == Policy.Mode.OFF) {
            return new Plan.Forward(scope, Plan.Unfenced.NOT_FENCED, forward);
        }
        if (token instanceof FencingToken.Missing && missing == Policy.MissingToken.ALLOW) {
            return new Plan.Forward(scope, Plan.Unfenced.WITHOUT_TOKEN, forward);
        }
        if (mode == Policy.Mode.OBSERVE) {
            return new Plan.Observe(scopes, token, rule, keeper, forward);
        }
        return switch (token) {
            case FencingToken.Malformed malformed -> new Plan.Refuse(scope, Problem.of(ProblemType.MALFORMED_TOKEN,
                    malformed.reason()).with("policy", policy).with("scope", scope));
            case FencingToken.Missing absent -> new Plan.Refuse(scope, Problem.of(ProblemType.MISSING_TOKEN,
                    what + " is fenced by policy '" + policy + "': send the token of your lock in the " + header
                            + " header").with("policy", policy).with("scope", scope));
            case FencingToken.Present present -> new Plan.Write(scopes, present.value(), rule, keeper);
        };
    }

    /** {@link #plan} with the policy's own rule. */
    public Plan plan(String what, List<String> scopes, FencingToken.Parsed token, Keeper keeper,
                     Plan.Action forward) {
        return plan(what, scopes, token, rule, keeper, forward);
    }

    /**
     * How a token is judged against a scope's highest: whether an equal token is admitted, and how far it may jump
     * ({@code max-advance}).
     *
     * @param fence       the policy's fence block
     * @param acceptEqual whether a token equal to the highest is admitted
     */
    public record Rule(Policy.Fence fence, boolean acceptEqual) {
        public Rule {
            Objects.requireNonNull(fence, "fence");
        }

        /**
         * The rule for a later step of a write that started with the same token (an S3 upload's parts and its
         * completion): an equal token is admitted whatever {@code equal} says, since the step continues the write
         * its token was admitted for (with {@code equal: reject} the creation raised the highest to that token).
         */
        public Rule continuing() {
            return acceptEqual ? this : new Rule(fence, true);
        }

        /** Whether {@code token} jumps further over {@code highest} than {@code max-advance} allows. */
        public boolean tooFar(long token, long highest) {
            return fence.tooFar(token, highest);
        }

        /** The largest jump allowed ({@link Policy.Fence#UNLIMITED}: any), for messages and the database's check. */
        public long maxAdvance() {
            return fence.maxAdvance();
        }

        /** Whether {@code max-advance} bounds a jump at all. */
        public boolean bounded() {
            return fence.maxAdvance() != Policy.Fence.UNLIMITED;
        }

        /** The largest token a scope's first write may carry ({@code first-token-max}), for messages. */
        public long firstTokenMax() {
            return fence.firstTokenMax();
        }

        /** Whether {@link #tooFar} can hold for {@code token} at all (else the highest need not be read for it). */
        public boolean mayBeTooFar(long token) {
            return fence.mayBeTooFar(token);
        }
    }
}
