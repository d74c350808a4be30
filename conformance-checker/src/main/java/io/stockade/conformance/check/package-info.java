/**
 * The conformance suite's history checker: {@link io.stockade.conformance.check.History} and
 * {@link io.stockade.conformance.check.HistoryChecker}. Null-marked: a type here is non-null unless it says
 * {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.check;

import org.jspecify.annotations.NullMarked;
