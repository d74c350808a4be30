package io.stockade.proxy.fence;

/**
 * The one rule of the contract, written once: a write with token {@code t} on a scope whose highest accepted token
 * is {@code h} takes effect only if {@code t > h}, or {@code t == h} where the policy accepts an equal token (the
 * same holder writing again). Every store, backend and the pipeline ask this class; none writes the comparison
 * out on its own.
 */
public final class FenceRule {
    /** The highest token of a scope no token was ever accepted for. */
    public static final long NONE = -1;

    private FenceRule() {
    }

    /**
     * Whether {@code token} is admitted over {@code highest}.
     *
     * @param highest     the scope's highest token, {@link #NONE} for none
     * @param acceptEqual whether a token equal to the highest is admitted
     */
    public static boolean admits(long token, long highest, boolean acceptEqual) {
        return token > highest || (token == highest && acceptEqual);
    }

    /** Whether {@code token} is refused as stale over {@code highest}: the negation of {@link #admits}. */
    public static boolean stale(long token, long highest, boolean acceptEqual) {
        return !admits(token, highest, acceptEqual);
    }

    /** Whether admitting {@code token} raises the highest (a new holder takes over). */
    public static boolean raises(long token, long highest) {
        return token > highest;
    }
}
