package io.stockade.proxy.backend;

import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.stockade.policy.Route;

/**
 * One request on its way through the proxy.
 *
 * @param request  the client's request (its body not yet read)
 * @param response the answer to the client
 * @param route    the policy that took it and the path variables it bound
 * @param scope    the fence scope
 */
public record Exchange(ServerRequest request, ServerResponse response, Route route, String scope) {
}
