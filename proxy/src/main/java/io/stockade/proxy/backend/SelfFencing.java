package io.stockade.proxy.backend;

/**
 * A backend whose storage checks the token itself, in the same step as the write: a PostgreSQL transaction that
 * bumps a fence row and runs the statements, an S3 conditional PUT that carries the token in the object's
 * metadata. The engine's fence store is not consulted for such a policy; the storage holds the high-water mark.
 * <p>
 * The engine still parses the token, answers missing and malformed tokens, and maps the result to an answer and
 * a metric; it holds no scope (these backends are of the atomic class).
 */
public interface SelfFencing extends Backend {

    /**
     * Checks the token against the storage's high-water mark and writes, as one atomic step. The backend also
     * honours the policy's {@code fence.maxAdvance} (refusing a token that jumps too far), which only it can
     * judge atomically.
     *
     * @param token       the writer's token
     * @param acceptEqual whether a token equal to the highest is accepted
     * @return {@link WriteResult.Answered} when the backend answered (the write took effect, or the storage
     * refused it for its own reasons), {@link WriteResult.Stale} when a higher token holds the scope (nothing
     * was written), {@link WriteResult.Unavailable} when the fence could not be decided (nothing was written),
     * {@link WriteResult.Unknown} when the outcome is unknown
     */
    WriteResult fencedWrite(Exchange exchange, long token, boolean acceptEqual);

    /**
     * {@code mode: observe}: runs the write without enforcing the token, keeps the high-water mark as enforce
     * would (never lowering it), and tells whether enforce would have refused it.
     *
     * @return the backend's verdict and what the write came to
     */
    Observed observe(Exchange exchange, long token, boolean acceptEqual);

    /**
     * For {@code /health/ready}: why the storage that keeps the fence cannot be reached now, asked within the
     * backend's own timeout; empty when it can, or when the backend cannot tell without a write (the default).
     */
    default java.util.Optional<String> unreachable() {
        return java.util.Optional.empty();
    }

    /**
     * What an observed write came to.
     *
     * @param wouldReject whether enforce mode would have refused the token
     * @param highest     the highest token before this write (-1 when none)
     * @param result      the write's result, as for {@link #fencedWrite}
     */
    record Observed(boolean wouldReject, long highest, WriteResult result) {
    }
}
