package io.stockade.client;

import java.io.Serial;
import java.time.Duration;

/**
 * Thrown when a write must not start: the lease is lost, or less validity remains than the budget the write needs
 * (the point of no return has passed). Unchecked, so it passes through lambdas and HTTP client code unchanged.
 */
public final class LeaseLostException extends RuntimeException {

    @Serial
    private static final long serialVersionUID = 1L;

    private final transient LossReason reason;
    private final transient Duration remaining;

    LeaseLostException(String message, LossReason reason, Duration remaining) {
        super(message);
        this.reason = reason;
        this.remaining = remaining;
    }

    /**
     * Why the write was refused. {@link LossReason#EXPIRED} also stands for "still valid, but for less than the
     * budget": the lease will have expired before the write can land, so it counts as expired for this write.
     *
     * @return the reason
     */
    public LossReason reason() {
        return reason;
    }

    /**
     * The validity that remained when the write was refused.
     *
     * @return zero for a lost lease; otherwise the (too short) time left
     */
    public Duration remaining() {
        return remaining;
    }
}
