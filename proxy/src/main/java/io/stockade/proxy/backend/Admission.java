package io.stockade.proxy.backend;

import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;

/**
 * A fenced write whose token the store admitted.
 *
 * @param scope    the fence scope
 * @param token    the writer's token, now the scope's highest (or equal to it)
 * @param previous the scope's state before the admission (token -1 for a new scope); its version is the
 *                 upstream version an atomic backend must make its write conditional on
 * @param store    the fence store, for an atomic backend's re-check on conflict
 * @param rule     the rule the plan judged the token by (a backend that checks again, as the file backend's
 *                 sidecar does, judges by the same)
 */
public record Admission(String scope, long token, FenceState previous, FenceStore store, Fencing.Rule rule) {
}
