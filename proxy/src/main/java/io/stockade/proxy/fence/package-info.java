/**
 * The fence: {@code FenceRule} (the stale rule), the store interface ({@code FenceStore}, {@code Advance},
 * {@code FenceState}), {@code FenceAdmin} and {@code ScopeGuard}.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.fence;

import org.jspecify.annotations.NullMarked;
