/**
 * Stream plumbing shared by the listener, the upstream client and the backends; depends on nothing of Stockade's.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.io;

import org.jspecify.annotations.NullMarked;
