/**
 * Running a scenario: the proxy and store processes, the writers and their hosts, the fault cycle, the run's result.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.run;

import org.jspecify.annotations.NullMarked;
