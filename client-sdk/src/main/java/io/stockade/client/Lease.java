package io.stockade.client;

import java.time.Duration;
import java.util.Optional;

/**
 * A lease held from a lock service, with the fencing token that came with it. Use it in try-with-resources:
 *
 * <pre>{@code
 * try (Lease lease = leases.acquire("reports/2026-09", Duration.ofSeconds(15), Duration.ofSeconds(30))) {
 *     lease.addListener((l, reason) -> worker.interrupt());     // cancel in-flight work on loss
 *     for (Chunk c : chunks) {
 *         lease.checkpoint(Duration.ofSeconds(2));              // the point of no return before each write
 *         storage.put(c, lease.token());                        // through Stockade, with Fencing-Token
 *     }
 * }
 * }</pre>
 *
 * <p>Validity is measured on the monotonic {@link Ticker} and starts when the acquiring (or renewing) request was
 * <em>sent</em>, so the whole round trip is subtracted: the lock service cannot have started the TTL earlier. A
 * watchdog renews the lease by compare-and-set on its token; a refused, failed or late renewal ends the lease at
 * once, and every listener hears of it.
 *
 * <p>A lease is only a promise. The token is what makes it safe: storage that checks it (Stockade) rejects the
 * writes of a holder that no longer holds the lease, however late they arrive.
 *
 * <p>Implementations are thread-safe.
 */
public interface Lease extends AutoCloseable {

    /**
     * The name the lease was acquired under.
     *
     * @return the lease name
     */
    String name();

    /**
     * The fencing token: a number that is higher for every later acquisition of this name. Send it as the
     * {@code Fencing-Token} header. What it is depends on the provider (see {@link Leases}).
     *
     * @return the token, 0..2^63-1
     */
    long token();

    /**
     * The validity left on the monotonic clock.
     *
     * @return the time until the lease expires unless renewed; {@link Duration#ZERO} once lost or released
     */
    Duration remaining();

    /**
     * Whether the lease is still held. Noticing here that the validity has run out ends the lease
     * ({@link LossReason#EXPIRED}) and calls the listeners.
     *
     * @return {@code true} if not lost, not released and not expired
     */
    boolean isValid();

    /**
     * The point of no return: call it right before each write. Returns if at least {@code budget} of validity
     * remains; choose the budget to cover the write's whole duration plus a margin for clock-rate error.
     *
     * @param budget the validity a write needs; not negative
     * @throws LeaseLostException if the lease is lost, released, or less than {@code budget} remains
     * @throws IllegalArgumentException if {@code budget} is negative
     */
    void checkpoint(Duration budget);

    /**
     * Why the lease ended, if it did.
     *
     * @return the reason, or empty while the lease is held
     */
    Optional<LossReason> lossReason();

    /**
     * Adds a listener that is called exactly once when the lease ends, with the reason. If the lease has already
     * ended, the listener is called at once, on the calling thread.
     *
     * @param listener the listener
     * @throws NullPointerException if {@code listener} is null
     */
    void addListener(LeaseListener listener);

    /**
     * Releases the lease (if it is still held) and stops its watchdog. Idempotent: later calls do nothing. The
     * listeners hear {@link LossReason#RELEASED} unless the lease had ended before. A release that cannot reach the
     * lock service is logged; the lease then expires there on its own.
     */
    @Override
    void close();
}
