/**
 * The real servers and helpers every module's tests start. Null-marked: a type here is non-null unless it says
 * {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.testing;

import org.jspecify.annotations.NullMarked;
