package io.stockade.conformance.lease;

import java.io.IOException;

/**
 * A lease held by one writer: its fencing token and a local deadline on the monotonic clock
 * ({@link System#nanoTime()}), measured from before the request that obtained or renewed it, so the writer's view
 * always expires no later than the lock service's.
 */
public interface Lease extends AutoCloseable {

    /** The fencing token: higher than any token handed out before this lease. */
    long token();

    /** The {@link System#nanoTime()} reading after which the holder must assume it has lost the lease. */
    long deadlineNanos();

    /** Extends the lease by compare-and-set on the token; false if it was lost (expired, taken by another). */
    boolean renew() throws IOException;

    /** Gives the lease up. Idempotent; never throws. */
    @Override
    void close();
}
