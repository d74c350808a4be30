package io.stockade.proxy.verify.cache;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;

/**
 * Remembers positive verdicts of a lock-service verifier per (scope, token) for a bounded time, so the lock
 * service is asked once per holder and scope, not on every write. Only {@link TokenVerifier.Genuine} is
 * remembered: a refusal or an outage is asked again next time (a lock may be granted a moment later).
 * <p>
 * What it costs: a remembered verdict outlives the lock by at most the ttl. That is no weaker than the fence
 * itself: a token that was genuine can never be inflated, and a newer holder's first write makes it stale.
 */
public final class RememberingVerifier implements TokenVerifier {
    private record Key(String scope, long token) {
    }

    private static final Genuine REMEMBERED = new Genuine(true);

    private final TokenVerifier verifier;
    private final Cache<Key, Boolean> genuine;

    private RememberingVerifier(TokenVerifier verifier, TokenVerification.Cache config) {
        this.verifier = verifier;
        this.genuine = Caffeine.newBuilder()
                .expireAfterWrite(config.ttl())
                .maximumSize(config.maxEntries())
                .executor(Runnable::run)
                .build();
    }

    /** {@code verifier} with the cache in front, or as it is when the cache is disabled. */
    public static TokenVerifier wrap(TokenVerifier verifier, TokenVerification.Cache config) {
        return config.enabled() ? new RememberingVerifier(verifier, config) : verifier;
    }

    @Override
    public Verdict verify(Claim claim) {
        Key key = new Key(claim.scope(), claim.token());
        if (genuine.getIfPresent(key) != null) {
            return REMEMBERED;
        }
        Verdict verdict = verifier.verify(claim);
        if (verdict instanceof Genuine) {
            genuine.put(key, Boolean.TRUE);
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
