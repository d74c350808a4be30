package io.stockade.proxy.backend;

import java.io.IOException;
import java.util.Optional;

/**
 * What one backend type says of a policy it serves, from the policy alone (before, and without, opening anything):
 * how to open it, where the fence of its writes is kept, and the scopes its requests can name. Each backend package
 * has one ({@code HttpType}, {@code FileType}, {@code PostgresType}, {@code S3Type}); {@code BackendTypes.of}
 * (package {@code registry}) is the one place that maps a policy's backend to its type, so a new backend is its
 * package plus that one line. The admin API and the offline {@code fence} command route fence-state operations by
 * {@link #fencePlace()} and {@link #scopes()}; the memory store shares its bound by
 * {@link ScopeShape#sharePrefix()}.
 */
public interface BackendType {

    /** Opens the backend: pools, clients, the checks it makes at start. */
    Backend open() throws IOException;

    /** Where the fence of this policy's writes is kept. */
    FencePlace fencePlace();

    /** The scopes this policy's requests can name. */
    ScopeShape scopes();

    /**
     * Why a fence reset (lowering a scope's token, {@code fence reset}) cannot take effect for this policy through
     * its {@link #fencePlace()} alone (the backend keeps the token somewhere else too), with what to do instead;
     * empty when it can (the default).
     */
    default Optional<String> resetRefusal() {
        return Optional.empty();
    }
}
