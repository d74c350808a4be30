package io.stockade.proxy.fence;

/**
 * A store that keeps its scopes in memory holds as many as it is allowed to (the memory store's
 * {@code max-scopes} or {@code max-scope-memory}): a write that would add one more is refused (503 with
 * {@code Retry-After}) rather than evict a fence, which would let a zombie write. Writes of scopes the store
 * already holds go on.
 */
public final class ScopeLimitException extends StoreUnavailableException {
    public ScopeLimitException(String message) {
        super(message);
    }
}
