/**
 * The {@code lease run} command line ({@link io.stockade.client.cli.LeaseCommand}). Null-marked: a type here is
 * non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.client.cli;

import org.jspecify.annotations.NullMarked;
