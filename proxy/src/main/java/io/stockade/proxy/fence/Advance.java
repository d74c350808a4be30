package io.stockade.proxy.fence;

/** The answer of {@link FenceStore#advance}. */
public sealed interface Advance {

    /**
     * The token was admitted.
     *
     * @param previous the state before (token -1 and version {@code null} for a scope never seen)
     */
    record Accepted(FenceState previous) implements Advance {
        /** Whether this accept raised the highest token (a new holder took over). */
        public boolean raised(long token) {
            return token > previous.token();
        }
    }

    /**
     * The token was refused: {@code highest} was already accepted.
     *
     * @param highest   the scope's highest token
     * @param fromFloor whether the highest is a prefix floor's (raised by an operator) rather than a write's; a
     *                  store that cannot tell says false
     */
    record Stale(long highest, boolean fromFloor) implements Advance {
        public Stale(long highest) {
            this(highest, false);
        }
    }
}
