package io.stockade.client;

/** Why a {@link Lease} ended. Every lease ends exactly once, with exactly one of these reasons. */
public enum LossReason {
    /**
     * Its validity ran out on the local monotonic clock before a renewal succeeded, or the watchdog ran later than
     * the renew deadline (the process was paused, starved or stopped).
     */
    EXPIRED,
    /** The lock service says the lease no longer exists (revoked, lock key deleted, Lease object deleted). */
    REVOKED,
    /** A renewal could not reach the lock service or got no answer in time; the holder can no longer be sure. */
    CONNECTION_LOST,
    /** The lock service answered a renewal's compare-and-set with "not yours": another holder or token is there. */
    RENEWAL_REFUSED,
    /** The holder released it with {@link Lease#close()}. */
    RELEASED
}
