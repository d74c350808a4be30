package io.stockade.proxy.verify.cache;

import java.time.Duration;
import java.util.function.LongSupplier;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;

/**
 * Remembers positive verdicts of a lock-service verifier per (scope, token) for a bounded time, so the lock
 * service is asked once per holder and scope, not on every write. Only {@link TokenVerifier.Genuine} is
 * remembered: a refusal or an outage is asked again next time (a lock may be granted a moment later).
 * <p>
 * A remembered verdict never outlives the lease it verified: it expires, on the proxy's monotonic clock, at
 * {@code sent + min(ttl, left - margin)}, where {@code sent} is when the lookup was <em>sent</em> (not when the
 * answer came) and {@code left} is the lease's remaining validity as the lock service reported it
 * ({@link TokenVerifier.Genuine#leftNanos()}); {@code margin} is {@link #margin(long) 5 % of left, at least
 * 100 ms}, for the rate difference of two clocks and the lock service's own rounding. A lock service that reports
 * no remaining time (ZooKeeper, Consul, DynamoDB, an etcd key without a lease, a Redis key without an expiry) gets
 * {@code sent + min(ttl, }{@link #UNKNOWN_BOUND 1 s}{@code )}: the old holder's token is refused at most 1 s after
 * its lock ended. A verdict whose window already closed when the answer arrived is not remembered.
 */
public final class RememberingVerifier implements TokenVerifier {
    /** How long a verdict is remembered when the lock service reports no remaining time for the lease. */
    public static final Duration UNKNOWN_BOUND = Duration.ofSeconds(1);
    /** The smallest margin taken off a reported remaining time. */
    public static final Duration MIN_MARGIN = Duration.ofMillis(100);

    private record Key(String scope, long token) {
    }

    private static final Genuine REMEMBERED = new Genuine(true);

    private final TokenVerifier verifier;
    private final LongSupplier nanoTime;
    private final long ttlNanos;
    private final Cache<Key, Long> genuine; // the value: when the verdict expires, on nanoTime

    RememberingVerifier(TokenVerifier verifier, TokenVerification.Cache config, LongSupplier nanoTime) {
        this.verifier = verifier;
        this.nanoTime = nanoTime;
        this.ttlNanos = config.ttl().toNanos();
        this.genuine = Caffeine.newBuilder()
                .expireAfter(new Expiry<Key, Long>() {
                    @Override
                    public long expireAfterCreate(Key key, Long expires, long now) {
                        return Math.max(0, expires - now);
                    }

                    @Override
                    public long expireAfterUpdate(Key key, Long expires, long now, long current) {
                        return Math.max(0, expires - now);
                    }

                    @Override
                    public long expireAfterRead(Key key, Long expires, long now, long current) {
                        return current;
                    }
                })
                .ticker(nanoTime::getAsLong)
                .maximumSize(config.maxEntries())
                .executor(Runnable::run)
                .build();
    }

    /** {@code verifier} with the cache in front, or as it is when the cache is disabled. */
    public static TokenVerifier wrap(TokenVerifier verifier, TokenVerification.Cache config) {
        return config.enabled() ? new RememberingVerifier(verifier, config, System::nanoTime) : verifier;
    }

    /** What is taken off a reported remaining time {@code leftNanos}: 5 % of it, at least {@link #MIN_MARGIN}. */
    static long margin(long leftNanos) {
        return Math.max(MIN_MARGIN.toNanos(), leftNanos / 20);
    }

    /** When a verdict expires, on the monotonic clock: {@code sent + min(ttl, left - margin)} (see the class). */
    long expires(Genuine verdict) {
        long window = verdict.leftNanos() == Genuine.UNKNOWN ? UNKNOWN_BOUND.toNanos()
                : verdict.leftNanos() - margin(verdict.leftNanos());
        return verdict.sentNanos() + Math.min(ttlNanos, window);
    }

    @Override
    public Verdict verify(Claim claim) {
        Key key = new Key(claim.scope(), claim.token());
        Long expires = genuine.getIfPresent(key);
        if (expires != null && expires - nanoTime.getAsLong() > 0) {
            return REMEMBERED;
        }
        Verdict verdict = verifier.verify(claim);
        if (verdict instanceof Genuine g && !g.remembered()) {
            long until = expires(g);
            if (until - nanoTime.getAsLong() > 0) {
                genuine.put(key, until);
            }
        }
        return verdict;
    }

    @Override
    public String kind() {
        return verifier.kind();
    }

    @Override
    public void close() {
        verifier.close();
        genuine.invalidateAll();
    }
}
