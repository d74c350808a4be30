/**
 * The run's reports: JSON, header and run information. Null-marked: a type here is non-null unless it says {@code
 * @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.conformance.report;

import org.jspecify.annotations.NullMarked;
