package io.stockade.policy;

import java.nio.file.Path;
import java.util.Objects;

/** Where the highest token of each scope is kept. A later store (etcd) adds a record here. */
public sealed interface StoreConfig {

    /** The store's type as written in the policy file. */
    String type();

    /**
     * Fence state in memory, made durable by an fsync'd journal in {@code journal} before any write is forwarded.
     *
     * @param journal            directory holding the journal segments (created if missing)
     * @param compactAfterBytes  a journal segment larger than this is compacted into a snapshot
     */
    record Memory(Path journal, long compactAfterBytes) implements StoreConfig {
        public static final long DEFAULT_COMPACT_AFTER_BYTES = 64L * 1024 * 1024;

        public Memory {
            Objects.requireNonNull(journal, "journal");
            if (compactAfterBytes <= 0) {
                throw new IllegalArgumentException("compactAfterBytes must be positive");
            }
        }

        @Override
        public String type() {
            return "memory";
        }
    }

    /**
     * The {@code stockade_fences} table of a PostgreSQL database, shared by every proxy replica that names it.
     * Each admission is one committed transaction (durable on commit).
     *
     * @param datasource the connection pool
     * @param migrate    whether the proxy creates the table at start (otherwise it checks it exists)
     */
    record Postgres(Datasource datasource, boolean migrate) implements StoreConfig {
        public Postgres {
            Objects.requireNonNull(datasource, "datasource");
        }

        @Override
        public String type() {
            return "postgres";
        }
    }
}
