package io.stockade.proxy.store.cache;

import java.util.Optional;
import java.util.concurrent.atomic.LongAdder;

import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.RemovalCause;
import org.jspecify.annotations.Nullable;

/**
 * A {@link FenceStore} in front of another that remembers the highest token it has seen per scope (bounded, least
 * recently used evicted) and refuses a token below it — or equal to it where equal tokens are refused — without
 * asking the store. Everything else goes to the store, which stays the authority.
 * <p>
 * Why this is safe: a remembered value was the scope's highest token at some moment (the store answered it), and
 * a scope's highest token never goes down, so a token below it is stale now, whatever happened since (other
 * replicas, floors, retirements: a retired scope is covered by a floor at least as high). The cached value is only
 * ever raised ({@code max}). An eviction only forgets: the next request for that scope goes to the store, so an
 * eviction can never turn a stale write into an accepted one. An equal token with {@code acceptEqual} always goes
 * to the store: only the store knows whether the token is still the highest.
 */
public final class CachingFenceStore implements FenceStore {
    private final FenceStore store;
    private final Cache<String, Long> highest;
    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder evictions = new LongAdder();

    public CachingFenceStore(FenceStore store, long maxScopes) {
        this.store = store;
        this.highest = Caffeine.newBuilder()
                .maximumSize(maxScopes)
                .removalListener((@Nullable String k, @Nullable Long v, RemovalCause cause) -> {
                    if (cause.wasEvicted()) {
                        evictions.increment();
                    }
                })
                .executor(Runnable::run)
                .build();
    }

    /** The store behind the cache (the fence-state operations use it directly). */
    public FenceStore delegate() {
        return store;
    }

    @Override
    public Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException {
        Long cached = highest.getIfPresent(scope);
        if (cached != null && FenceRule.stale(token, cached, acceptEqual)) {
            hits.increment();
            return new Advance.Stale(cached);
        }
        misses.increment();
        Advance answer = store.advance(scope, token, acceptEqual);
        switch (answer) {
            case Advance.Accepted a -> remember(scope, Math.max(token, a.previous().token()));
            // A floor's highest is not kept: the store's answer says it is a floor's, the cache's could not.
            case Advance.Stale s when s.fromFloor() -> { }
            case Advance.Stale s -> remember(scope, s.highest());
        }
        return answer;
    }

    @Override
    public Optional<FenceState> get(String scope) throws StoreUnavailableException {
        Optional<FenceState> state = store.get(scope);
        state.ifPresent(s -> remember(scope, s.token()));
        return state;
    }

    @Override
    public boolean recordVersion(String scope, long token, @Nullable String version) throws StoreUnavailableException {
        return store.recordVersion(scope, token, version);
    }

    private void remember(String scope, long token) {
        if (token >= 0) {
            highest.asMap().merge(scope, token, Math::max);
        }
    }

    /** Stale tokens refused from the cache, without a store round trip. */
    public long hits() {
        return hits.sum();
    }

    /** Decisions the store made (the cache could not refuse the token). */
    public long misses() {
        return misses.sum();
    }

    /** Scopes forgotten to keep within the size bound. */
    public long evictions() {
        return evictions.sum();
    }

    /** Scopes remembered now (approximate). */
    public long size() {
        return highest.estimatedSize();
    }

    /**
     * Forgets what it remembers of a scope: after an operator's reset lowered its token (the one change that breaks
     * "never goes down"), so that the scope's next writes are judged by the store.
     */
    public void forget(String scope) {
        highest.invalidate(scope);
    }

    @Override
    public Optional<String> unhealed() {
        return store.unhealed();
    }

    @Override
    public void close() {
        store.close();
    }
}
