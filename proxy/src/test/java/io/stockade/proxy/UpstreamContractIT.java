package io.stockade.proxy;

import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.testing.TestUpstream;

/** The contract through an HTTP backend: a real upstream server is the storage, read back directly. */
abstract class UpstreamContractIT extends ContractIT {
    TestUpstream upstream;

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
