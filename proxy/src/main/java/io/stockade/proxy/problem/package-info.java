/**
 * {@code ProblemType}, {@code Problem} (RFC 9457 answers) and {@code Statuses} (reason phrases Helidon lacks).
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.problem;

import org.jspecify.annotations.NullMarked;
