package io.stockade.proxy.backend.http;

import java.io.IOException;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.ScopeShape;

/** The http backend: the proxy's store keeps its fence; its scopes are its policy's scope template. */
public record HttpType(Policy policy, BackendConfig.Http config) implements BackendType {
    private static final Logger LOG = Logger.getLogger(HttpType.class.getName());

    /** Opens the backend, logging a settle shorter than the timeout. */
    @Override
    public Backend open() throws IOException {
        config.settleAdvice().ifPresent(advice -> LOG.warning("policy '" + policy.name() + "': " + advice));
        return HttpBackend.open(config);
    }

    @Override
    public FencePlace fencePlace() {
        return new FencePlace.ProxyStore();
    }

    @Override
    public ScopeShape scopes() {
        return ScopeShape.of(policy.scope());
    }
}
