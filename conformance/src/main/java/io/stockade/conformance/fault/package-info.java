/**
 * The fault proxy that cuts and delays the writers' connections. Null-marked: a type here is non-null unless it
 * says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.fault;

import org.jspecify.annotations.NullMarked;
