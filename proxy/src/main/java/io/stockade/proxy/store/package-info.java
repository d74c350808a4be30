/**
 * {@code FenceStores}: the fence store a policy file names, with the token cache in front.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.store;

import org.jspecify.annotations.NullMarked;
