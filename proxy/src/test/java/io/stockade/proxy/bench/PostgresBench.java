package io.stockade.proxy.bench;

import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Pg;

/**
 * Fenced writes through the proxy (postgres backend, fence: table) against the same bare UPDATE over JDBC, at the
 * same concurrency, in one run. Not a test: run {@code bench/postgres.sh} (or this main with the test class path).
 * <p>
 * Each writer owns one account row (its own scope) and keeps its token, so the fence accepts every write: the
 * figure is the cost of the fence and the proxy, not of contention. The bare writer uses its own connection and a
 * prepared, autocommit {@code UPDATE} (one round trip, durable commit), like pgbench's simple update.
 * Arguments: {@code [writers=16] [seconds=10] [warmupSeconds=3]}.
 */
public final class PostgresBench {
    private PostgresBench() {
    }

    public static void main(String[] args) throws Exception {
        int writers = args.length > 0 ? Integer.parseInt(args[0]) : 16;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 10;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 3;
        StringBuilder ddl = new StringBuilder("CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL);");
        for (int i = 0; i < writers; i++) {
            ddl.append("INSERT INTO accounts VALUES ('acc").append(i).append("', 0);");
        }
        String yaml = """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: balance
                    match: {path: "/accounts/{id}/balance", methods: [PUT]}
                    scope: accounts/{id}
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: POOL}
                      params:
                        id: path
                        balance: {from: body, type: integer}
                      statements:
                        PUT: UPDATE accounts SET balance = :balance WHERE id = :id
                """.replace("POOL", Integer.toString(writers));
        Path journal = Files.createTempDirectory("stockade-bench-");
        try (Pg pg = Pg.create(ddl.toString());
             ProxyFixture proxy = ProxyFixture.start(journal.resolve("j"), yaml, Map.of("PG_URL", pg.url()))) {
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            Writer viaProxy = (w, n) -> {
                HttpRequest req = HttpRequest.newBuilder(proxy.uri("/accounts/acc" + w + "/balance"))
                        .PUT(HttpRequest.BodyPublishers.ofString("{\"balance\": " + n + "}"))
                        .header("Fencing-Token", "7").build();
                HttpResponse<String> r = client.send(req, HttpResponse.BodyHandlers.ofString());
                if (r.statusCode() != 200) {
                    throw new IllegalStateException(r.statusCode() + " " + r.body());
                }
            };
            WriterFactory bare = w -> {
                Connection c = pg.connect();
                PreparedStatement ps = c.prepareStatement("UPDATE accounts SET balance = ? WHERE id = ?");
                return (ww, n) -> {
                    ps.setLong(1, n);
                    ps.setString(2, "acc" + ww);
                    if (ps.executeUpdate() != 1) {
                        throw new IllegalStateException("no row");
                    }
                };
            };
            // what the backend sends: autocommit off, the fence call and the statement in one go, then COMMIT
            WriterFactory fencedSql = w -> {
                Connection c = pg.connect();
                c.setAutoCommit(false);
                PreparedStatement ps = c.prepareStatement("SELECT stockade_fence(?, ?, ?, ?);\n"
                        + "UPDATE accounts SET balance = ? WHERE id = ?");
                return (ww, n) -> {
                    ps.setString(1, "accounts/acc" + ww);
                    ps.setLong(2, 7);
                    ps.setBoolean(3, true);
                    ps.setLong(4, Long.MAX_VALUE); // no max-advance
                    ps.setLong(5, n);
                    ps.setString(6, "acc" + ww);
                    ps.execute();
                    while (ps.getMoreResults() || ps.getUpdateCount() != -1) {
                        // drain
                    }
                    c.commit();
                };
            };
            System.out.printf("PostgreSQL fenced write benchmark: %d writers, %d s measured after %d s warm-up%n",
                    writers, seconds, warmup);
            double bareRate = run("bare JDBC UPDATE", writers, seconds, warmup, bare);
            run("fenced SQL over JDBC (explicit transaction)", writers, seconds, warmup, fencedSql);
            run("HTTP only (GET /health)", writers, seconds, warmup, w -> (ww, n) -> client.send(
                    HttpRequest.newBuilder(proxy.uri("/health/live")).build(), HttpResponse.BodyHandlers.ofString()));
            double proxyRate = run("fenced via proxy", writers, seconds, warmup, w -> viaProxy);
            double bareAgain = run("bare JDBC UPDATE (again)", writers, seconds, warmup, bare);
            double bareMean = (bareRate + bareAgain) / 2;
            System.out.printf("ratio fenced/bare = %.2f (bare mean %.0f/s)%n", proxyRate / bareMean, bareMean);
        }
    }

    interface Writer {
        void write(int writer, long n) throws Exception;
    }

    interface WriterFactory {
        Writer open(int writer) throws Exception;
    }

    private static double run(String name, int writers, int seconds, int warmup, WriterFactory factory)
            throws Exception {
        AtomicBoolean measuring = new AtomicBoolean(false);
        AtomicBoolean stop = new AtomicBoolean(false);
        LongAdder done = new LongAdder();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            int writer = w;
            Writer write = factory.open(w);
            Thread t = new Thread(() -> {
                long n = 0;
                try {
                    while (!stop.get()) {
                        write.write(writer, n++);
                        if (measuring.get()) {
                            done.increment();
                        }
                    }
                } catch (Throwable e) {
                    synchronized (errors) {
                        errors.add(e);
                    }
                }
            });
            t.start();
            threads.add(t);
        }
        Thread.sleep(Duration.ofSeconds(warmup));
        measuring.set(true);
        long start = System.nanoTime();
        Thread.sleep(Duration.ofSeconds(seconds));
        measuring.set(false);
        long elapsed = System.nanoTime() - start;
        stop.set(true);
        for (Thread t : threads) {
            t.join();
        }
        if (!errors.isEmpty()) {
            throw new IllegalStateException(name + " failed", errors.getFirst());
        }
        double rate = done.sum() / (elapsed / 1e9);
        System.out.printf("%-26s %10.0f writes/s%n", name, rate);
        return rate;
    }
}
