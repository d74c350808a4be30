/**
 * Leases that know when they are lost, and fencing tokens attached to writes. Null-marked: a type here is non-null
 * unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.client;

import org.jspecify.annotations.NullMarked;
