/**
 * Fence-state operations for people and tools: {@link io.stockade.proxy.admin.FenceOperations} (show, list,
 * floors, export, import, raise, retire — none lowers a token — and reset, the operator's repair of a scope a forged
 * token took, refused while a lease on it may be valid), the {@code fence} command
 * ({@link io.stockade.proxy.admin.FenceCommand}) and the authenticated admin endpoints
 * ({@link io.stockade.proxy.admin.AdminEndpoint}). Depends on {@code fence}, {@code store} and {@code http}.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.admin;

import org.jspecify.annotations.NullMarked;
