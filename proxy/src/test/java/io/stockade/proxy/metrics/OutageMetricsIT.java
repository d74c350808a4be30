package io.stockade.proxy.metrics;

import java.nio.file.Path;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;
import io.stockade.testing.PgCluster;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The first-hour report: a database outage of the postgres backend answered 503 and made the proxy unready, yet no
 * metric an alert watches moved, so no shipped alert fired. Each kind of outage a write can meet, driven for real
 * against one proxy: the metric the shipped rules read ({@code deploy/prometheus/alerts.yaml}; promtool unit-tests
 * the rules on those metrics in DeployFilesIT) moves.
 */
@RequiresTools(Tools.Tool.POSTGRES_CLUSTER)
class OutageMetricsIT {
    @TempDir
    Path dir;

    private static double sample(String scrape, String name, String labels) {
        Matcher m = Pattern.compile("(?m)^" + Pattern.quote(name) + "\\{([^}]*)\\} (\\S+)$").matcher(scrape);
        while (m.find()) {
            boolean all = true;
            for (String label : labels.split(",")) {
                all &= m.group(1).contains(label);
            }
            if (all) {
                return Double.parseDouble(m.group(2));
            }
        }
        return Double.NaN;
    }

    @Test
    void everyOutageAWriteMeetsMovesAMetricAnAlertWatches() throws Exception {
        int deadPort = FreePorts.next();
        String yaml = """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: accounts
                    match: {path: "/accounts/{id}", methods: [PUT]}
                    scope: accounts/{id}
                    backend:
                      type: postgres
                      datasource: {url: "%s", user: postgres, connect-timeout: 1s, pool-size: 2}
                      params: {id: path}
                      statements:
                        PUT: SELECT :id::text AS id   # valid: the proxy checks each statement at load
                  - name: docs
                    match: {path: "/docs/{id}"}
                    scope: docs/{id}
                    backend: {type: http, url: "http://127.0.0.1:%d", settle: 100ms}
                  - name: jobs
                    match: {path: "/jobs/{id}"}
                    scope: jobs/{id}
                    fence:
                      verify:
                        kind: postgres
                        datasource: {url: "jdbc:postgresql://127.0.0.1:%d/test", user: postgres, connect-timeout: 1s}
                    backend: {type: file, root: "%s"}
                """;
        try (PgCluster database = PgCluster.create();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml.formatted(database.url(), deadPort,
                     deadPort, dir.resolve("root")), Map.of())) {
            Thread.sleep(200); // past the http policy's settle after start
            database.stopImmediate(); // the backend's database goes away after the proxy started
            // a postgres backend's database down
            Http.Response accounts = Http.put(proxy.uri("/accounts/a"), "", Map.of("Fencing-Token", "1"));
            assertEquals(503, accounts.status(), accounts.body());
            // an http upstream that cannot be reached
            assertEquals(502, Http.put(proxy.uri("/docs/a"), "v", Map.of("Fencing-Token", "1")).status());
            // a token verifier that cannot answer
            assertEquals(503, Http.put(proxy.uri("/jobs/a"), "v", Map.of("Fencing-Token", "1")).status());

            String scrape = Http.get(proxy.uri("/metrics")).body();
            // StockadePolicyDown
            assertEquals(0.0, sample(scrape, "stockade_policy_up", "policy=\"accounts\""), "accounts is down");
            assertEquals(0.0, sample(scrape, "stockade_policy_up", "policy=\"jobs\""), "jobs is down");
            assertEquals(1.0, sample(scrape, "stockade_policy_up", "policy=\"docs\""),
                    "an upstream down does not stop a policy from fencing");
            // StockadeWritesUnavailable
            assertTrue(sample(scrape, "stockade_decisions_total", "policy=\"accounts\",outcome=\"unavailable\"")
                    >= 1, "the database outage counted");
            assertTrue(sample(scrape, "stockade_decisions_total", "policy=\"jobs\",outcome=\"unavailable\"")
                    >= 1, "the verifier outage counted");
            // StockadeUpstreamErrors
            assertTrue(sample(scrape, "stockade_upstream_errors_total", "policy=\"docs\",reason=\"unreachable\"")
                    >= 1, "the upstream outage counted");
            // and what an operator reads beside them: the build, the JVM, the process (first-hour report)
            Pattern buildInfo = Pattern.compile("(?m)^stockade_build_info\\{commit=\"([0-9a-f]{40}|unknown)\","
                    + "version=\"[^\"]+\"\\} 1");
            assertTrue(buildInfo.matcher(scrape).find(), "stockade_build_info");
            for (String jvm : new String[] {"jvm_memory_used_bytes", "jvm_threads_live_threads", "process_cpu_usage",
                    "process_uptime_seconds", "process_files_open_files"}) {
                assertTrue(scrape.contains(jvm), jvm);
            }
            // the replica stays ready: the fence store answers; the two policies say what is down
            Http.Response ready = Http.get(proxy.uri("/health/ready"));
            assertEquals(200, ready.status(), ready.body());
            assertEquals(503, Http.get(proxy.uri("/health/ready/accounts")).status());
        }
    }
}
