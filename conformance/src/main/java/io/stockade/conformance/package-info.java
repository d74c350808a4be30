/**
 * The conformance harness: {@code Conformance} and {@code Main} (the command line), the scenarios
 * ({@code Scenario}, {@code Template}), the targets and the verdicts. Not the sub-packages: {@code launch} is Java 8
 * code and stays unmarked.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance;

import org.jspecify.annotations.NullMarked;
