/**
 * {@code FencingToken}: strict parsing of the token header.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.token;

import org.jspecify.annotations.NullMarked;
