package io.stockade.client;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;

/**
 * One lock service, as the watchdog sees it. Implementations: etcd, Kubernetes Lease, PostgreSQL, Redis, ZooKeeper,
 * Consul, DynamoDB.
 */
interface LeaseService extends AutoCloseable {

    /**
     * A lease granted by the service.
     *
     * @param token   the fencing token
     * @param sentAt  ticker reading taken just before the granting request was sent (validity starts here)
     * @param handle  what the service needs to renew and release it ({@link #NO_HANDLE} when it needs
     *                nothing)
     */
    record Grant(long token, long sentAt, Object handle) {
        /** The handle of a service that needs none (PostgreSQL's: a renewal names the lease, holder and token). */
        static final Object NO_HANDLE = new Object();
    }

    /** The answer to a renewal. */
    enum Renewal { RENEWED, REFUSED, REVOKED }

    /**
     * How long a service that polls for a held lock waits between tries: a tenth of the TTL, 20 ms to 500 ms (a
     * lease that frees up is taken soon after, and a waiting holder does not hammer the service).
     */
    static long pollNanos(Duration ttl) {
        return Math.max(TimeUnit.MILLISECONDS.toNanos(20), Math.min(ttl.toNanos() / 10,
                TimeUnit.MILLISECONDS.toNanos(500)));
    }

    /** Acquires {@code name}, waiting up to {@code timeout}; the grant's {@code sentAt} starts its validity. */
    Grant acquire(String name, String holder, Duration ttl, Duration timeout)
            throws TimeoutException, InterruptedException, Exception;

    /**
     * Renews by compare-and-set on the token, answering within {@code timeout} or throwing.
     * Throws on transport errors (the caller reports {@link LossReason#CONNECTION_LOST}).
     */
    Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception;

    /** Releases, guarded by the token (never releases a later holder's lease). */
    void release(String name, String holder, Grant grant) throws Exception;

    /**
     * For a service that learns of a loss between renewals (a ZooKeeper session's watcher): calls {@code onLoss}
     * with the reason and a detail when it does, once the lease is held. Default: nothing to watch, the watchdog's
     * renewals find every loss.
     */
    default void watch(Grant grant, BiConsumer<LossReason, String> onLoss) {
    }

    @Override
    void close();
}
