/**
 * JMH benchmarks of the proxy's hot paths and of the database clients (bench/jmh.sh, docs/benchmarks.md).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.bench;

import org.jspecify.annotations.NullMarked;
