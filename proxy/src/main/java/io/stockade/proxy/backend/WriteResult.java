package io.stockade.proxy.backend;

import io.stockade.proxy.problem.Problem;

import org.jspecify.annotations.Nullable;

/** What a request sent to the storage (a fenced write, or a forward) came to. */
public sealed interface WriteResult {

    /**
     * The backend refused the request before anything of it reached the storage (a body it could not read, a
     * value the storage cannot hold exactly). Nothing was sent to the client; the engine answers the problem in
     * the backend's shape and counts it as the refusal it is, never as accepted.
     *
     * @param problem the answer
     */
    record Refused(Problem problem) implements WriteResult {
    }

    /**
     * The backend answered the client (the upstream's own answer, success or not, or a backend error such as
     * 502 when nothing was sent).
     *
     * @param status     the status sent
     * @param notApplied a part of the write the answer reports as not applied (an S3 DeleteObjects answers 200 with
     *                   an entry per key), which the request is counted and logged as; null when there is none
     */
    record Answered(int status, @Nullable NotApplied notApplied) implements WriteResult {
        /** An answer that reports no part of the write as not applied. */
        public Answered(int status) {
            this(status, null);
        }
    }

    /**
     * A part of a write its answer reports as not applied, and why: the key of an S3 DeleteObjects that a stale
     * token, an unknown outcome or the store's refusal left in place.
     *
     * @param scope  the part's scope
     * @param result what its write came to ({@link Answered}: the storage refused it)
     */
    record NotApplied(String scope, WriteResult result) {
    }

    /**
     * The write may or may not have been applied (a timeout after the request was sent, a body cut off after bytes
     * of it reached the storage, a storage error that does not say). Nothing was sent to the client; the engine
     * answers 504 and, when the write may still land, quarantines the scope of a serialized write.
     *
     * @param reason       what happened, for the client and the log
     * @param mayLandLater whether any of it may still reach the storage (false once the storage has answered)
     */
    record Unknown(String reason, boolean mayLandLater) implements WriteResult {
        /** An outcome unknown because the storage did not answer: what was sent may still land. */
        public Unknown(String reason) {
            this(reason, true);
        }
    }

    /**
     * The storage showed that a higher token was accepted (an atomic backend's re-check). Nothing was sent to the
     * client; the engine answers 409.
     *
     * @param highest the highest token known
     */
    record Stale(long highest) implements WriteResult {
    }

    /**
     * The storage refused the token because it jumps further over the highest than the policy's
     * {@code fence.max-advance}; nothing was written and nothing was sent. The engine answers 422.
     *
     * @param highest the highest token known
     */
    record TooFar(long highest) implements WriteResult {
    }

    /**
     * The fence could not be decided (the storage holding it is unreachable); nothing was written and nothing
     * was sent to the client. The engine answers 503 with {@code Retry-After}.
     *
     * @param reason what happened, for the client and the log
     */
    record Unavailable(String reason) implements WriteResult {
    }
}
