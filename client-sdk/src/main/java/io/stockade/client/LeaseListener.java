package io.stockade.client;

/**
 * Hears that a lease ended. Registered with {@link Lease#addListener(LeaseListener)}; called exactly once per lease,
 * also when added after the end. Use it to cancel in-flight work: interrupt a worker thread, cancel a future,
 * close a connection.
 *
 * <p>Listeners run on the thread that noticed the end (the watchdog, or a caller of {@link Lease#isValid()},
 * {@link Lease#checkpoint(java.time.Duration)} or {@link Lease#close()}); keep them short and do not write from
 * them. An exception thrown by a listener is logged and does not stop the others.
 */
@FunctionalInterface
public interface LeaseListener {

    /**
     * The lease ended.
     *
     * @param lease  the lease that ended
     * @param reason why it ended
     */
    void leaseLost(Lease lease, LossReason reason);
}
