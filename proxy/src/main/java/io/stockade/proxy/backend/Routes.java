package io.stockade.proxy.backend;

import java.util.Optional;

import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;

/**
 * Which policy serves a request target, as the pipeline routes requests: for a backend whose request names a second
 * resource it reads (an S3 copy's source), so that the resource is held to the policy that serves it.
 */
@FunctionalInterface
public interface Routes {
    /** No policy serves anything: every second resource is refused. */
    Routes NONE = (method, target) -> Optional.empty();

    /** The policy that serves {@code method} on {@code target}, if any. */
    Optional<Policy> policy(String method, RequestTarget target);
}
