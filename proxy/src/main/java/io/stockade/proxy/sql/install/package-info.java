/**
 * The SQL that puts Stockade's fence into a database and takes it out again ({@code FenceSql}, {@code SqlCommand}).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.sql.install;

import org.jspecify.annotations.NullMarked;
