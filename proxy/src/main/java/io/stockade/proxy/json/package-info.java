/**
 * {@code JsonWriter} and {@code JsonReader}: the proxy's one JSON writer and reader, on Jackson's streaming parser.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.json;

import org.jspecify.annotations.NullMarked;
