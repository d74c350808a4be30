package io.stockade.proxy;

import java.util.ArrayList;
import java.util.List;

/**
 * The policy files integration tests start from when their subject is not the YAML, written with a small builder:
 * <pre>{@code
 * TestPolicies.memoryStore()
 *         .policy("files", "/files/{path...}", "files/{path}").file("${ROOT}").limits("max-body-bytes: 1KiB")
 *         .policy("docs", "/docs/{id}", "docs/{id}").fence("mode: observe").http("${UPSTREAM}", "settle: 1ms")
 *         .yaml();
 * }</pre>
 * Each option is YAML at its block's own level ({@code "settle: 1ms"}; several lines where a value is a block). The
 * memory store's journal is {@code ${JOURNAL}}, which {@link ProxyFixture} fills in. A test about the policy
 * language itself keeps its YAML written out.
 */
public final class TestPolicies {
    /** The memory store with its journal. */
    public static final String MEMORY_STORE = """
            store:
              type: memory
              journal: ${JOURNAL}
            """;

    private final String store;
    private final List<String> top = new ArrayList<>();
    private final List<Policy> policies = new ArrayList<>();

    private TestPolicies(String store) {
        this.store = store;
    }

    /** On the memory store with its journal ({@code ${JOURNAL}}). */
    public static TestPolicies memoryStore() {
        return new TestPolicies(MEMORY_STORE);
    }

    /** On {@code store} (a whole {@code store:} block). */
    public static TestPolicies on(String store) {
        return new TestPolicies(store);
    }

    /**
     * {@code docs} ({@code /docs/{id}}, scope {@code docs/{id}}) over the http backend at {@code ${UPSTREAM}} on the
     * memory store, with {@code backend} options after {@code type} and {@code url}.
     */
    public static String docsOverHttp(String... backend) {
        return docsOverHttpOn(MEMORY_STORE, backend);
    }

    /** As {@link #docsOverHttp(String...)}, on {@code store} (a whole {@code store:} block). */
    public static String docsOverHttpOn(String store, String... backend) {
        return on(store).policy("docs", "/docs/{id}", "docs/{id}").http("${UPSTREAM}", backend).yaml();
    }

    /** An {@code admin:} block with these lines (e.g. {@code "token: ${ADMIN}"}). */
    public TestPolicies admin(String... lines) {
        top.add(block("admin", 0, lines));
        return this;
    }

    /** A {@code server:} block with these lines. */
    public TestPolicies server(String... lines) {
        top.add(block("server", 0, lines));
        return this;
    }

    /** Starts a policy {@code name} matching {@code path}, fenced per {@code scope}; the options after are its. */
    public TestPolicies policy(String name, String path, String scope) {
        policies.add(new Policy(name, path, scope));
        return this;
    }

    /** The current policy matches only {@code methods}. */
    public TestPolicies methods(String... methods) {
        current().methods = String.join(", ", methods);
        return this;
    }

    /** The current policy's {@code fence:} lines (e.g. {@code "mode: observe"}, {@code "verify: {kind: redis}"}). */
    public TestPolicies fence(String... lines) {
        current().fence = block("fence", 4, lines);
        return this;
    }

    /** The current policy's {@code limits:} lines (e.g. {@code "max-body-bytes: 1KiB"}). */
    public TestPolicies limits(String... lines) {
        current().limits = block("limits", 4, lines);
        return this;
    }

    /** The current policy's backend: the http backend at {@code url}, with {@code options}. */
    public TestPolicies http(String url, String... options) {
        return backend("http", "url: \"" + url + "\"", options);
    }

    /** The current policy's backend: the file backend under {@code root}, with {@code options}. */
    public TestPolicies file(String root, String... options) {
        return backend("file", "root: \"" + root + "\"", options);
    }

    /** The current policy's backend of {@code type}: its first line, then {@code options}. */
    public TestPolicies backend(String type, String first, String... options) {
        List<String> lines = new ArrayList<>();
        lines.add("type: " + type);
        lines.add(first);
        lines.addAll(List.of(options));
        current().backend = block("backend", 4, lines.toArray(String[]::new));
        return this;
    }

    /** The policy file. */
    public String yaml() {
        StringBuilder b = new StringBuilder(store.stripTrailing()).append('\n');
        b.append("policies:\n");
        for (Policy p : policies) {
            if (p.backend == null) {
                throw new IllegalStateException("policy " + p.name + " has no backend");
            }
            b.append("  - name: ").append(p.name).append('\n');
            b.append("    match: {path: \"").append(p.path).append('"');
            if (p.methods != null) {
                b.append(", methods: [").append(p.methods).append(']');
            }
            b.append("}\n");
            b.append("    scope: \"").append(p.scope).append("\"\n");
            b.append(p.fence == null ? "" : p.fence).append(p.backend).append(p.limits == null ? "" : p.limits);
        }
        top.forEach(b::append); // server, admin: after the policies
        return b.toString();
    }

    @Override
    public String toString() {
        return yaml();
    }

    private Policy current() {
        if (policies.isEmpty()) {
            throw new IllegalStateException("policy(...) first");
        }
        return policies.getLast();
    }

    /** {@code key:} at {@code indent}, then each of {@code lines} (one or more YAML lines) two spaces deeper. */
    private static String block(String key, int indent, String... lines) {
        StringBuilder b = new StringBuilder(" ".repeat(indent)).append(key).append(":\n");
        for (String line : lines) {
            b.append(line.strip().indent(indent + 2));
        }
        return b.toString();
    }

    private static final class Policy {
        final String name;
        final String path;
        final String scope;
        String methods;
        String fence;
        String backend;
        String limits;

        Policy(String name, String path, String scope) {
            this.name = name;
            this.path = path;
            this.scope = scope;
        }
    }
}
