package io.stockade.bench;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.LongAdder;

import io.stockade.policy.Datasource;
import io.stockade.policy.Policy;
import io.stockade.proxy.postgres.PostgresPools;

import com.zaxxer.hikari.HikariDataSource;
import io.helidon.dbclient.DbClient;
import io.helidon.dbclient.DbTransaction;
import io.helidon.dbclient.jdbc.JdbcClientBuilder;
import io.helidon.dbclient.jdbc.JdbcConnectionPool;

/**
 * The postgres backend's fenced write (the fence call, then {@code UPDATE accounts SET balance = ? WHERE id = ?}, in
 * one transaction) three ways, on one pool, alternating in one run, with the same writers on the same rows:
 * <ul>
 *   <li>{@code jdbc-separate}: what the backend sends by default — the fence call and the statement as one pgjdbc
 *   multi-statement (one round trip, BEGIN pipelined), then COMMIT (a second);</li>
 *   <li>{@code jdbc-pipelined}: {@code commit: pipelined} — COMMIT in the same multi-statement (one round trip);</li>
 *   <li>{@code dbclient}: Helidon DbClient 4.5 over the same HikariCP pool — {@code transaction()}, {@code get} of
 *   the fence call, {@code update}, {@code commit()}: DbClient runs one statement per call, so three round
 *   trips.</li>
 * </ul>
 * The client runs in this JVM, so what is compared is the database access layer alone (no HTTP). Run by
 * {@code bench/dbclient.sh}; prints writes/s per way and the ratio to {@code jdbc-separate}.
 *
 * <p>Arguments: {@code jdbc-url writers seconds repeats}.
 */
public final class DbClientComparison {
    private static final int ROWS = 64;
    private static final String FENCE = "SELECT stockade_fence(?, ?, ?, ?)";
    private static final String UPDATE = "UPDATE accounts SET balance = ? WHERE id = ?";

    private DbClientComparison() {
    }

    /** One way of sending the write. */
    private interface Way {
        void write(String id, long balance) throws Exception;
    }

    public static void main(String[] args) throws Exception {
        String url = args.length > 0 ? args[0] : "jdbc:postgresql://127.0.0.1:5432/stockade_bench";
        int writers = args.length > 1 ? Integer.parseInt(args[1]) : 8;
        Duration each = Duration.ofSeconds(args.length > 2 ? Long.parseLong(args[2]) : 8);
        int repeats = args.length > 3 ? Integer.parseInt(args[3]) : 2;
        Datasource ds = new Datasource(url, "postgres", null, null, writers, Datasource.DEFAULT_STATEMENT_TIMEOUT,
                Datasource.DEFAULT_CONNECT_TIMEOUT);
        try (HikariDataSource pool = PostgresPools.open(ds, "bench", false)) {
            PostgresPools.prepare(pool, true, url);
            try (Connection c = pool.getConnection(); Statement s = c.createStatement()) {
                s.execute("DROP TABLE IF EXISTS accounts");
                s.execute("CREATE TABLE accounts (id text PRIMARY KEY, balance bigint NOT NULL)");
                s.execute("INSERT INTO accounts SELECT 'acc' || i, 0 FROM generate_series(0, " + (ROWS - 1) + ") i");
            }
            JdbcConnectionPool connections = () -> {
                try {
                    return pool.getConnection();
                } catch (SQLException e) {
                    throw new IllegalStateException(e);
                }
            };
            try (DbClient db = JdbcClientBuilder.create().connectionPool(connections).build()) {
                Map<String, Way> ways = new LinkedHashMap<>();
                ways.put("jdbc-separate", (id, n) -> jdbc(pool, id, n, false));
                ways.put("jdbc-pipelined", (id, n) -> jdbc(pool, id, n, true));
                ways.put("dbclient", (id, n) -> dbClient(db, id, n));
                Map<String, List<Double>> rates = new LinkedHashMap<>();
                ways.keySet().forEach(k -> rates.put(k, new ArrayList<>()));
                for (Map.Entry<String, Way> w : ways.entrySet()) { // warm-up: the JIT and the statement caches
                    run(w.getValue(), writers, Duration.ofSeconds(5));
                }
                for (int r = 0; r < repeats; r++) {
                    List<String> order = new ArrayList<>(ways.keySet());
                    if (r % 2 == 1) {
                        Collections.reverse(order);
                    }
                    for (String way : order) { // order holds ways' keys, rates has a list for each
                        double rate = run(Objects.requireNonNull(ways.get(way)), writers, each);
                        Objects.requireNonNull(rates.get(way)).add(rate);
                        System.out.printf("%-15s run %d: %8.0f writes/s%n", way, r + 1, rate);
                    }
                }
                double base = median(Objects.requireNonNull(rates.get("jdbc-separate")));
                System.out.printf("%nwriters=%d, %ds x %d each, medians:%n", writers, each.toSeconds(), repeats);
                for (Map.Entry<String, List<Double>> e : rates.entrySet()) {
                    double m = median(e.getValue());
                    System.out.printf("%-15s %8.0f writes/s  %.2fx jdbc-separate%n", e.getKey(), m, m / base);
                }
            }
        }
    }

    private static void jdbc(HikariDataSource pool, String id, long n, boolean pipelined) throws SQLException {
        try (Connection c = pool.getConnection()) {
            c.setAutoCommit(false);
            try (PreparedStatement ps = c.prepareStatement(FENCE + ";\n" + UPDATE + (pipelined ? ";\nCOMMIT" : ""))) {
                ps.setString(1, "accounts/" + id);
                ps.setLong(2, 7);
                ps.setBoolean(3, true);
                ps.setLong(4, Policy.Fence.UNLIMITED);
                ps.setLong(5, n);
                ps.setString(6, id);
                ps.execute();
                while (ps.getMoreResults() || ps.getUpdateCount() != -1) {
                    // read every result, as the backend does
                }
            }
            if (!pipelined) {
                c.commit();
            }
            c.rollback(); // nothing is sent: no transaction is open
            c.setAutoCommit(true);
        }
    }

    private static void dbClient(DbClient db, String id, long n) {
        DbTransaction tx = db.transaction();
        try {
            tx.get(FENCE, "accounts/" + id, 7L, true, Policy.Fence.UNLIMITED);
            tx.update(UPDATE, n, id);
            tx.commit();
        } catch (RuntimeException e) {
            tx.rollback();
            throw e;
        }
    }

    /** Writers on random rows for {@code d}; writes per second. */
    private static double run(Way way, int writers, Duration d) throws InterruptedException {
        LongAdder done = new LongAdder();
        long end = System.nanoTime() + d.toNanos();
        List<Thread> threads = new ArrayList<>();
        List<Exception> failures = new CopyOnWriteArrayList<>();
        long start = System.nanoTime();
        for (int i = 0; i < writers; i++) {
            threads.add(Thread.ofPlatform().start(() -> {
                ThreadLocalRandom random = ThreadLocalRandom.current();
                while (System.nanoTime() < end && failures.isEmpty()) {
                    try {
                        way.write("acc" + random.nextInt(ROWS), random.nextLong(1, 1_000_000_000));
                        done.increment();
                    } catch (Exception e) {
                        failures.add(e);
                    }
                }
            }));
        }
        for (Thread t : threads) {
            t.join();
        }
        if (!failures.isEmpty()) {
            throw new IllegalStateException("a write failed", failures.getFirst());
        }
        return done.sum() / ((System.nanoTime() - start) / 1e9);
    }

    private static double median(List<Double> xs) {
        List<Double> s = new ArrayList<>(xs);
        s.sort(Double::compare);
        return s.get(s.size() / 2);
    }
}
