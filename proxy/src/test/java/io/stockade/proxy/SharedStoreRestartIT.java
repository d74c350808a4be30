package io.stockade.proxy;

import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.postgres.PostgresPools;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 49: every clean restart on the etcd or PostgreSQL store settled for a minute (the clean-stop record was the
 * memory store's). Each run now keeps a record in the shared store, beaten every second and removed by a clean stop
 * ({@code SharedRuns}); a start opens its serialized policies at once when every earlier run stopped cleanly or still
 * beats, and settles when one did neither. Real proxy processes (SIGTERM runs the shutdown hook, SIGKILL does not),
 * a real etcd and the shared PostgreSQL; the runs' records read from the store itself.
 */
@RequiresTools(Tools.Tool.ETCD)
class SharedStoreRestartIT {
    /** Far above the registry's watch (3 beats of 1 s): a start that settled cannot pass for one that watched. */
    private static final Duration SETTLE = Duration.ofSeconds(15);

    @TempDir
    Path dir;

    private Path config(String name, String store, TestUpstream upstream) throws Exception {
        Path config = dir.resolve(name + ".yaml");
        Files.writeString(config, TestPolicies.on(store).server("port: 0").policy("docs", "/docs/{id}", "docs/{id}")
                .http(upstream.baseUri().toString(), "timeout: 5s", "settle: " + SETTLE.toSeconds() + "s").yaml());
        return config;
    }

    private static Http.Response put(ChildProxy proxy, String id, long token) throws Exception {
        return Http.put(proxy.baseUri().resolve("/docs/" + id), "v" + token, Map.of("Fencing-Token",
                Long.toString(token)));
    }

    private static void assertSettling(Http.Response r) {
        assertEquals(503, r.status(), r.body());
        assertTrue(r.body().contains("open after its settle time"), r.body());
    }

    /** The first write after {@code proxy} started, retried while it settles; fails if that takes {@code within}. */
    private static Duration firstWrite(ChildProxy proxy, String id, long token, Duration within) throws Exception {
        long start = System.nanoTime();
        while (true) {
            Http.Response r = put(proxy, id, token);
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            if (r.status() / 100 == 2) {
                return took;
            }
            assertSettling(r);
            assertTrue(took.compareTo(within) < 0, "still settling after " + took + ": " + proxy.log());
            Thread.sleep(200);
        }
    }

    private static List<String> etcdRuns(Client client) throws Exception {
        ByteSequence prefix = ByteSequence.from("/restart/runs/", StandardCharsets.UTF_8);
        List<String> runs = new ArrayList<>();
        client.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build()).get(5, TimeUnit.SECONDS)
                .getKvs().forEach(kv -> runs.add(kv.getKey().toString(StandardCharsets.UTF_8)
                        .substring(prefix.size())));
        return runs;
    }

    /**
     * Two replicas and a rolling restart on etcd: a start after a clean stop opens at once; a start beside a replica
     * that beats opens after watching it; one replica stops cleanly while the other is mid-write and then crashes
     * (kill -9): the next start settles — one record of "the last stop was clean" would have let it open while the
     * crashed replica's write was still on its way — and that write does land meanwhile; once settled, the crashed
     * run's record is removed and a clean stop leaves no record.
     */
    @Test
    void onEtcdACleanRestartOpensAtOnceAndACrashedReplicaMakesTheNextStartSettle() throws Exception {
        try (EtcdServer etcd = EtcdServer.single(); TestUpstream upstream = TestUpstream.start();
             Client client = Client.builder().endpoints(etcd.endpoints().split(",")).build()) {
            // a run before these stopped cleanly: the registry exists and holds no record
            client.getKVClient().put(ByteSequence.from("/restart/runs", StandardCharsets.UTF_8),
                    ByteSequence.from("1", StandardCharsets.UTF_8)).get(5, TimeUnit.SECONDS);
            String store = "store: {type: etcd, endpoints: \"" + etcd.endpoints() + "\", prefix: /restart/}";
            Path config = config("etcd", store, upstream);

            ChildProxy a = ChildProxy.start(config, List.of("-Xmx256m"));
            ChildProxy b = null;
            try {
                assertEquals(201, put(a, "a", 1).status(), "open at once: every earlier run stopped cleanly");
                assertTrue(a.log().contains("every earlier run stopped cleanly"), a.log());
                assertEquals(1, etcdRuns(client).size());

                b = ChildProxy.start(config, List.of("-Xmx256m"));
                Duration watched = firstWrite(b, "b", 2, SETTLE.minusSeconds(5));
                assertTrue(b.log().contains("still serves (1 beating)"), watched + ": " + b.log());
                assertEquals(2, etcdRuns(client).size());

                // b is mid-write (the upstream holds it 3 s before applying it) when a stops cleanly ...
                upstream.delayWrites(Duration.ofSeconds(3));
                ChildProxy writer = b;
                CompletableFuture<Http.Response> midWrite = CompletableFuture.supplyAsync(() -> {
                    try {
                        return put(writer, "m", 3);
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                });
                long reached = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (upstream.inFlight() == 0 && System.nanoTime() < reached) {
                    Thread.sleep(20);
                }
                assertEquals(1, upstream.inFlight(), "b's write reached the upstream");
                a.process().destroy();
                assertTrue(a.awaitExit(Duration.ofSeconds(30)));
                assertEquals(1, etcdRuns(client).size(), "a's record is gone, b's is there");
                // ... and b crashes with its write on its way
                b.kill9();
                midWrite.handle((r, e) -> null).get(10, TimeUnit.SECONDS);
            } finally {
                a.close();
                if (b != null) {
                    b.close();
                }
            }

            try (ChildProxy c = ChildProxy.start(config, List.of("-Xmx256m"))) {
                // b's record stays and no longer moves: c settles, and b's write lands meanwhile
                long watchedUntil = System.nanoTime() + Duration.ofSeconds(6).toNanos();
                while (System.nanoTime() < watchedUntil) {
                    assertSettling(put(c, "m", 4));
                    Thread.sleep(500);
                }
                assertTrue(c.log().contains("did not stop cleanly and no longer beat"), c.log());
                assertTrue(upstream.awaitApplied(3, Duration.ofSeconds(10)), "a/1, b/2 and m/3 applied");
                assertEquals(List.of("v3"), upstream.appliedBodies("/docs/m"), "the crashed run's write landed late");
                firstWrite(c, "m", 4, SETTLE.plusSeconds(10));
                assertEquals(List.of("v3", "v4"), upstream.appliedBodies("/docs/m"));
                long gone = System.nanoTime() + Duration.ofSeconds(10).toNanos();
                while (etcdRuns(client).size() > 1 && System.nanoTime() < gone) {
                    Thread.sleep(200);
                }
                assertEquals(1, etcdRuns(client).size(), "b's record removed once settled; c's own is there");
                c.process().destroy();
                assertTrue(c.awaitExit(Duration.ofSeconds(30)));
            }
            assertEquals(List.of(), etcdRuns(client), "a clean stop leaves no record");
        }
    }

    private static List<String> pgRuns(Pg pg) throws Exception {
        List<String> runs = new ArrayList<>();
        try (Connection c = DriverManager.getConnection(pg.url(), "postgres", "");
             ResultSet r = c.createStatement().executeQuery("SELECT run FROM stockade_runs WHERE run <> ''")) {
            while (r.next()) {
                runs.add(r.getString(1));
            }
        }
        return runs;
    }

    /** On PostgreSQL: a clean stop removes the run's row and the next start opens at once; a kill -9 settles. */
    @Test
    void onPostgresACleanStopLetsTheNextStartOpenAndAKill9DoesNot() throws Exception {
        String ddl;
        try (InputStream in = PostgresPools.class.getResourceAsStream(PostgresPools.SCHEMA_RESOURCE)) {
            ddl = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        try (Pg pg = Pg.create(ddl); TestUpstream upstream = TestUpstream.start()) {
            try (Connection c = DriverManager.getConnection(pg.url(), "postgres", "");
                 Statement s = c.createStatement()) {
                // a run before these stopped cleanly: the registry exists and holds no record
                s.execute("INSERT INTO stockade_runs (run, beat, settle_ms) VALUES ('', 0, 0)");
            }
            Path config = config("pg", "store: {type: postgres, datasource: {url: \"" + pg.url()
                    + "\", user: postgres}}", upstream);
            try (ChildProxy a = ChildProxy.start(config, List.of("-Xmx256m"))) {
                assertEquals(201, put(a, "a", 1).status(), "open at once: every earlier run stopped cleanly");
                assertEquals(1, pgRuns(pg).size());
                a.process().destroy();
                assertTrue(a.awaitExit(Duration.ofSeconds(30)));
            }
            assertEquals(List.of(), pgRuns(pg), "a clean stop removed its row");
            ChildProxy b = ChildProxy.start(config, List.of("-Xmx256m"));
            try {
                assertEquals(204, put(b, "a", 2).status(), "open at once after a clean stop");
            } finally {
                b.kill9();
            }
            assertEquals(1, pgRuns(pg).size(), "a crash leaves its row");
            try (ChildProxy c = ChildProxy.start(config, List.of("-Xmx256m"))) {
                assertSettling(put(c, "a", 3));
                assertFalse(c.log().contains("every earlier run stopped cleanly"), c.log());
            }
            assertEquals(List.of("v1", "v2"), upstream.appliedBodies("/docs/a"));
        }
    }
}
