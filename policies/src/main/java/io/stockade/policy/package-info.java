/**
 * The policy model: a policy file (YAML) read into an immutable, validated {@link io.stockade.policy.StockadeConfig},
 * and a request matched to its policy. Null-marked: a type here is non-null unless it says {@code @Nullable}
 * (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.policy;

import org.jspecify.annotations.NullMarked;
