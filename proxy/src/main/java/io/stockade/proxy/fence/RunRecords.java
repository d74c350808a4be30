package io.stockade.proxy.fence;

import java.time.Duration;
import java.util.Map;

/**
 * The registry of proxy runs a shared fence store (etcd, PostgreSQL) keeps beside the fences, so that a start can
 * tell whether a write of an earlier run may still be in flight ({@code io.stockade.proxy.store.runs.SharedRuns}
 * says how it is used). A record per run that has not stopped cleanly: created when the run registers, rewritten at
 * each heartbeat (its version rises), removed by a clean stop, and removed by a later run once a dead run's writes
 * can no longer land. Every call is one round trip to the store, within the store's timeout.
 */
public interface RunRecords {

    /**
     * A run's record.
     *
     * @param version rises at each heartbeat (etcd: the key's mod revision; PostgreSQL: a counter)
     * @param settle  the longest settle of the run's serialized backends: how long its writes may take to land
     */
    record Run(long version, Duration settle) {
    }

    /**
     * Whether the registry was ever started in this store: a run that knew of it registered. Without it, runs of a
     * version before the registry may have crashed unrecorded.
     */
    boolean exists() throws StoreUnavailableException;

    /** Every run recorded now, by id. */
    Map<String, Run> list() throws StoreUnavailableException;

    /** Creates this run's record or rewrites it (its version rises), and marks the registry as started. */
    void beat(String run, Duration settle) throws StoreUnavailableException;

    /** Removes this run's record: it stopped cleanly. */
    void remove(String run) throws StoreUnavailableException;

    /** Removes a dead run's record, only if it is still at {@code version} (it has not beaten since). */
    void removeIf(String run, long version) throws StoreUnavailableException;
}
