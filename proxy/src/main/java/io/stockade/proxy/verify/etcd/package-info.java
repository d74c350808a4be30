/**
 * The token verifier of {@code fence.verify} kind {@code etcd}: the etcd lock holder's create revision.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.etcd;

import org.jspecify.annotations.NullMarked;
