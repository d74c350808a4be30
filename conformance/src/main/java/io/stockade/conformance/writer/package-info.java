/**
 * The writer process: its loop, raw HTTP, SigV4 signing and SQL writes. Null-marked: a type here is non-null unless
 * it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.writer;

import org.jspecify.annotations.NullMarked;
