package io.stockade.proxy.fence;

import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * Keeps the highest token accepted for each scope. The one rule every store honours: a scope's highest token
 * never goes down, through any call, restart or crash.
 * <p>
 * {@link #advance} returns only once the new highest token is durable: the caller forwards the write after it.
 * Every method throws {@link StoreUnavailableException} when it cannot be sure of its answer; the caller then
 * refuses the write (fail closed).
 */
public interface FenceStore extends AutoCloseable {

    /**
     * Admits {@code token} for {@code scope} if it is higher than the highest, or equal to it and
     * {@code acceptEqual}; raises the highest to {@code token} when higher. Durable before it returns.
     *
     * @return {@link Advance.Accepted} with the state before the call, or {@link Advance.Stale} with the highest
     */
    Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException;

    /** The current state of a scope, if any token was ever accepted for it. */
    Optional<FenceState> get(String scope) throws StoreUnavailableException;

    /**
     * Records the upstream version (an ETag) written under {@code token}, only if {@code token} is still the
     * scope's highest. {@code null} forgets the version (unknown: the next writer reads it afresh). Durable
     * before it returns.
     *
     * @return whether it was recorded; {@code false} means a higher token was accepted meanwhile
     */
    boolean recordVersion(String scope, long token, @Nullable String version) throws StoreUnavailableException;

    /**
     * Why this store failed and has not healed within the time it is given (the memory store's journal after an
     * I/O error, past {@code heal-within}), for {@code /health/live}: DOWN, so that the platform restarts the
     * replica. Empty while the store works, or is failed and still healing; a store whose outage a restart cannot
     * mend (a database or etcd that is down) is the readiness probe's, never the liveness probe's.
     */
    default Optional<String> unhealed() {
        return Optional.empty();
    }

    /** Releases files, connections and threads. */
    @Override
    void close();
}
