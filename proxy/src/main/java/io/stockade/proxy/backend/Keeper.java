package io.stockade.proxy.backend;

/**
 * Who keeps the fence of a write's scopes, and how the write is made conditional on it: the three classes of the
 * guarantee matrix. The pipeline switches on it exhaustively ({@code FencedWrite.run}).
 */
public sealed interface Keeper {

    /**
     * <em>Serialized</em>: the proxy's fence store keeps the high-water mark. The engine holds every scope of the
     * write (in a fixed order), admits the token on each durably, then calls {@code write}; an unknown outcome
     * quarantines the scopes for the backend's {@link Backend#settle()}. Safe with one proxy replica per scope.
     */
    record Serialized(StoreWrite write) implements Keeper {
    }

    /**
     * <em>Atomic</em>, fenced by the store: the engine admits the token in the fence store without holding the
     * scope, and {@code write} makes the storage's write conditional on the version recorded under it
     * ({@link Admission#previous()}), re-checking the store on a conflict.
     */
    record Conditional(StoreWrite write) implements Keeper {
    }

    /**
     * A step of a write that changes nothing a reader sees by itself (an S3 upload's part, or its abort): the
     * engine verifies and admits the token in the fence store, as for any write, without holding the scope (parts
     * of one upload go up side by side), then calls {@code write}. What the step prepares becomes visible only
     * through a later step the fence holds (the upload's completion), so a step that lands late changes nothing.
     */
    record Step(StoreWrite write) implements Keeper {
    }

    /**
     * <em>Atomic</em>, fenced by the storage itself: the storage checks the token in the same step as the write (a
     * PostgreSQL transaction bumping a fence row, an S3 conditional PUT with the token in the object's metadata).
     * The engine does not consult its fence store.
     */
    record InStorage(StorageWrite write) implements Keeper {
    }

    /** A write whose token the fence store admitted. */
    @FunctionalInterface
    interface StoreWrite {
        /**
         * Writes, the fence store having admitted the token.
         *
         * @return what happened; unless it is {@link WriteResult.Answered}, the engine answers the client
         */
        WriteResult write(Exchange exchange, Admission admission);
    }

    /** A write whose storage keeps its fence. */
    interface StorageWrite {
        /**
         * Checks the token against the storage's high-water mark and writes, as one atomic step, judging it by the
         * plan's {@code rule} on every scope the plan names (its {@code max-advance} only the storage can judge
         * atomically).
         *
         * @return {@link WriteResult.Answered} when the write took effect (or the storage refused it for its own
         * reasons, answered), {@link WriteResult.Stale} when a higher token holds the scope (nothing was written),
         * {@link WriteResult.Unavailable} when the fence could not be decided, {@link WriteResult.Unknown} when the
         * outcome is unknown, {@link WriteResult.Refused} when the backend refused it (nothing was written)
         */
        WriteResult write(Exchange exchange, long token, Fencing.Rule rule);

        /**
         * {@code mode: observe}: runs the write without enforcing the token, keeps the high-water mark as enforce
         * would (never lowering it), and tells whether enforce would have refused it by {@code rule}.
         */
        Observed observe(Exchange exchange, long token, Fencing.Rule rule);
    }

    /**
     * What an observed write came to.
     *
     * @param wouldReject whether enforce mode would have refused the token
     * @param highest     the highest token before this write (-1 when none)
     * @param result      the write's result, as for {@link StorageWrite#write}
     */
    record Observed(boolean wouldReject, long highest, WriteResult result) {
    }
}
