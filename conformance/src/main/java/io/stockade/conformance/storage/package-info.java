/**
 * The readers that read a target's storage directly, and the plain stores of the paired control. Null-marked: a
 * type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.storage;

import org.jspecify.annotations.NullMarked;
