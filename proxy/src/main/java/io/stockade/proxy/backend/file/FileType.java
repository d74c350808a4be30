package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.util.Optional;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.ScopeShape;

/** The file backend: the proxy's store keeps its fence; its scopes are its policy's scope template. */
public record FileType(Policy policy, BackendConfig.File config) implements BackendType {

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

    /** Each file's token is kept beside it too, and a write below it is refused whatever the store says. */
    @Override
    public Optional<String> resetRefusal() {
        return Optional.of("policy '" + policy.name() + "' has a file backend, which keeps each file's token beside"
                + " it too (<root>/.stockade/tokens/<path>/.stockade-token) and refuses a write below it: with the"
                + " proxy stopped, remove that file's token sidecar, then reset; nothing changed");
    }
}
