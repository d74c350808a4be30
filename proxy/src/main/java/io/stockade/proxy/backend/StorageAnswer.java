package io.stockade.proxy.backend;

/**
 * What a storage's answer to a write the fence admitted says about that write, read in one place for every backend
 * that relays the storage's status (http, s3), never from a guess about how the storage behaves: a proxy that
 * passes on a 500 tells its client "not written" where the storage wrote, or the reverse.
 * <table>
 *   <caption>the status, and what the answer may claim</caption>
 *   <tr><td>1xx, 2xx, 303</td><td>{@link #WRITTEN}</td></tr>
 *   <tr><td>3xx but 303, 4xx; 501, 503, 505, 507</td><td>{@link #NOT_WRITTEN}: the storage refused it (a redirect, a
 *   refusal, a failed condition; a method it does not implement, "unavailable" (RFC 9110 section 15.6.4, S3's
 *   {@code SlowDown}, which a client retries), a version it does not take, no room to store it (RFC 4918 section
 *   11.5))</td></tr>
 *   <tr><td>any other 5xx (500, 502, 504, ...)</td><td>{@link #UNKNOWN}: the storage, or a gateway in front of it,
 *   failed while handling it (S3 documents {@code 500 InternalError} as "the request may or may not have
 *   succeeded"); answered 504 unknown-outcome, not relayed, so the client cannot take it for a refusal</td></tr>
 * </table>
 */
public enum StorageAnswer {
    WRITTEN, NOT_WRITTEN, UNKNOWN;

    /** What {@code status}, the storage's answer to an admitted write, says about it. */
    public static StorageAnswer of(int status) {
        if (status < 300 || status == 303) {
            return WRITTEN; // 303 See Other: the request was processed, its result is elsewhere (RFC 9110 15.4.4)
        }
        return switch (status) {
            case 501, 503, 505, 507 -> NOT_WRITTEN;
            default -> status < 500 ? NOT_WRITTEN : UNKNOWN;
        };
    }

    /**
     * The result of an admitted write the storage answered with {@code status} and failed: outcome unknown, but
     * nothing of it can land later (the storage has answered), so no scope needs quarantine.
     */
    public static WriteResult.Unknown failed(int status, String what) {
        return new WriteResult.Unknown("the storage answered " + status + (what == null || what.isEmpty() ? ""
                : " " + what) + ", an error that does not say whether the write was applied", false);
    }
}
