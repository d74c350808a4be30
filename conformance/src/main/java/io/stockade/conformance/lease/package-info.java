/**
 * The writers' lock service: the counter lease server and the SDK's providers. Null-marked: a type here is non-null
 * unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.lease;

import org.jspecify.annotations.NullMarked;
