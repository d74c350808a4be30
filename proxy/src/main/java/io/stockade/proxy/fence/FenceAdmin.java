package io.stockade.proxy.fence;

import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

import org.jspecify.annotations.Nullable;

/**
 * Operations on fence state for people and tools (the {@code fence} command, the admin endpoints), next to the
 * request path's {@link FenceStore}. A store that offers them implements both interfaces.
 * <p>
 * One method lowers a token, on purpose: {@link #reset}, the operator's repair of a scope a forged token took
 * (the admin API's {@code fence reset}, which decides first that no holder's lease on the scope is valid:
 * docs/admin-api.md). Every other keeps tokens from going down: {@link #raise} and {@link #raiseFloor} keep the
 * maximum of what is stored and what is given, and {@link #retire} removes only a scope that a prefix floor already
 * covers, so its effective highest token cannot go down by removing it.
 * <p>
 * A <em>prefix floor</em> acts as a token accepted on every scope that starts with the prefix, existing or not:
 * a scope's effective highest token is the maximum of its own token and every floor whose prefix it starts with
 * ({@link FenceStore#advance} honours it). The empty prefix covers every scope.
 */
public interface FenceAdmin {

    /**
     * One scope as stored (its own token, not raised by floors).
     *
     * @param scope    the scope
     * @param token    its highest accepted token
     * @param version  the upstream version recorded under it, or {@code null}
     * @param activity an ordering key for "most recently active": higher is more recent; 0 when the store cannot
     *                 tell (see {@link #listsByActivity})
     */
    record ScopeEntry(String scope, long token, @Nullable String version, long activity) {
    }

    /** A prefix floor. */
    record Floor(String prefix, long token) {
        public boolean covers(String scope) {
            return scope.startsWith(prefix);
        }
    }

    /** What {@link #retire} did. */
    enum Retired {
        /** Removed; a floor at or above its token covers it. */
        RETIRED,
        /** No such scope. */
        NOT_FOUND,
        /** Refused: no floor at or above the scope's token covers it, so removing it would let lower tokens in. */
        NOT_COVERED
    }

    /** The scope as stored, if any token was ever accepted for it (and it was not retired). */
    Optional<ScopeEntry> scope(String scope) throws StoreUnavailableException;

    /**
     * Scopes starting with {@code prefix}, at most {@code limit}, most recently active first when
     * {@link #listsByActivity}, else in an order the store chooses.
     */
    List<ScopeEntry> scopes(String prefix, int limit) throws StoreUnavailableException;

    /** Whether {@link #scopes} orders by recent activity. */
    boolean listsByActivity();

    /** Every scope, for an export. Not a snapshot: scopes changing meanwhile appear with either state. */
    void forEachScope(Consumer<ScopeEntry> sink) throws StoreUnavailableException;

    /** Every prefix floor. */
    List<Floor> floors() throws StoreUnavailableException;

    /**
     * Raises {@code scope} to at least {@code token} (creating it), as if that token had been accepted.
     *
     * @return the scope's token afterwards: {@code max(stored, token)}
     */
    long raise(String scope, long token) throws StoreUnavailableException;

    /**
     * Raises the floor of {@code prefix} to at least {@code token}.
     *
     * @return the floor afterwards: {@code max(stored, token)}
     */
    long raiseFloor(String prefix, long token) throws StoreUnavailableException;

    /** Removes a scope only if a floor at or above its token covers it; see {@link Retired}. */
    Retired retire(String scope) throws StoreUnavailableException;

    /**
     * Lowers {@code scope}'s own token from {@code expected} to {@code token}, only if it is still
     * {@code expected} (a compare-and-set: a write that raised it meanwhile wins). Durable before it returns; the
     * recorded version is forgotten. Floors are not looked at: the caller checks them.
     *
     * @return the scope's token before: {@code expected} when it was lowered, another token when it had changed,
     *         -1 when the scope is not stored
     */
    long reset(String scope, long expected, long token) throws StoreUnavailableException;

    /** The highest floor covering {@code scope} among {@code floors}, or -1. */
    static long floorOf(List<Floor> floors, String scope) {
        long max = -1;
        for (Floor f : floors) {
            if (f.token() > max && f.covers(scope)) {
                max = f.token();
            }
        }
        return max;
    }
}
