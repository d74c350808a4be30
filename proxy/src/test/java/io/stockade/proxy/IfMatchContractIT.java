package io.stockade.proxy;

import io.stockade.proxy.testing.TestUpstream;

import java.util.Map;
import java.util.Optional;

/** The contract through the HTTP backend in the atomic class ({@code conditional: if-match}). */
class IfMatchContractIT extends ContractIT {
    TestUpstream upstream;

    @Override
    String backendYaml() {
        return "    backend:\n      type: http\n      url: ${UPSTREAM}\n      conditional: if-match\n";
    }

    @Override
    Map<String, String> startStorage() {
        upstream = TestUpstream.start();
        return Map.of("UPSTREAM", upstream.baseUri().toString());
    }

    @Override
    void stopStorage() {
        upstream.close();
    }

    @Override
    Optional<String> stored(String path) {
        return upstream.contentText(path);
    }
}
