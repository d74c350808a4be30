package io.stockade.proxy.pipeline;

import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.StockadeServer;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code /health/ready} tells the truth: DOWN (503, naming what cannot be reached) while the fence store or a
 * policy's verifier is down, UP again when it answers; {@code /health/live} stays up throughout. Real etcd, killed
 * and started again on its ports and data.
 */
@RequiresTools(Tools.Tool.ETCD)
class ReadinessIT {
    @TempDir
    Path dir;

    @BeforeEach
    void needEtcd() {
    }

    @Test
    void anEtcdFenceStoreThatIsDownMakesTheProxyUnreadyUntilItIsBack() throws Exception {
        try (EtcdServer etcd = EtcdServer.single(); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies
                     .on("store: {type: etcd, endpoints: \"${ETCD}\", prefix: /ready/, timeout: 1s}")
                     .policy("docs", "/docs/{id}", "docs/{id}").http("${UPSTREAM}", "conditional: if-match").yaml(),
                     Map.of("ETCD", etcd.endpoints(), "UPSTREAM", upstream.baseUri().toString()))) {
            proxy.awaitReady(200);
            etcd.kill(0);
            Http.Response down = proxy.awaitReady(503);
            assertTrue(down.body().contains("\"status\":\"DOWN\""), down.body());
            assertTrue(down.body().contains("fence store"), down.body());
            assertEquals(200, Http.get(proxy.uri(StockadeServer.LIVE)).status(), "live stays up");
            // the truth it tells: a write now is refused, and nothing reached the upstream
            Http.Response write = Http.put(proxy.uri("/docs/a"), "v", Map.of("Fencing-Token", "5"));
            assertEquals(503, write.status(), write.body());
            assertEquals(0, upstream.requestCount());

            etcd.restart(0);
            Http.Response up = proxy.awaitReady(200);
            assertTrue(up.body().startsWith("{\"status\":\"UP\",\"policies\":{\"docs\":{\"status\":\"UP\"}"),
                    up.body());
            assertEquals(201, Http.put(proxy.uri("/docs/a"), "v", Map.of("Fencing-Token", "5")).status());
        }
    }

    /**
     * Issue 49: with the etcd fence store stopped, a postgres-backend policy (its fence in its own database) was
     * reported DOWN ({@code /health/ready/jobs} 503, {@code stockade_policy_up} 0) while it went on writing. A
     * policy's state now follows what its writes need: the postgres policy stays UP and writes (the row is in the
     * database, its fence raised), the file policy on the store is DOWN and refuses (nothing written), the replica is
     * unready for the store that policy needs.
     */
    @Test
    void aPolicyFencedInItsOwnDatabaseStaysUpAndWritesWhileTheFenceStoreIsDown() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        try (EtcdServer etcd = EtcdServer.single();
             Pg db = Pg.create("CREATE TABLE jobs (id text PRIMARY KEY, state text NOT NULL)");
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), """
                     store: {type: etcd, endpoints: "${ETCD}", prefix: /ready-pg/, timeout: 1s}
                     policies:
                       - name: jobs
                         match: {path: "/jobs/{id}", methods: [PUT]}
                         scope: jobs/{id}
                         backend:
                           type: postgres
                           datasource: {url: "${DB}", user: postgres}
                           params: {id: path, state: body}
                           statements:
                             PUT: INSERT INTO jobs (id, state) VALUES (:id, :state)
                                  ON CONFLICT (id) DO UPDATE SET state = :state
                       - name: files
                         match: {path: "/files/{name}"}
                         scope: files/{name}
                         backend: {type: file, root: "${ROOT}"}
                     """, Map.of("ETCD", etcd.endpoints(), "DB", db.url(), "ROOT", root.toString()))) {
            proxy.awaitReady(200);
            etcd.kill(0);
            Http.Response down = proxy.awaitReady(503);
            assertTrue(down.body().contains("\"down\":[\"fence store: "), down.body());
            assertTrue(down.body().contains("\"jobs\":{\"status\":\"UP\"}")
                    && down.body().contains("\"files\":{\"status\":\"DOWN\",\"down\":[\"fence store: "),
                    down.body());
            Http.Response jobs = Http.get(proxy.uri(StockadeServer.READY + "/jobs"));
            assertEquals(200, jobs.status(), jobs.body());
            assertEquals(503, Http.get(proxy.uri(StockadeServer.READY + "/files")).status());
            String metrics = Http.get(proxy.uri("/metrics")).body();
            assertTrue(metrics.contains("stockade_policy_up{policy=\"jobs\"} 1.0"), metrics);
            assertTrue(metrics.contains("stockade_policy_up{policy=\"files\"} 0.0"), metrics);
            // the truth it tells: the postgres policy writes, fenced in its database; the file policy refuses
            Http.Response put = Http.put(proxy.uri("/jobs/a"), "{\"state\": \"done\"}",
                    Map.of("Fencing-Token", "7", "Content-Type", "application/json"));
            assertEquals(2, put.status() / 100, put.body());
            assertEquals(409, Http.put(proxy.uri("/jobs/a"), "{\"state\": \"stale\"}",
                    Map.of("Fencing-Token", "6", "Content-Type", "application/json")).status());
            try (Connection c = DriverManager.getConnection(db.url(), "postgres", "");
                 ResultSet rs = c.createStatement().executeQuery("SELECT state FROM jobs WHERE id = 'a'")) {
                assertTrue(rs.next());
                assertEquals("done", rs.getString(1));
            }
            assertEquals(503, Http.put(proxy.uri("/files/a"), "v", Map.of("Fencing-Token", "5")).status());
            assertFalse(Files.exists(root.resolve("files/a")));
        }
    }

    private static final String TWO_POLICIES = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: files
                match: {path: "/files/{name}"}
                scope: files/{name}
                readiness: ${READINESS}
                fence:
                  verify: {kind: etcd, endpoints: "${ETCD}", prefix: locks/, timeout: 1s}
                backend: {type: file, root: "${ROOT}"}
              - name: open
                match: {path: "/open/{name}"}
                scope: open/{name}
                backend: {type: file, root: "${ROOT}"}
            """;

    /**
     * The first-hour report: one policy's dependency down made every replica unready, taking healthy policies out of
     * the Service. By default a policy's own dependencies are reported: the replica stays ready, the broken policy
     * refuses its writes with 503, the healthy one writes.
     */
    @Test
    void aVerifierThatCannotAnswerTakesItsPolicyDownAndLeavesTheOthersServing() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        try (EtcdServer etcd = EtcdServer.single();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), TWO_POLICIES, Map.of("ETCD", etcd.endpoints(),
                     "ROOT", root.toString(), "READINESS", "report"))) {
            proxy.awaitReady(200);
            etcd.kill(0);
            long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
            Http.Response files;
            do {
                Thread.sleep(100);
                files = Http.get(proxy.uri(StockadeServer.READY + "/files"));
            } while (files.status() != 503 && System.nanoTime() < deadline);
            assertEquals(503, files.status(), files.body());
            assertTrue(files.body().contains("etcd verifier"), files.body());
            Http.Response ready = Http.get(proxy.uri(StockadeServer.READY));
            assertEquals(200, ready.status(), "the replica stays ready: " + ready.body());
            assertTrue(ready.body().contains("\"files\":{\"status\":\"DOWN\",\"down\":[\"etcd verifier")
                    && ready.body().contains("\"open\":{\"status\":\"UP\"}"), ready.body());
            assertEquals(200, Http.get(proxy.uri(StockadeServer.READY + "/open")).status());
            assertEquals(404, Http.get(proxy.uri(StockadeServer.READY + "/nope")).status());
            // the truth it tells: the healthy policy writes, the broken one refuses with 503 and writes nothing
            assertEquals(201, Http.put(proxy.uri("/open/a"), "v", Map.of("Fencing-Token", "5")).status());
            assertEquals(503, Http.put(proxy.uri("/files/a"), "v", Map.of("Fencing-Token", "5")).status());
            assertFalse(Files.exists(root.resolve("files/a")));
            etcd.restart(0);
            do {
                Thread.sleep(100);
                files = Http.get(proxy.uri(StockadeServer.READY + "/files"));
            } while (files.status() != 200 && System.nanoTime() < deadline + Duration.ofSeconds(30).toNanos());
            assertEquals(200, files.status(), files.body());
        }
    }

    /** A policy that gates readiness ({@code readiness: gate}) makes the whole replica unready while it is down. */
    @Test
    void aPolicyThatGatesReadinessMakesTheReplicaUnreadyAndNamesThePolicy() throws Exception {
        Path root = Files.createDirectories(dir.resolve("root"));
        try (EtcdServer etcd = EtcdServer.single();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), TWO_POLICIES, Map.of("ETCD", etcd.endpoints(),
                     "ROOT", root.toString(), "READINESS", "gate"))) {
            proxy.awaitReady(200);
            etcd.kill(0);
            Http.Response down = proxy.awaitReady(503);
            assertTrue(down.body().contains("policy 'files': etcd verifier"), down.body());
            assertFalse(down.body().contains("fence store"), "the memory store answers: " + down.body());
            etcd.restart(0);
            proxy.awaitReady(200);
        }
    }
}
