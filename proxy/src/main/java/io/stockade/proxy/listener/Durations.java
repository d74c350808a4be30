package io.stockade.proxy.listener;

import java.time.Duration;

/** Durations as the listener, the body bounds and the pipeline's timers take them. */
public final class Durations {
    private Durations() {
    }

    /**
     * {@code d} in nanoseconds, saturated at {@link Long#MAX_VALUE}: a policy file cannot hold a duration over a
     * day, and this keeps a model built otherwise from failing every request with an {@link ArithmeticException}.
     */
    public static long nanos(Duration d) {
        try {
            return d.toNanos();
        } catch (ArithmeticException tooLong) {
            return Long.MAX_VALUE;
        }
    }
}
