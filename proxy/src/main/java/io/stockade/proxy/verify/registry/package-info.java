/**
 * Token verification: {@code TokenVerifiers}: the one place that opens each kind of verifier.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.registry;

import org.jspecify.annotations.NullMarked;
