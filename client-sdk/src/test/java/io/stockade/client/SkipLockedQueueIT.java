package io.stockade.client;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The guide's "no lock needed" queue (docs/locks-guide.md): workers claim jobs with FOR UPDATE SKIP LOCKED; every
 * job is done exactly once, without any lock service, against the real PostgreSQL.
 */
class SkipLockedQueueIT {

    private static final String CLAIM = """
            UPDATE guide_jobs SET state = 'done', done_by = ?
             WHERE id = (SELECT id FROM guide_jobs WHERE state = 'queued'
                          ORDER BY id FOR UPDATE SKIP LOCKED LIMIT 1)
            RETURNING id""";

    @Test
    void fourWorkersDoEveryJobExactlyOnce() throws Exception {
        try (Connection c = DriverManager.getConnection(PostgresLeaseIT.URL); Statement s = c.createStatement()) {
            s.execute("DROP TABLE IF EXISTS guide_jobs");
            s.execute("CREATE TABLE guide_jobs (id bigserial PRIMARY KEY, state text NOT NULL DEFAULT 'queued', "
                    + "done_by int)");
            s.execute("INSERT INTO guide_jobs (state) SELECT 'queued' FROM generate_series(1, 400)");
        }
        Map<Long, Integer> doneBy = new ConcurrentHashMap<>();
        AtomicInteger duplicates = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(4);
        List<Future<?>> workers = new ArrayList<>();
        for (int w = 0; w < 4; w++) {
            int worker = w;
            workers.add(pool.submit(() -> {
                try (Connection c = DriverManager.getConnection(PostgresLeaseIT.URL)) {
                    c.setAutoCommit(false);
                    while (true) {
                        try (PreparedStatement ps = c.prepareStatement(CLAIM)) {
                            ps.setInt(1, worker);
                            try (ResultSet rs = ps.executeQuery()) {
                                if (!rs.next()) {
                                    c.commit();
                                    return null;
                                }
                                // the job's work happens here, inside the transaction that holds the row
                                if (doneBy.put(rs.getLong(1), worker) != null) {
                                    duplicates.incrementAndGet();
                                }
                            }
                        }
                        c.commit();
                    }
                }
            }));
        }
        for (Future<?> f : workers) {
            f.get();
        }
        pool.shutdown();
        assertEquals(400, doneBy.size());
        assertEquals(0, duplicates.get());
        try (Connection c = DriverManager.getConnection(PostgresLeaseIT.URL); Statement s = c.createStatement();
             ResultSet rs = s.executeQuery("SELECT count(*) FROM guide_jobs WHERE state <> 'done'")) {
            rs.next();
            assertEquals(0, rs.getInt(1));
            s.execute("DROP TABLE guide_jobs");
        }
    }
}
