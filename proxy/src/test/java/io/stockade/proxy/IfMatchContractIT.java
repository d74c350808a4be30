package io.stockade.proxy;

/** The contract through the HTTP backend in the atomic class ({@code conditional: if-match}). */
class IfMatchContractIT extends UpstreamContractIT {
    @Override
    String backendYaml() {
        return "    backend:\n      type: http\n      url: ${UPSTREAM}\n      conditional: if-match\n";
    }
}
