/**
 * The token verifier of {@code fence.verify} kind {@code zookeeper}: the creation zxid of the ZooKeeper lock holder's
 * node.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.verify.zookeeper;

import org.jspecify.annotations.NullMarked;
