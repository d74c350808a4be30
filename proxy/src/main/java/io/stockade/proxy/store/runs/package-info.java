/**
 * The registry of runs on a shared fence store (a restart after a clean stop need not settle).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.store.runs;

import org.jspecify.annotations.NullMarked;
