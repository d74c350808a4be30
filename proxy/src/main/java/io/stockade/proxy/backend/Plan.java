package io.stockade.proxy.backend;

import java.util.List;
import java.util.Objects;

import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.token.FencingToken;

/**
 * What the proxy does with one request, decided by its backend ({@link Backend#plan}) before anything moves: a
 * request the storage is sent without a token, a fenced write naming every scope it changes, or a refusal. The
 * pipeline handles the plan in one exhaustive {@code switch}; nothing reaches the storage by any other way.
 * <p>
 * A backend plans from a closed table of the methods, sub-resources, parameters and headers it understands; a
 * request outside the table is a {@link Refuse}, never a {@link Forward}: a storage that reads a request
 * differently from the proxy would otherwise run a write nobody checked.
 */
public sealed interface Plan {

    /**
     * Sent to the storage without a token: a read, or a request the policy leaves unfenced (a method it does not
     * fence, an upload step that changes nothing visible until it is completed).
     *
     * @param scope  the request's scope (per-scope limits, the log)
     * @param action sends it and answers the client
     */
    record Forward(String scope, Action action) implements Plan {
        public Forward {
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(action, "action");
        }
    }

    /**
     * A write that changes every scope in {@code scopes} and nothing else; it takes effect only with a token the
     * fence admits on each of them.
     *
     * @param scopes   every scope the write changes, the request's own first (a WebDAV {@code MOVE} names two)
     * @param token    the request's token as the backend found it (the policy's header, or where the backend's
     *                 clients can carry it)
     * @param keeper   who keeps the fence of these scopes, and the write
     * @param unfenced sends the request without a token, for a policy that forwards it anyway ({@code observe},
     *                 {@code mode: off}, {@code missing: allow})
     */
    record Write(List<String> scopes, FencingToken.Parsed token, Keeper keeper, Action unfenced) implements Plan {
        public Write {
            scopes = List.copyOf(scopes);
            if (scopes.isEmpty()) {
                throw new IllegalArgumentException("a write names at least one scope");
            }
            if (scopes.size() > 1 && !(keeper instanceof Keeper.Serialized)) {
                throw new IllegalArgumentException("only the serialized class fences a write of several scopes");
            }
            Objects.requireNonNull(token, "token");
            Objects.requireNonNull(keeper, "keeper");
            Objects.requireNonNull(unfenced, "unfenced");
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
            case Refuse refuse -> refuse.scope();
        };
    }

    /** Sends a request to the storage and answers the client (or says what the pipeline must answer). */
    @FunctionalInterface
    interface Action {
        WriteResult run(Exchange exchange);
    }
}
