package io.stockade.proxy.backend.postgres;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.PgCluster;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A private PostgreSQL cluster is stopped ({@code pg_ctl stop -m immediate}) under a load of fenced writes through
 * the postgres backend (table mode) and started again on the same port and data directory. During the outage no
 * write is acknowledged and, once the pool has dropped its dead connections, every write answers 503 with
 * {@code Retry-After}; after the restart writes succeed again without touching the proxy; the whole history is
 * checked against the rows (and their order of application) read back from the database.
 */
class PostgresRestartIT {
    static final int WRITERS = 8;
    static final List<String> IDS = List.of("a", "b");
    static final String DDL = PostgresRacingWritersIT.DDL;
    static final String POLICY = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: docs
                match: {path: "/docs/{id}", methods: [PUT]}
                scope: docs/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres, pool-size: 8, connect-timeout: 500ms,
                               statement-timeout: 2s}
                  fence: table
                  params: {content: body-text}
                  statements:
                    PUT: "INSERT INTO docs (id, content) VALUES (:scope, :content) \
            ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content"
            """;

    /** What one write was told, and when (nanoTime). */
    record Answer(long start, long end, int status, boolean retryAfter, String error) {
    }

    @TempDir
    Path dir;

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void writesAnswer503DuringTheOutageNothingStaleIsAcceptedAndServiceResumesByItself() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.POSTGRES_CLUSTER);
        try (PgCluster cluster = PgCluster.create()) {
            Pg pg = Pg.create(cluster.url(), DDL);
            History history = new History();
            ConcurrentLinkedQueue<Answer> answers = new ConcurrentLinkedQueue<>();
            AtomicBoolean running = new AtomicBoolean(true);
            ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
                Map<String, AtomicLong> leases = new HashMap<>();
                IDS.forEach(id -> leases.put(id, new AtomicLong(1)));
                List<Future<?>> writers = new ArrayList<>();
                for (int w = 0; w < WRITERS; w++) {
                    int writer = w;
                    writers.add(pool.submit(() -> {
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        for (int n = 0; running.get(); n++) {
                            String id = IDS.get(random.nextInt(IDS.size()));
                            AtomicLong lease = leases.get(id);
                            double dice = random.nextDouble();
                            long token = dice < 0.25 ? lease.incrementAndGet()
                                    : dice < 0.40 ? Math.max(0, lease.get() - 1 - random.nextInt(3))
                                    : lease.get();
                            String value = "w" + writer + "-n" + n + "-t" + token + "-" + UUID.randomUUID();
                            History.Op op = history.invoke("docs/" + id, token, value);
                            long start = System.nanoTime();
                            try {
                                Http.Response r = Http.put(proxy.uri("/docs/" + id), value,
                                        Map.of("Fencing-Token", Long.toString(token)));
                                op.complete(r.status()); // 2xx OK, 409 FAIL, 503/504 UNKNOWN (conservative)
                                answers.add(new Answer(start, System.nanoTime(), r.status(),
                                        r.header("Retry-After").isPresent(), r.status() >= 500 ? r.body() : null));
                            } catch (Exception e) {
                                op.unknown(e.toString());
                                answers.add(new Answer(start, System.nanoTime(), 0, false, e.toString()));
                            }
                        }
                        return null;
                    }));
                }

                // writes are acknowledged before the outage (waited for, not slept on: a loaded machine's first
                // writes take their time), then a little more history
                long acknowledged = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (answers.stream().noneMatch(a -> a.status() == 200) && System.nanoTime() < acknowledged) {
                    Thread.sleep(50);
                }
                assertTrue(answers.stream().anyMatch(a -> a.status() == 200), "no write succeeded before the "
                        + "outage: " + summary(answers, 0, Long.MAX_VALUE));
                Thread.sleep(500);

                        cluster.stopImmediate();
                long stopped = System.nanoTime();
                Thread.sleep(3000);
                long restarting = System.nanoTime();
                cluster.start();
                long restarted = System.nanoTime();

                // resumes by itself: a write sent after the restart succeeds within 15 s of it
                long deadline = restarted + TimeUnit.SECONDS.toNanos(15);
                while (System.nanoTime() < deadline
                        && answers.stream().noneMatch(a -> a.start() > restarted && a.status() == 200)) {
                    Thread.sleep(50);
                }
                Answer firstAfter = answers.stream().filter(a -> a.start() > restarted && a.status() == 200)
                        .min((x, y) -> Long.compare(x.end(), y.end())).orElse(null);
                Thread.sleep(1000);
                running.set(false);
                for (Future<?> f : writers) {
                    f.get(30, TimeUnit.SECONDS);
                }

                assertTrue(firstAfter != null, "no write succeeded within 15 s of the restart: "
                        + summary(answers, restarted, Long.MAX_VALUE) + "\n" + cluster.serverLog());
                System.out.printf("PostgresRestartIT: first write accepted %d ms after the restart%n",
                        (firstAfter.end() - restarted) / 1_000_000);

                // sent and answered while the server was down: none acknowledged, each 503 or 504 (a write
                // already on a connection the stop killed: outcome unknown); writes straddling the stop or the
                // restart may succeed, and the history check judges them
                List<Answer> outage = answers.stream().filter(a -> a.start() >= stopped && a.end() <= restarting)
                        .toList();
                assertTrue(outage.size() >= WRITERS, "too few writes during the outage: " + outage.size());
                for (Answer a : outage) {
                    assertTrue(a.status() == 503 || a.status() == 504, "during the outage: " + a);
                }
                // once the pool has noticed (1 s), every write is refused with 503 and Retry-After
                long settled = stopped + TimeUnit.SECONDS.toNanos(1);
                List<Answer> refused = outage.stream().filter(a -> a.start() >= settled).toList();
                assertTrue(!refused.isEmpty(), "no write started during the settled outage");
                for (Answer a : refused) {
                    assertEquals(503, a.status(), "a write during the outage: " + a);
                    assertTrue(a.retryAfter(), "503 without Retry-After: " + a);
                }
            } finally {
                running.set(false);
                pool.shutdownNow();
                pool.awaitTermination(15, TimeUnit.SECONDS);
            }

            Map<String, String> last = new HashMap<>();
            Map<String, List<String>> applied = new HashMap<>();
            for (String id : IDS) {
                last.put("docs/" + id, pg.single("SELECT content FROM docs WHERE id = ?", "docs/" + id).orElse(null));
                applied.put("docs/" + id, pg.column("SELECT content FROM docs_log WHERE id = ? ORDER BY seq",
                        "docs/" + id));
            }
            HistoryChecker.Result result = HistoryChecker.check(history, last, applied);
            assertTrue(result.ok(), result.toString());
            System.out.println("PostgresRestartIT: " + summary(answers, 0, Long.MAX_VALUE));
        }
    }

    private static String summary(Iterable<Answer> answers, long from, long to) {
        Map<Integer, Integer> byStatus = new java.util.TreeMap<>();
        String error = null;
        for (Answer a : answers) {
            if (a.start() >= from && a.start() <= to) {
                byStatus.merge(a.status(), 1, Integer::sum);
                if (a.error() != null && error == null) {
                    error = a.error();
                }
            }
        }
        return "answers by status " + byStatus + (error == null ? "" : "; first error: " + error);
    }
}
