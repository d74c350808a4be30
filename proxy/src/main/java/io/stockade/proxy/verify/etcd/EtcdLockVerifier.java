package io.stockade.proxy.verify.etcd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.etcd.EtcdClients;
import io.stockade.proxy.verify.TokenVerifier;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Lease;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.lease.LeaseTimeToLiveResponse;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.LeaseOption;

/**
 * A token is genuine when it is the create revision of the key that holds the etcd lock named
 * {@code prefix + scope}. etcd's lock API (and the client SDK's etcd provider, which uses it) puts one key per
 * contender, {@code <lock name>/<lease id>}, and the holder is the key with the lowest create revision; that
 * revision is the holder's token. One range read (keys only, sorted by create revision, limit 1) answers it.
 * <p>
 * Nested lock names: the keys of lock {@code x/y} ({@code x/y/<lease id>}) lie under {@code x/} too. etcd's lock
 * takes them for earlier contenders of {@code x} (it asks for the lowest key under {@code x/} the same way), so
 * while the lowest key under {@code x/} is a nested one ({@code /} in what follows {@code x/}), every contender of
 * {@code x} waits and nobody holds {@code x}: the claim is refused. That is the lock's own answer, so no scan past
 * the first key is needed and the lookup stays one key whatever the number of nested locks.
 * <p>
 * Only the current holder's token is genuine: a queued contender cannot use its own revision before it holds the
 * lock, and a token no key ever had — an invented one — is refused. Any doubt (timeout, connection error) is
 * {@link Unavailable}, never a pass.
 * <p>
 * A genuine verdict carries how long the holder's lease remained ({@code LeaseTimeToLive} of the key's lease, a
 * second round trip), so a remembered verdict ends before the lease can.
 */
public final class EtcdLockVerifier implements TokenVerifier {
    private final Client client;
    private final KV kv;
    private final Lease leases;
    private final String prefix;
    private final Duration timeout;
    private volatile boolean closed;

    private EtcdLockVerifier(Client client, TokenVerification.Etcd config) {
        this.client = client;
        this.kv = client.getKVClient();
        this.leases = client.getLeaseClient();
        this.prefix = config.prefix();
        this.timeout = config.timeout();
    }

    /**
     * Connects lazily: while etcd is unreachable (or TLS or authentication fails) every verdict is
     * {@link Unavailable}, and the proxy starts.
     *
     * @param what the policy field the block comes from, to start messages with
     * @throws IOException when a TLS file or the password file cannot be read
     */
    public static EtcdLockVerifier open(TokenVerification.Etcd config, String what) throws IOException {
        return new EtcdLockVerifier(EtcdClients.open(config.endpoints(), config.timeout(), config.tls(),
                config.username(), config.password(), config.passwordFile(), what), config);
    }

    @Override
    public Verdict verify(Claim claim) {
        if (closed) {
            return new Unavailable("verifier closed");
        }
        String lock = prefix + claim.scope();
        GetOption holder = GetOption.builder()
                .isPrefix(true)
                .withSortField(GetOption.SortTarget.CREATE)
                .withSortOrder(GetOption.SortOrder.ASCEND)
                .withLimit(1)
                .withKeysOnly(true)
                .build();
        CompletableFuture<GetResponse> call = null;
        GetResponse response;
        long sent = System.nanoTime();
        try {
            call = kv.get(ByteSequence.from(lock + "/", StandardCharsets.UTF_8), holder);
            response = call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            return new Unavailable("etcd did not answer within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return new Unavailable("etcd: " + EtcdClients.describe(cause));
        } catch (InterruptedException e) {
            call.cancel(true);
            Thread.currentThread().interrupt();
            return new Unavailable("interrupted while waiting for etcd");
        } catch (RuntimeException e) {
            if (call != null) {
                call.cancel(true);
            }
            return new Unavailable("etcd client: " + e);
        }
        List<KeyValue> kvs = response.getKvs();
        if (kvs.isEmpty()) {
            return new Refused("nobody holds the etcd lock '" + lock + "'");
        }
        String first = kvs.get(0).getKey().toString(StandardCharsets.UTF_8);
        if (first.indexOf('/', lock.length() + 1) >= 0) {
            // a key of a nested lock (lock/x/<lease id>) is first: etcd's lock makes every contender of this
            // lock wait behind it, so nobody holds this one
            return new Refused("nobody holds the etcd lock '" + lock + "' (a nested lock comes first)");
        }
        long holderToken = kvs.get(0).getCreateRevision();
        if (holderToken != claim.token()) {
            // the holder's token stays out of the client's answer: a forger would send it back
            return new Refused("not the token of the holder of the etcd lock '" + lock + "'",
                    "the holder has token " + holderToken);
        }
        return Genuine.leaseLeft(sent, leaseLeft(kvs.get(0).getLease(), sent));
    }

    /**
     * How long the holder's lease {@code lease} remains, as etcd's {@code LeaseTimeToLive} reports it (whole
     * seconds, rounded down by etcd, so never more than what remains); {@link Genuine#UNKNOWN} for a key without a
     * lease; 0 (nothing to remember) when the lease is gone or etcd does not answer within the timeout left.
     */
    private long leaseLeft(long lease, long sent) {
        if (lease == 0) {
            return Genuine.UNKNOWN;
        }
        CompletableFuture<LeaseTimeToLiveResponse> call = null;
        try {
            call = leases.timeToLive(lease, LeaseOption.DEFAULT);
            long ttl = call.get(Math.max(1, sent + timeout.toNanos() - System.nanoTime()), TimeUnit.NANOSECONDS)
                    .getTTL();
            return ttl <= 0 ? 0 : TimeUnit.SECONDS.toNanos(ttl);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            if (call != null) {
                call.cancel(true);
            }
            return 0;
        }
    }

    @Override
    public String kind() {
        return "etcd";
    }

    @Override
    public void close() {
        closed = true;
        client.close();
    }
}
