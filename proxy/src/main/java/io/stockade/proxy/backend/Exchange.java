package io.stockade.proxy.backend;

import java.io.InputStream;

import io.stockade.policy.Route;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.listener.UnreadBody;

import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;

/**
 * One request on its way through the proxy.
 *
 * @param request  the client's request (its body not yet read)
 * @param response the answer to the client
 * @param route    the policy that took it and the path variables it bound
 * @param scope    the fence scope
 * @param bounds   the policy's bounds on the body; read it with {@link #body()}
 * @param fencing  how the policy fences its writes, read once at load: the planner's to ask
 * @param routes   which policy serves another target (the policies in force when the request started)
 */
public record Exchange(ServerRequest request, ServerResponse response, Route route, String scope,
                       BodyBounds bounds, Fencing fencing, Routes routes) {

    /** An exchange whose body is not bounded, with the policy's fencing read now, and no other target served. */
    public Exchange(ServerRequest request, ServerResponse response, Route route, String scope) {
        this(request, response, route, scope, BodyBounds.none(), Fencing.of(route.policy()), Routes.NONE);
    }

    /** This exchange with the scope its backend's plan found. */
    public Exchange withScope(String planned) {
        return new Exchange(request, response, route, planned, bounds, fencing, routes);
    }

    /**
     * The request body, within the policy's bounds: a read past a bound fails with {@link BodyBounds.BodyRefused}.
     * Backends read the body only through this.
     */
    public InputStream body() {
        InputStream body = bounds.wrap(request.content().inputStream());
        // for the listener, should the backend stop early (within the bounds: a body cut off by one stays cut off)
        UnreadBody.started(body);
        return body;
    }
}
