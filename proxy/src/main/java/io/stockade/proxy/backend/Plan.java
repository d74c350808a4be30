package io.stockade.proxy.backend;

import java.util.List;
import java.util.Objects;

import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.token.FencingToken;

/**
 * What the proxy does with one request, decided by its backend ({@link Backend#plan}) before anything moves: a
 * request the storage is sent without a token (and why), a fenced write naming every scope it changes and the rule
 * its token is judged by, an observed write, or a refusal. The plan is the only decider of what is fenced: the
 * backend makes it from the policy's fencing read once at load ({@link Fencing}), and the pipeline handles it in one
 * exhaustive {@code switch} without reading the policy's fencing again; nothing reaches the storage by any other
 * way.
 * <p>
 * A backend plans from a closed table of the methods, sub-resources, parameters and headers it understands; a
 * request outside the table is a {@link Refuse}, never a {@link Forward}: a storage that reads a request
 * differently from the proxy would otherwise run a write nobody checked.
 */
public sealed interface Plan {

    /**
     * Sent to the storage without a token, for the reason {@code why}.
     *
     * @param scope  the request's scope (per-scope limits, the log)
     * @param why    why no token is asked for
     * @param action sends it and answers the client
     */
    record Forward(String scope, Unfenced why, Action action) implements Plan {
        public Forward {
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(why, "why");
            Objects.requireNonNull(action, "action");
        }

        /** A read (or a request the backend's table says changes nothing). */
        public Forward(String scope, Action action) {
            this(scope, Unfenced.READ, action);
        }
    }

    /** Why a {@link Forward} carries no token. */
    enum Unfenced {
        /** A read, or a request that changes nothing the fence guards. */
        READ,
        /** A write the policy does not fence: {@code mode: off}, or a method outside {@code fence.methods}. */
        NOT_FENCED,
        /** A write without a token that the policy lets through ({@code missing: allow}). */
        WITHOUT_TOKEN
    }

    /**
     * A write that changes every scope in {@code scopes} and nothing else; it takes effect only with a token the
     * fence admits on each of them ({@code mode: enforce}, a token present).
     *
     * @param scopes every scope the write changes, the request's own first (a WebDAV {@code MOVE} names two, an S3
     *               DeleteObjects one per key)
     * @param token  the request's token
     * @param rule   how the token is judged on each scope
     * @param keeper who keeps the fence of these scopes, and the write
     */
    record Write(List<String> scopes, long token, Fencing.Rule rule, Keeper keeper) implements Plan {
        public Write {
            scopes = List.copyOf(scopes);
            if (scopes.isEmpty()) {
                throw new IllegalArgumentException("a write names at least one scope");
            }
            if (scopes.size() > 1 && keeper instanceof Keeper.Conditional) {
                throw new IllegalArgumentException("a conditional write is conditional on one scope's version");
            }
            Objects.requireNonNull(rule, "rule");
            Objects.requireNonNull(keeper, "keeper");
        }

        /** The request's own scope. */
        @Override
        public String scope() {
            return scopes.getFirst();
        }
    }

    /**
     * {@code mode: observe}: the token is judged and the high-water mark kept as enforce would, and the request is
     * forwarded whatever the verdict; what enforce would have refused is counted and logged.
     *
     * @param scopes  every scope the write changes, the request's own first
     * @param token   the request's token as the backend found it (missing and malformed ones are forwarded too)
     * @param rule    how enforce would judge the token
     * @param keeper  who keeps the fence (a storage that keeps it observes the write itself)
     * @param forward sends the request as it is
     */
    record Observe(List<String> scopes, FencingToken.Parsed token, Fencing.Rule rule, Keeper keeper,
                   Action forward) implements Plan {
        public Observe {
            scopes = List.copyOf(scopes);
            if (scopes.isEmpty()) {
                throw new IllegalArgumentException("a write names at least one scope");
            }
            Objects.requireNonNull(token, "token");
            Objects.requireNonNull(rule, "rule");
            Objects.requireNonNull(keeper, "keeper");
            Objects.requireNonNull(forward, "forward");
        }

        /** The request's own scope. */
        @Override
        public String scope() {
            return scopes.getFirst();
        }
    }

    /**
     * Refused before the storage sees anything: no fence moves.
     *
     * @param scope   the request's scope as far as it was read (for the log), or {@code "-"}
     * @param problem the answer, in the vocabulary of {@code ProblemType}
     */
    record Refuse(String scope, Problem problem) implements Plan {
        public Refuse {
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(problem, "problem");
        }
    }

    /** The request's scope, whatever the plan. */
    default String scope() {
        return switch (this) {
            case Forward forward -> forward.scope();
            case Write write -> write.scope();
            case Observe observe -> observe.scope();
            case Refuse refuse -> refuse.scope();
        };
    }

    /** Sends a request to the storage and answers the client (or says what the pipeline must answer). */
    @FunctionalInterface
    interface Action {
        WriteResult run(Exchange exchange);
    }
}
