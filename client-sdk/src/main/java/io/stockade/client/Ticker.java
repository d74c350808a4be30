package io.stockade.client;

/**
 * A source of monotonic time in nanoseconds, like {@link System#nanoTime()}: only differences between two readings
 * mean anything. Leases measure their validity with it, never with wall-clock time, which can jump.
 *
 * <p>Tests inject their own ticker and advance it by hand instead of sleeping.
 */
@FunctionalInterface
public interface Ticker {

    /**
     * Reads the ticker.
     *
     * @return nanoseconds since an arbitrary fixed origin; never decreases
     */
    long read();

    /**
     * The ticker of this JVM: {@link System#nanoTime()} ({@code CLOCK_MONOTONIC} on Linux, which keeps counting while
     * the process is stopped, so a paused holder sees how long it was away).
     *
     * @return the system ticker
     */
    static Ticker system() {
        return System::nanoTime;
    }
}
