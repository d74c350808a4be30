package io.stockade.client;

import java.time.Duration;
import java.util.concurrent.TimeoutException;

/**
 * Hands out {@link Lease}s from one lock service. Built by {@link Leases#newBuilder()}. Thread-safe; close it to
 * release the leases it still holds, its client connections and its watchdog threads.
 */
public interface LeaseProvider extends AutoCloseable {

    /**
     * Acquires the lease {@code name}, waiting up to {@code timeout} while another holder has it.
     *
     * @param name    the lease (lock) name; fence the same scope in Stockade
     * @param ttl     how long the lease stays valid without renewal; the watchdog renews it at a fraction of this
     * @param timeout how long to wait for the lease
     * @return the lease, held and valid
     * @throws TimeoutException         if the lease was not acquired within {@code timeout}
     * @throws InterruptedException     if the calling thread was interrupted while waiting
     * @throws IllegalArgumentException if {@code name} is empty or the durations are not positive or break the
     *                                  renewal arithmetic (see {@link Leases.Builder#renewDeadline(double)})
     * @throws IllegalStateException    if the lock service failed (the cause says how)
     */
    Lease acquire(String name, Duration ttl, Duration timeout) throws TimeoutException, InterruptedException;

    /** Releases every lease still held (their listeners hear {@link LossReason#RELEASED}), stops the watchdog and
     *  closes the client. Idempotent. */
    @Override
    void close();
}
