/**
 * The {@code postgres} fence store: {@code FenceStore} over the table {@code stockade_fences}, so that several proxy
 * replicas in front of an HTTP or file backend share one high-water mark per scope (the shared-store class).
 *
 * <h2>Design</h2>
 * <ul>
 *   <li><b>One statement per call.</b> {@code advance} calls {@code stockade_advance(scope, token, accept_equal)}, a
 *   PL/pgSQL function that locks the scope's row ({@code SELECT ... FOR UPDATE}, or inserts it), compares, raises
 *   the token (forgetting the recorded version) and answers the state before. Autocommit: the answer comes after
 *   the commit, so it is durable as the server's commits are.</li>
 *   <li><b>Linearizable per scope.</b> The row lock orders concurrent admissions of a scope across every replica;
 *   the read after the lock sees the latest committed token (read committed, new snapshot per statement).</li>
 *   <li><b>Fail closed.</b> Every {@code SQLException}, including a pool timeout ({@code connect-timeout}) and a
 *   statement timeout, becomes {@code StoreUnavailableException}: the engine answers 503 and forwards nothing.</li>
 *   <li><b>Fence-state operations.</b> Implements {@code FenceAdmin}: prefix floors in {@code stockade_floors},
 *   read by {@code stockade_advance} (and the backend's {@code stockade_fence}) after the table lock, raised by
 *   {@code stockade_raise_floor} under an EXCLUSIVE table lock so no decision misses a committed floor; retire is
 *   one {@code DELETE ... WHERE token <= stockade_floor_of(scope)}; activity is {@code updated_at}. The same
 *   operations serve a postgres backend's own fence ({@code fence: table}, the same table and floors its
 *   {@code stockade_fence} reads): {@code PostgresFenceStore.over} runs them on the backend's pool, each call's
 *   connection bounded by a network timeout (that pool has no socket timeout), and leaves the pool open.</li>
 *   <li><b>What it does not give.</b> The store is consulted before the write; the write then travels from the
 *   proxy to the storage. Another replica that admits a higher token meanwhile does not wait for that write, so
 *   with a non-atomic backend a write admitted earlier can land after a later holder's write (the check-to-write
 *   transit window). See the guarantee matrix in the README.</li>
 * </ul>
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.store.postgres;

import org.jspecify.annotations.NullMarked;
