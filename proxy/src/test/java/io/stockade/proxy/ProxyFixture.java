package io.stockade.proxy;

import io.stockade.policy.PolicyException;
import io.stockade.policy.PolicyLoader;
import io.stockade.policy.StockadeConfig;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.Map;

/**
 * An in-process proxy for integration tests, started from a YAML policy text exactly as a user would write it.
 * The text may use {@code ${JOURNAL}} (a fresh journal directory) and any variable given in {@code vars}.
 */
public final class ProxyFixture implements AutoCloseable {
    private final StockadeServer server;
    private final Path journal;

    private ProxyFixture(StockadeServer server, Path journal) {
        this.server = server;
        this.journal = journal;
    }

    /**
     * Starts a proxy whose journal lives in {@code journal} (an existing journal is replayed: a restart).
     */
    public static ProxyFixture start(Path journal, String yaml, Map<String, String> vars)
            throws IOException, PolicyException {
        Map<String, String> env = new java.util.HashMap<>(vars);
        env.put("JOURNAL", journal.toString());
        StockadeConfig config = PolicyLoader.parse(yaml, Path.of("test-policy.yaml"), env).withPort(0);
        return new ProxyFixture(StockadeServer.start(config), journal);
    }

    public URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    public StockadeServer server() {
        return server;
    }

    public Path journal() {
        return journal;
    }

    @Override
    public void close() {
        server.close();
    }
}
