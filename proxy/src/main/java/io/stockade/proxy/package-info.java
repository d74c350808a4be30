/**
 * The proxy's start and stop: {@code Main} (the command line), {@code StockadeServer} (a running proxy),
 * {@code Reloader} (live policy reload), {@code BootstrapChecks} and {@code CleanShutdown}.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy;

import org.jspecify.annotations.NullMarked;
