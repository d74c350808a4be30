package io.stockade.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/** Where the highest token of each scope is kept. Each store type is one record here. */
public sealed interface StoreConfig {

    /** The store's type as written in the policy file. */
    String type();

    /**
     * The token cache in front of the store ({@code store.cache}). Off for the memory store (its state is a map
     * already); on by default for networked stores.
     */
    default Cache cache() {
        return Cache.OFF;
    }

    /**
     * The token cache: the highest token seen per scope, so a stale token is refused without a round trip.
     *
     * @param enabled   whether the cache is used
     * @param maxScopes how many scopes it holds at most (least recently used are evicted)
     */
    record Cache(boolean enabled, long maxScopes) {
        public static final long DEFAULT_MAX_SCOPES = 1_000_000;
        public static final Cache OFF = new Cache(false, DEFAULT_MAX_SCOPES);
        public static final Cache DEFAULT = new Cache(true, DEFAULT_MAX_SCOPES);

        public Cache {
            if (maxScopes <= 0) {
                throw new IllegalArgumentException("maxScopes must be positive");
            }
        }
    }

    /**
     * Fence state in etcd (v3 API), shared by every proxy replica configured with the same endpoints and prefix.
     * Every accept is a compare-and-set transaction.
     *
     * @param endpoints    client URLs of the cluster's members
     * @param prefix       key prefix under which all fence state lives
     * @param timeout      deadline of each etcd call; past it the write is refused (503), never forwarded
     * @param username     etcd user, or {@code null}
     * @param password     the user's password, or {@code null} (see {@code passwordFile})
     * @param passwordFile a file whose first line is the password, or {@code null}
     * @param tls          client TLS, or {@code null} for none
     * @param cache        the token cache
     */
    record Etcd(List<URI> endpoints, String prefix, Duration timeout, @Nullable String username,
                @Nullable String password, @Nullable Path passwordFile, @Nullable ClientTls tls, Cache cache)
            implements StoreConfig {
        public static final String DEFAULT_PREFIX = "/stockade/fences/";
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
        /**
         * The shortest etcd deadline the loader takes (store and verifier): the client derives its retry delay
         * from it.
         */
        public static final Duration MIN_TIMEOUT = Duration.ofMillis(50);

        public Etcd {
            endpoints = List.copyOf(endpoints);
            if (endpoints.isEmpty()) {
                throw new IllegalArgumentException("at least one endpoint");
            }
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(cache, "cache");
            if (password != null && passwordFile != null) {
                throw new IllegalArgumentException("password and passwordFile exclude each other");
            }
        }

        @Override
        public String toString() {
            return "Etcd[endpoints=" + endpoints + ", prefix=" + prefix + ", timeout=" + timeout + ", username="
                    + username + ", password=" + (password == null ? "none" : "***") + ", passwordFile="
                    + passwordFile + ", tls=" + tls + ", cache=" + cache + "]";
        }

                /** An etcd store with defaults for everything but the endpoints. */
        public static Etcd of(List<URI> endpoints) {
            return new Etcd(endpoints, DEFAULT_PREFIX, DEFAULT_TIMEOUT, null, null, null, null, Cache.DEFAULT);
        }

        @Override
        public String type() {
            return "etcd";
        }
    }

    /**
     * Fence state in memory, made durable by an fsync'd journal in {@code journal} before any write is forwarded.
     *
     * @param journal            directory holding the journal segments (created if missing)
     * @param compactAfterBytes  a journal segment larger than this is compacted into a snapshot
     * @param healWithin         how long a journal that failed on I/O may keep retrying before {@code /health/live}
     *                           reports the replica DOWN (so that the platform restarts it)
     */
    record Memory(Path journal, long compactAfterBytes, long maxScopes, ScopeMemory maxScopeMemory,
                  Duration healWithin) implements StoreConfig {
        public static final long DEFAULT_COMPACT_AFTER_BYTES = 64L * 1024 * 1024;
        /** No bound on the count of scopes (the memory bound still applies). */
        public static final long UNLIMITED_SCOPES = Long.MAX_VALUE;
        public static final Duration DEFAULT_HEAL_WITHIN = Duration.ofSeconds(30);

        public Memory {
            Objects.requireNonNull(journal, "journal");
            Objects.requireNonNull(maxScopeMemory, "maxScopeMemory");
            Objects.requireNonNull(healWithin, "healWithin");
            if (compactAfterBytes <= 0) {
                throw new IllegalArgumentException("compactAfterBytes must be positive");
            }
            if (maxScopes < 1) {
                throw new IllegalArgumentException("maxScopes must be positive");
            }
        }

        /** A store with the default time to heal. */
        public Memory(Path journal, long compactAfterBytes, long maxScopes, ScopeMemory maxScopeMemory) {
            this(journal, compactAfterBytes, maxScopes, maxScopeMemory, DEFAULT_HEAL_WITHIN);
        }

        /** A store with the default bounds: any count of scopes within half of the heap. */
        public Memory(Path journal, long compactAfterBytes) {
            this(journal, compactAfterBytes, UNLIMITED_SCOPES, ScopeMemory.DEFAULT);
        }

        @Override
        public String type() {
            return "memory";
        }
    }

    /**
     * The most memory the memory store's scopes may take: a fixed number of bytes, or a share of the JVM's maximum
     * heap ({@code -Xmx}), resolved when the store opens.
     *
     * @param bytes   a fixed bound in bytes, or 0 when {@code percent} applies
     * @param percent a share of the maximum heap, 1..90, or 0 when {@code bytes} applies
     */
    record ScopeMemory(long bytes, int percent) {
        /** Half of the heap: the rest is for requests, buffers and the collector's headroom. */
        public static final ScopeMemory DEFAULT = new ScopeMemory(0, 50);
        /** What a share of the heap always leaves to the server itself (its classes, buffers, threads). */
        public static final long SERVER_RESERVE = 32L << 20;

        public ScopeMemory {
            if ((bytes > 0) == (percent > 0) || bytes < 0 || percent < 0 || percent > 90) {
                throw new IllegalArgumentException("give bytes or a percent of 1..90: " + bytes + ", " + percent);
            }
        }

        /**
         * The bound in bytes for a JVM whose maximum heap is {@code maxHeap}: the fixed bytes, or the share of the
         * heap less what the server itself needs ({@link #SERVER_RESERVE}), whichever is smaller.
         */
        public long resolve(long maxHeap) {
            return bytes > 0 ? bytes : Math.max(0, Math.min(maxHeap / 100 * percent, maxHeap - SERVER_RESERVE));
        }

        /** The heap in which this bound gives the scopes {@code scopeBytes}. */
        public long heapFor(long scopeBytes) {
            return bytes > 0 ? scopeBytes + SERVER_RESERVE
                    : Math.max(scopeBytes / percent * 100, scopeBytes + SERVER_RESERVE);
        }

        @Override
        public String toString() {
            return bytes > 0 ? Sizes.text(bytes) : percent + "%";
        }
    }

    /**
     * The {@code stockade_fences} table of a PostgreSQL database, shared by every proxy replica that names it.
     * Each admission is one committed transaction (durable on commit).
     *
     * @param datasource the connection pool
     * @param migrate    whether the proxy creates the table at start (otherwise it checks it exists)
     * @param cache      the token cache in front of the store
     */
    record Postgres(Datasource datasource, boolean migrate, Cache cache) implements StoreConfig {
        public Postgres {
            Objects.requireNonNull(datasource, "datasource");
            Objects.requireNonNull(cache, "cache");
        }

        /** A store with the default token cache. */
        public Postgres(Datasource datasource, boolean migrate) {
            this(datasource, migrate, Cache.DEFAULT);
        }

        @Override
        public String type() {
            return "postgres";
        }
    }
}
