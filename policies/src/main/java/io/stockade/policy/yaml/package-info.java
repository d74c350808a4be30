/**
 * The policy file's readers: YAML into the model of {@code io.stockade.policy}, every key and keyword in one place
 * ({@code Vocabulary}), every error with its path and line ({@code Problems}). The entry point is
 * {@link io.stockade.policy.yaml.PolicyLoader}. The model never depends on this package. Null-marked, as the model.
 */
@NullMarked
package io.stockade.policy.yaml;

import org.jspecify.annotations.NullMarked;
