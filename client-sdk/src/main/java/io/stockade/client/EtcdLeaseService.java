package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lease.LeaseKeepAliveResponse;
import io.etcd.jetcd.lock.LockResponse;

/**
 * etcd: an etcd lease (TTL in whole seconds, rounded up, so the server's TTL is never shorter than ours) and the
 * lock API, which puts the key {@code NAME/LEASE_ID} under the lease and waits until it has the lowest create
 * revision. Token: that key's create revision. Renewal: keep-alive, then a read that the key still exists with the
 * same create revision. Validity counts from a keep-alive sent once the lock is granted (one more round trip per
 * acquire), so a waiter that queued starts with its whole ttl.
 */
final class EtcdLeaseService implements LeaseService {

    private record Handle(long leaseId, ByteSequence key) {
    }

    /** The longest a single call may take (the first call on a cold gRPC channel takes about 2 s). */
    private static final Duration RPC_TIMEOUT = Duration.ofSeconds(10);
    private static final Duration MIN_LOCK_WAIT = Duration.ofSeconds(2);

    private final Client client;
    private final Ticker ticker;

    EtcdLeaseService(String[] endpoints, Ticker ticker) {
        // no keepalive pings without an open call: etcd's enforcement policy (PermitWithoutStream false) answers them
        // with GOAWAY ENHANCE_YOUR_CALM "too_many_pings" (as the proxy's client, EtcdClients)
        this.client = Client.builder().endpoints(endpoints).keepaliveWithoutCalls(false).build();
        this.ticker = ticker;
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        long deadline = ticker.read() + timeout.toNanos();
        long seconds = Math.max(1, (ttl.toNanos() + 999_999_999L) / 1_000_000_000L);
        long sent = ticker.read();
        long leaseId = get(client.getLeaseClient().grant(seconds), RPC_TIMEOUT).getID();
        // the timeout is for waiting on another holder; our own round trips always get a little time
        deadline = Math.max(deadline, ticker.read() + MIN_LOCK_WAIT.toNanos());
        boolean done = false;
        try {
            CompletableFuture<LockResponse> locking =
                    client.getLockClient().lock(ByteSequence.from(name, StandardCharsets.UTF_8), leaseId);
            long keepEvery = Math.max(TimeUnit.MILLISECONDS.toNanos(50), ttl.toNanos() / 3);
            while (true) {
                // while queued behind another holder, keep our lease (and our waiting key) alive
                long left = deadline - ticker.read();
                if (left <= 0) {
                    locking.cancel(true);
                    throw new TimeoutException("lease '" + name + "' is held by another holder; not acquired within "
                            + timeout);
                }
                try {
                    LockResponse locked = locking.get(Math.min(left, keepEvery), TimeUnit.NANOSECONDS);
                    ByteSequence key = locked.getKey();
                    List<KeyValue> kvs = get(client.getKVClient().get(key), Duration.ofSeconds(5)).getKvs();
                    if (kvs.isEmpty()) {
                        throw new IllegalStateException("lock key " + key + " vanished right after locking");
                    }
                    // validity counts from the grant: a keep-alive sent now renews the lease for a whole ttl. Counted
                    // from the grant request or a keep-alive sent while queued, a waiter granted late would start
                    // with a fraction of its ttl and lose the lease at its first late renewal on a loaded host
                    long s = ticker.read();
                    if (!keepAlive(leaseId, RPC_TIMEOUT)) {
                        throw new IllegalStateException("the lease of lock key " + key + " ended while it was"
                                + " queued");
                    }
                    sent = s;
                    done = true;
                    return new Grant(kvs.get(0).getCreateRevision(), sent, new Handle(leaseId, key));
                } catch (TimeoutException stillWaiting) {
                    long s = ticker.read();
                    keepAlive(leaseId, RPC_TIMEOUT);
                    sent = s;
                }
            }
        } finally {
            if (!done) {
                revokeQuietly(leaseId);
            }
        }
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        Handle h = (Handle) grant.handle();
        long deadline = ticker.read() + timeout.toNanos();
        if (!keepAlive(h.leaseId(), timeout)) {
            return Renewal.REVOKED;
        }
        GetResponse r = get(client.getKVClient().get(h.key()), remainingOrMin(deadline));
        if (r.getKvs().isEmpty()) {
            return Renewal.REVOKED;
        }
        return r.getKvs().get(0).getCreateRevision() == grant.token() ? Renewal.RENEWED : Renewal.REFUSED;
    }

    @Override
    public void release(String name, String holder, Grant grant) throws Exception {
        Handle h = (Handle) grant.handle();
        // revoking the lease deletes the lock key with it; only our own lease id is touched
        try {
            get(client.getLeaseClient().revoke(h.leaseId()), Duration.ofSeconds(5));
        } catch (ExecutionException e) {
            if (!notFound(e)) {
                throw e;
            }
            // the lease expired (or was revoked) already, and its key went with it: nothing left to release
        }
    }

    @Override
    public void close() {
        client.close();
    }

    /** False if etcd no longer knows the lease. */
    private boolean keepAlive(long leaseId, Duration timeout) throws Exception {
        try {
            LeaseKeepAliveResponse r = get(client.getLeaseClient().keepAliveOnce(leaseId), timeout);
            return r.getTTL() > 0;
        } catch (ExecutionException e) {
            if (notFound(e)) {
                return false;
            }
            throw e;
        }
    }

    /** Whether etcd answered that it does not know the lease. */
    private static boolean notFound(ExecutionException e) {
        String m = String.valueOf(e.getCause());
        return m.contains("NOT_FOUND") || m.contains("lease not found");
    }

    private void revokeQuietly(long leaseId) {
        try {
            get(client.getLeaseClient().revoke(leaseId), Duration.ofSeconds(5));
        } catch (Exception ignored) {
            // it expires on its own
        }
    }

    private Duration remainingOrMin(long deadline) {
        return Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(100), deadline - ticker.read()));
    }

    private static <T> T get(CompletableFuture<T> f, Duration timeout) throws Exception {
        try {
            return f.get(Math.max(1, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            f.cancel(true);
            throw new TimeoutException("etcd did not answer within " + timeout);
        }
    }
}
