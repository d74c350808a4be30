package io.stockade.proxy;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.stockade.policy.PolicyException;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.Http;

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

    /** Polls {@code /health/ready} (its answer is kept for a second) until it answers {@code status}. */
    public Http.Response awaitReady(int status) throws Exception {
        return awaitReady(StockadeServer.READY, status);
    }

    /** Polls {@code path} (/health/ready or /health/ready/&lt;policy&gt;) until it answers {@code status}. */
    public Http.Response awaitReady(String path, int status) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        Http.Response r;
        do {
            r = Http.get(uri(path));
            if (r.status() == status) {
                return r;
            }
            Thread.sleep(100);
        } while (System.nanoTime() < deadline);
        throw new AssertionError(path + " did not answer " + status + " within 30 s; last: " + r.status()
                + " " + r.body());
    }

    /**
     * Waits until the {@code docs} policy ({@code /docs/{id}}, as {@link TestPolicies#docsOverHttp} names it) takes a
     * write: serialized policies open after their settle time (writes of a crashed run may still be in flight).
     */
    public void awaitDocsOpen() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (System.nanoTime() < deadline) {
            Http.Response r = Http.put(uri("/docs/probe"), "p", Map.of("Fencing-Token", "0"));
            if (r.status() != 503) {
                return;
            }
            Thread.sleep(100);
        }
        throw new AssertionError("the policy did not open within 10 s");
    }

    /**
     * The count of a decision metric, waiting up to 2 s for it to reach {@code expected}: the pipeline counts a
     * request after its answer has been sent, so the client can see the answer a moment before the count.
     */
    public double counted(String policy, Outcome outcome, double expected) throws InterruptedException {
        long deadline = System.nanoTime() + 2_000_000_000L;
        double count = server.metrics().count(policy, outcome);
        while (count < expected && System.nanoTime() < deadline) {
            Thread.sleep(5);
            count = server.metrics().count(policy, outcome);
        }
        return count;
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
