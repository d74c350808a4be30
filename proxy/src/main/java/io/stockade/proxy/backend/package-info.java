/**
 * The backend contract: what every backend type implements and what the engine asks of it. Null-marked: a type here is
 * non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.backend;

import org.jspecify.annotations.NullMarked;
