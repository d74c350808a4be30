/**
 * The token cache: a {@link io.stockade.proxy.fence.FenceStore} decorator (Caffeine, bounded) that refuses stale
 * tokens without a store round trip. Only ever raised; an eviction only costs a round trip. Depends on
 * {@code fence} only.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.store.cache;

import org.jspecify.annotations.NullMarked;
