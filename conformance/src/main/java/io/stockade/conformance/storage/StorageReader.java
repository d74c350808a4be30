package io.stockade.conformance.storage;

import java.io.IOException;

import org.jspecify.annotations.Nullable;

/**
 * Reads a resource straight from the storage, never through the proxy: the suite only believes what the storage
 * itself holds.
 */
public interface StorageReader extends AutoCloseable {

    /** The value stored under {@code key}, or null when the resource is absent. */
    @Nullable String read(String key) throws IOException;

    /** What is read, for reports, e.g. {@code directory /srv/data}. */
    String describe();

    @Override
    default void close() {
    }
}
