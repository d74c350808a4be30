/**
 * The http backend: requests relayed to an HTTP upstream, fenced by the engine. Null-marked: a type here is
 * non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.backend.http;

import org.jspecify.annotations.NullMarked;
