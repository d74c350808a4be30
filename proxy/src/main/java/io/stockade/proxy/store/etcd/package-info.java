/**
 * The etcd fence store ({@code store: {type: etcd}}): the high-water marks of every scope in an etcd v3 cluster,
 * shared by any number of proxy replicas. Each accept is a compare-and-set transaction on mod revisions; every
 * doubt (deadline, lost leader, connection error, unknown outcome) is a
 * {@link io.stockade.proxy.fence.StoreUnavailableException}, so the engine answers 503 and forwards nothing.
 * Implements {@link io.stockade.proxy.fence.FenceAdmin} (floors, retire, export) too. Depends on jetcd-core 0.8.5
 * (0.8.6 needs Netty 4.2, which Helidon does not use), on {@code fence} and on {@code etcd} (the client,
 * shared with the etcd verifier).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.store.etcd;

import org.jspecify.annotations.NullMarked;
