package io.stockade.proxy.backend.file;

import java.io.IOException;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.ScopeShape;

/** The file backend: the proxy's store keeps its fence; its scopes are its policy's scope template. */
public final class FileType implements BackendType {
    private final Policy policy;
    private final BackendConfig.File config;

    public FileType(Policy policy, BackendConfig.File config) {
        this.policy = policy;
        this.config = config;
    }

    @Override
    public Backend open() throws IOException {
        return FileBackend.open(config);
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
