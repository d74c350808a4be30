/**
 * The registry of backend types: which type name opens which backend. Null-marked: a type here is
 * non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.backend.registry;

import org.jspecify.annotations.NullMarked;
