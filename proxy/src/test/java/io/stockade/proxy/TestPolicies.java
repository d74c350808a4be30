package io.stockade.proxy;

/**
 * The policy files integration tests start from when their subject is not the YAML: one policy {@code docs}
 * ({@code /docs/{id}}, scope {@code docs/{id}}) over the http backend at {@code ${UPSTREAM}}, on the memory store
 * with its journal ({@code ${JOURNAL}}, which {@link ProxyFixture} fills in) or on a store the test gives. A test
 * about the policy language itself keeps its YAML written out.
 */
final class TestPolicies {
    /** The memory store with its journal. */
    static final String MEMORY_STORE = """
            store:
              type: memory
              journal: ${JOURNAL}
            """;

    private TestPolicies() {
    }

    /**
     * {@code docs} over the http backend on the memory store, with {@code backend} lines (YAML at the backend's own
     * level, e.g. {@code "conditional: if-match"}) after {@code type} and {@code url}.
     */
    static String docsOverHttp(String... backend) {
        return docsOverHttpOn(MEMORY_STORE, backend);
    }

    /** As {@link #docsOverHttp(String...)}, on {@code store} (a whole {@code store:} block). */
    static String docsOverHttpOn(String store, String... backend) {
        StringBuilder b = new StringBuilder(store.stripTrailing()).append('\n').append("""
                policies:
                  - name: docs
                    match:
                      path: /docs/{id}
                    scope: docs/{id}
                    backend:
                      type: http
                      url: ${UPSTREAM}
                """);
        for (String line : backend) {
            b.append(line.strip().indent(6));
        }
        return b.toString();
    }
}
