package io.stockade.proxy.harness;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.kv.GetResponse;

/**
 * Where the harness's writers take their leases: a token for a resource, held for a while. The counter hands out
 * rising tokens at once and never takes them back; {@link #etcd} takes real locks from an etcd cluster, which expire
 * with their lease while a holder pauses (a zombie the lock service, and a verifier asking it, knows to be one).
 */
interface Leases extends AutoCloseable {
    /** A held lease: its token, and when the holder must stop trusting it ({@link System#nanoTime}). */
    record Lease(String scope, long token, long validUntilNanos, Runnable release) {
    }

    /** A lease on {@code scope}, or null when none could be had in time (the lock service cut off, contended). */
    Lease acquire(String scope) throws InterruptedException;

    @Override
    default void close() {
    }

    /** Rising tokens per resource from a counter, never expiring. */
    static Leases counter(List<String> scopes) {
        Map<String, AtomicLong> tokens = new ConcurrentHashMap<>();
        scopes.forEach(s -> tokens.put(s, new AtomicLong()));
        return scope -> new Lease(scope, tokens.get(scope).incrementAndGet(), Long.MAX_VALUE, () -> { });
    }

    /**
     * etcd's lock API on a lease of {@code ttl}, the lock named {@code prefix + "docs/" + scope}; the token is the
     * create revision of the key holding the lock (what {@code verify: {kind: etcd}} admits). Each call waits at most
     * {@code wait}; a lock not had in time gives its lease back (or lets it expire, when the service is cut off).
     */
    static Leases etcd(String endpoints, String prefix, Duration ttl, Duration wait) {
        Client client = Client.builder().endpoints(endpoints.split(",")).build();
        return new Leases() {
            @Override
            public Lease acquire(String scope) throws InterruptedException {
                long start = System.nanoTime();
                long leaseId;
                try {
                    leaseId = client.getLeaseClient().grant(ttl.toSeconds()).get(wait.toMillis(),
                            TimeUnit.MILLISECONDS).getID();
                } catch (InterruptedException e) {
                    throw e;
                } catch (Exception e) {
                    return null;
                }
                Runnable revoke = () -> client.getLeaseClient().revoke(leaseId);
                try {
                    ByteSequence name = ByteSequence.from(prefix + "docs/" + scope, StandardCharsets.UTF_8);
                    ByteSequence key = client.getLockClient().lock(name, leaseId).get(wait.toMillis(),
                            TimeUnit.MILLISECONDS).getKey();
                    GetResponse held = client.getKVClient().get(key).get(wait.toMillis(), TimeUnit.MILLISECONDS);
                    if (held.getKvs().isEmpty()) {
                        revoke.run();
                        return null; // expired before it was read: not held
                    }
                    long token = held.getKvs().getFirst().getCreateRevision();
                    // trusted for half the TTL from the grant's start: the holder's own point of no return
                    return new Lease(scope, token, start + ttl.toNanos() / 2, revoke);
                } catch (InterruptedException e) {
                    revoke.run();
                    throw e;
                } catch (Exception e) {
                    revoke.run();
                    return null;
                }
            }

            @Override
            public void close() {
                client.close();
            }
        };
    }
}
