package io.stockade.proxy.backend.s3;

import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.StorageAnswer;
import io.stockade.proxy.backend.WriteResult;

import org.jspecify.annotations.Nullable;

/**
 * One key's entry in a DeleteObjects answer ({@code <Error><Key>..</Key><Code>..</Code><Message>..</Message>}): what
 * the conditional write of its tombstone came to, in the S3 code a refusal of a DeleteObject of that key gets. Each
 * entry says only what is known of that key: deleted, not deleted (and why), or an outcome the store left unknown.
 */
final class DeleteResults {
    private DeleteResults() {
    }

    /**
     * The {@code <Code>} and {@code <Message>} of a key that was not deleted (or whose outcome is unknown), or null
     * when its tombstone was written.
     */
    static @Nullable String error(WriteResult result, long token, Fencing.Rule rule) {
        return switch (result) {
            case WriteResult.Answered answered -> switch (StorageAnswer.of(answered.status())) {
                case WRITTEN -> null;
                case NOT_WRITTEN -> entry(answered.status() == 503 ? "SlowDown" : "InternalError", "the store "
                        + "answered " + answered.status() + "; the key was not deleted");
                case UNKNOWN -> entry("InternalError", "the store answered " + answered.status() + ", which does"
                        + " not say whether the key was deleted: read it, or delete it again");
            };
            case WriteResult.Stale stale -> entry("PreconditionFailed", token == stale.highest()
                    ? "fencing token " + token + " was already accepted for this object and the policy admits each "
                    + "token once (equal: reject); the key was not deleted"
                    : "fencing token " + token + " is below the highest token " + stale.highest() + " of this "
                    + "object; a newer holder owns it. The key was not deleted");
            case WriteResult.TooFar tooFar -> entry("TokenTooFar", "token " + token + " is more than "
                    + rule.maxAdvance() + " above the highest token " + tooFar.highest() + " of this object (the "
                    + "policy's max-advance); the key was not deleted and its fence did not move");
            case WriteResult.Refused refused -> entry(refused.problem().member(S3Problems.CODE) instanceof String code
                    ? code : "InvalidRequest", refused.problem().detail());
            case WriteResult.Unavailable unavailable -> entry("ServiceUnavailable", unavailable.reason()
                    + "; the key was not deleted");
            case WriteResult.Unknown unknown -> entry("InternalError", unknown.reason() + "; whether the key was "
                    + "deleted is unknown: read it, or delete it again");
        };
    }

    /**
     * Which of the keys not deleted the request is counted and logged as (the heaviest, the first of equals): an
     * unknown outcome, then a stale token (a writer that lost its lock), a jump past max-advance, a fence that could
     * not be read, the proxy's refusal, the store's.
     */
    static int weight(WriteResult result) {
        return switch (counted(result)) {
            case WriteResult.Unknown unknown -> 5;
            case WriteResult.Stale stale -> 4;
            case WriteResult.TooFar tooFar -> 3;
            case WriteResult.Unavailable unavailable -> 2;
            case WriteResult.Refused refused -> 1;
            case WriteResult.Answered answered -> 0;
        };
    }

    /** What a key's result is counted as: the store's answer that does not say (a 500) is an unknown outcome. */
    static WriteResult counted(WriteResult result) {
        return result instanceof WriteResult.Answered answered
                && StorageAnswer.of(answered.status()) == StorageAnswer.UNKNOWN
                ? StorageAnswer.failed(answered.status(), "") : result;
    }

    private static String entry(String code, String message) {
        return "<Code>" + code + "</Code><Message>" + S3Xml.escape(message) + "</Message>";
    }
}
