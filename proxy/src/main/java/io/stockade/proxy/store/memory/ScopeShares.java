package io.stockade.proxy.store.memory;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.LongAdder;

import org.jspecify.annotations.Nullable;

/**
 * Each policy's share of the memory store's scope bound, so that no client of one policy can fill the store for the
 * others (issue 46, item 5). A share is the scopes that start with a policy's literal scope prefix (the longest
 * prefix a scope starts with wins; policies with one prefix share one). Its cap: the policy's
 * {@code limits.max-scopes} when it sets one; otherwise, when the store has two shares or more, {@value #PERCENT}% of
 * the store's {@code max-scopes} (when set) and of its {@code max-scope-memory}, so the other policies keep the rest.
 * A scope no share's prefix starts with counts against the store's bound only.
 * <p>
 * The counts are kept as scopes are added and retired; they are counted afresh from the store when the shares are
 * set (at start and at each reload). Concurrent writes of new scopes may each pass the check together and go over
 * by as many as there are of them, as the store's own bound does: the bound is on memory, not a fence.
 */
final class ScopeShares {
    /** The default cap of a share, in percent of the store's bound, with two shares or more. */
    static final int PERCENT = 80;
    static final ScopeShares NONE = new ScopeShares(List.of(), 0, 0);

    /**
     * What a share is given.
     *
     * @param prefix    the literal prefix its scopes start with (not empty)
     * @param policies  the policies whose scope template starts with it
     * @param maxScopes the policies' {@code limits.max-scopes} (the least of them), or {@link Long#MAX_VALUE}
     */
    record Claim(String prefix, List<String> policies, long maxScopes) {
    }

    private final List<Claim> claims;
    private final long[] maxScopes;
    private final long[] maxBytes;
    private final LongAdder[] scopes;
    private final LongAdder[] bytes;

    /**
     * @param storeMaxScopes the store's {@code max-scopes} ({@link Long#MAX_VALUE}: none)
     * @param storeMaxBytes  the store's {@code max-scope-memory}, resolved
     */
    ScopeShares(List<Claim> claims, long storeMaxScopes, long storeMaxBytes) {
        List<Claim> sorted = new ArrayList<>(claims);
        sorted.sort(Comparator.comparingInt((Claim c) -> c.prefix().length()).reversed());
        this.claims = List.copyOf(sorted);
        int n = sorted.size();
        this.maxScopes = new long[n];
        this.maxBytes = new long[n];
        this.scopes = new LongAdder[n];
        this.bytes = new LongAdder[n];
        for (int i = 0; i < n; i++) {
            Claim c = sorted.get(i);
            boolean shared = n >= 2;
            maxScopes[i] = c.maxScopes() != Long.MAX_VALUE ? c.maxScopes()
                    : shared && storeMaxScopes != Long.MAX_VALUE ? share(storeMaxScopes) : Long.MAX_VALUE;
            maxBytes[i] = c.maxScopes() == Long.MAX_VALUE && shared ? share(storeMaxBytes) : Long.MAX_VALUE;
            scopes[i] = new LongAdder();
            bytes[i] = new LongAdder();
        }
    }

    /** {@value #PERCENT} % of a bound, without overflow. */
    private static long share(long bound) {
        return bound / 100 * PERCENT + bound % 100 * PERCENT / 100;
    }

    /** The share a scope counts against, or -1. */
    private int indexOf(String scope) {
        for (int i = 0; i < claims.size(); i++) {
            if (scope.startsWith(claims.get(i).prefix())) {
                return i;
            }
        }
        return -1;
    }

    /** A scope of {@code cost} bytes was added ({@code sign} 1) or removed (-1). */
    void counted(String scope, long cost, int sign) {
        int i = indexOf(scope);
        if (i >= 0) {
            scopes[i].add(sign);
            bytes[i].add(sign * cost);
        }
    }

    /** Why a new scope of {@code cost} bytes may not be added, or null when its share has room. */
    @Nullable String refusal(String scope, long cost) {
        int i = indexOf(scope);
        if (i < 0) {
            return null;
        }
        Claim c = claims.get(i);
        long held = scopes[i].sum();
        long heap = bytes[i].sum();
        if (held < maxScopes[i] && heap + cost <= maxBytes[i]) {
            return null;
        }
        String who = c.policies().size() == 1 ? "policy '" + c.policies().getFirst() + "'"
                : "policies " + c.policies();
        String cap = c.maxScopes() != Long.MAX_VALUE ? "its limits.max-scopes (" + c.maxScopes() + ")"
                : "its share of the store's bound (" + PERCENT + " % of max-scopes and max-scope-memory, so that"
                + " the other policies keep the rest)";
        return "the memory store holds " + held + " scopes of " + who + " (scope prefix '" + c.prefix() + "', " + heap
                + " bytes), " + cap + "; a write of a new scope of it is refused rather than forget a fence, and the"
                + " other policies keep their room";
    }

    /** How many scopes each share holds now, by prefix (tests, logs). */
    long held(String prefix) {
        for (int i = 0; i < claims.size(); i++) {
            if (claims.get(i).prefix().equals(prefix)) {
                return scopes[i].sum();
            }
        }
        return -1;
    }

    /** Whether no share has a cap (one policy without {@code limits.max-scopes}): nothing to count or check. */
    boolean unbounded() {
        for (int i = 0; i < claims.size(); i++) {
            if (maxScopes[i] != Long.MAX_VALUE || maxBytes[i] != Long.MAX_VALUE) {
                return false;
            }
        }
        return true;
    }
}
