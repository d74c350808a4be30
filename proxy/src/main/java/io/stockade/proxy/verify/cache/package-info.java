/**
 * Token verification: remembered positive verdicts.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.cache;

import org.jspecify.annotations.NullMarked;
