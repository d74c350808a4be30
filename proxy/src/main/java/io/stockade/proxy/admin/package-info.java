/**
 * Fence-state operations for people and tools: {@link io.stockade.proxy.admin.FenceOperations} (show, list,
 * floors, export, import, raise, retire — none lowers a token), the {@code fence} command
 * ({@link io.stockade.proxy.admin.FenceCommand}) and the authenticated admin endpoints
 * ({@link io.stockade.proxy.admin.AdminEndpoint}). Depends on {@code fence}, {@code store} and {@code http}.
 */
package io.stockade.proxy.admin;
