package io.stockade.proxy;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.pipeline.FencePipeline;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.helidon.webserver.WebServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A bug inside the request path (here: a fence store throwing something other than
 * {@code StoreUnavailableException}) is answered as the 500 problem of the server's error handler and counted
 * as the {@code error} outcome; the pipeline's own bookkeeping must not throw on top of it and hide the cause.
 */
class PipelineBugIT {

    /** A store with a bug: every call throws an unchecked exception. */
    private static final class BuggyStore implements FenceStore {
        @Override
        public Advance advance(String scope, long token, boolean acceptEqual) {
            throw new IllegalStateException("bug in advance");
        }

        @Override
        public Optional<FenceState> get(String scope) {
            throw new IllegalStateException("bug in get");
        }

        @Override
        public boolean recordVersion(String scope, long token, String version) {
            throw new IllegalStateException("bug in recordVersion");
        }

        @Override
        public void close() {
        }
    }

    @Test
    void aBugIsA500ProblemCountedAsErrorAndNothingIsWritten(@TempDir Path dir) throws Exception {
        Path data = Files.createDirectories(dir.resolve("data"));
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: %s}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: "files/{path}"
                    backend: {type: file, root: %s}
                    limits: {max-concurrent-per-scope: 1}
                """.formatted(dir.resolve("journal"), data), Path.of("bug.yaml"), Map.of());
        Backend backend = StockadeServer.openBackend(config.policies().getFirst());
        ProxyMetrics metrics = new ProxyMetrics();
        FencePipeline pipeline = new FencePipeline(config, Map.of("files", backend), new BuggyStore(),
                new ScopeGuard(), metrics, System::nanoTime, new TokenVerifiers(Clock.systemUTC()));
        WebServer server = WebServer.builder().host("127.0.0.1").port(0)
                .routing(r -> StockadeServer.routing(r, pipeline, metrics, null, false)).build().start();
        try {
            HttpResponse<String> response = HttpClient.newHttpClient().send(HttpRequest.newBuilder(
                            URI.create("http://127.0.0.1:" + server.port() + "/files/a.txt"))
                    .header("Fencing-Token", "5").PUT(HttpRequest.BodyPublishers.ofString("x")).build(),
                    HttpResponse.BodyHandlers.ofString());

            assertEquals(500, response.statusCode(), response.body());
            assertTrue(response.body().contains("internal-error"), response.body());
            assertTrue(response.body().contains("IllegalStateException"), "the cause, not a follow-up NPE: "
                    + response.body());
            String scrape = metrics.scrape();
            assertTrue(scrape.contains(
                    "stockade_decisions_total{backend=\"file\",outcome=\"error\",policy=\"files\"} 1.0"), scrape);
            assertFalse(Files.exists(data.resolve("a.txt")), "nothing written");
            // The exception did not keep its place on the scope (max-concurrent-per-scope: 1).
            assertEquals(0, pipeline.scopesInFlight(), "a per-scope place leaked on the exception path");
        } finally {
            server.stop();
            backend.close();
        }
    }
}
