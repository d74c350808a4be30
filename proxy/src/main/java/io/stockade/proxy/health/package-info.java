/**
 * {@code HealthEndpoints}: the JSON answers of {@code /health/live}, {@code /health/ready} and
 * {@code /health/ready/<policy>}.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.health;

import org.jspecify.annotations.NullMarked;
