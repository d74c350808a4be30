package io.stockade.proxy.backend.postgres;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.policy.Datasource;
import io.stockade.policy.StoreConfig;
import io.stockade.proxy.PostgresStoreReplicas;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.VerifiedFiles;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.store.postgres.PostgresFenceStore;
import io.stockade.proxy.testing.Racers;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.PgBouncer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every PostgreSQL client of the proxy through Debian's PgBouncer in transaction pooling with two server
 * connections shared by all clients, the way most teams reach PostgreSQL, whatever {@code prepareThreshold} the
 * policy's URL gives: the postgres backend's in-order writers (every genuine write lands, every statement of it),
 * racing writers in both fence modes, the postgres fence store under two proxy processes, and the
 * {@code kind: postgres} verifier. A named server-side statement (pgjdbc's default from the fifth execution)
 * fails here: missing on the next server connection, already there, or another client's run with these parameters.
 * The atomicity shapes run through PgBouncer in {@code PostgresAtomicWritesIT}.
 */
@RequiresTools(Tools.Tool.PGBOUNCER)
class PgBouncerIT {
    static final int WRITERS = 8;
    static final int WRITES = 30;
    /** What a user may have written: pgjdbc would name statements from their second execution. */
    static final String EAGER = "?prepareThreshold=1";

    @TempDir
    Path dir;

    static final String ACCOUNTS = """
            CREATE TABLE acct (id text PRIMARY KEY, balance numeric NOT NULL);
            CREATE TABLE log (seq bigserial PRIMARY KEY, acct text NOT NULL, amount numeric NOT NULL);
            """;

    /** Two statements of the same arity: a Bind meant for one runs the other if names are mixed up. */
    static String accounts(String commit) {
        return """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: acct
                    match: {path: "/acct/{id}", methods: [PUT]}
                    scope: acct/{id}
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 8}
                      commit: COMMIT
                      params:
                        id: path
                        balance: {from: body, type: number}
                        amount: {from: body, type: number}
                      statements:
                        PUT:
                          - {name: balance, sql: "UPDATE acct SET balance = :balance WHERE id = :id"}
                          - {name: log, sql: "INSERT INTO log (acct, amount) VALUES (:id, :amount)"}
                """.replace("COMMIT", commit);
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void everyInOrderWriteOfTwoStatementsLandsWholeThroughTransactionPooling() throws Exception {
        for (String commit : List.of("separate", "pipelined")) {
            StringBuilder seed = new StringBuilder(ACCOUNTS);
            for (int w = 0; w < WRITERS; w++) {
                seed.append("INSERT INTO acct VALUES ('a").append(w).append("', 0);\n");
            }
            try (Pg pg = Pg.create(seed.toString()); PgBouncer bouncer = PgBouncer.transaction(pg);
                 ProxyFixture proxy = ProxyFixture.start(dir.resolve("j-" + commit), accounts(commit),
                         Map.of("PG_URL", bouncer.base() + EAGER))) {
                List<String> failures = Collections.synchronizedList(new ArrayList<>());
                ExecutorService pool = Executors.newFixedThreadPool(WRITERS);
                try {
                    List<Future<?>> runs = new ArrayList<>();
                    for (int w = 0; w < WRITERS; w++) {
                        String id = "a" + w;
                        runs.add(pool.submit(() -> {
                            for (int n = 1; n <= WRITES; n++) {
                                Http.Response r = Http.put(proxy.uri("/acct/" + id),
                                        "{\"balance\": " + n + ", \"amount\": " + n + "}",
                                        Map.of("Fencing-Token", Integer.toString(n)));
                                if (r.status() != 200) {
                                    failures.add(id + " write " + n + ": " + r.status() + " " + r.body());
                                }
                            }
                            return null;
                        }));
                    }
                    for (Future<?> f : runs) {
                        f.get();
                    }
                } finally {
                    pool.shutdownNow();
                }
                assertEquals(List.of(), failures, commit + ": genuine in-order writes refused\n" + bouncer.log());
                for (int w = 0; w < WRITERS; w++) {
                    String id = "a" + w;
                    // every acknowledged write's two statements took effect: one log row each, in order
                    List<String> logged = pg.column("SELECT amount::text FROM log WHERE acct = ? ORDER BY seq", id);
                    List<String> expected = new ArrayList<>();
                    for (int n = 1; n <= WRITES; n++) {
                        expected.add(Integer.toString(n));
                    }
                    assertEquals(expected, logged, commit + ": " + id + "'s log rows");
                    assertEquals(List.of(Integer.toString(WRITES)),
                            pg.column("SELECT balance::text FROM acct WHERE id = ?", id), commit + ": " + id);
                    assertEquals(WRITES, pg.fence("acct/" + id).orElseThrow(), commit + ": " + id + "'s fence");
                }
                assertEquals(List.of("0"), pg.column("SELECT count(*)::text FROM pg_prepared_statements"));
            }
        }
    }

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void racingWritersThroughTransactionPoolingInBothFenceModes() throws Exception {
        for (String mode : List.of("table", "column")) {
            try (Pg pg = Pg.create(PostgresRacingWritersIT.DDL); PgBouncer bouncer = PgBouncer.transaction(pg);
                 ProxyFixture proxy = ProxyFixture.start(dir.resolve("r-" + mode),
                         PostgresRacingWritersIT.policy(mode), Map.of("PG_URL", bouncer.base() + EAGER))) {
                List<String> ids = List.of("a", "b", "c");
                History history = PostgresRacingWritersIT.race(proxy, ids);
                Map<String, String> last = new HashMap<>();
                Map<String, List<String>> applied = new HashMap<>();
                for (String id : ids) {
                    last.put("docs/" + id,
                            pg.single("SELECT content FROM docs WHERE id = ?", "docs/" + id).orElse(null));
                    applied.put("docs/" + id,
                            pg.column("SELECT content FROM docs_log WHERE id = ? ORDER BY seq", "docs/" + id));
                }
                HistoryChecker.Result result = HistoryChecker.check(history, last, applied);
                assertTrue(result.ok(), mode + ": " + result);
                assertDefinite(history, mode);
            }
        }
    }

    @Test
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void twoReplicasOnThePostgresStoreThroughTransactionPooling() throws Exception {
        try (Pg pg = Pg.create(""); PgBouncer bouncer = PgBouncer.transaction(pg);
             TestUpstream upstream = TestUpstream.start()) {
            // both replicas migrate the fence table at start, through the pooler
            List<ChildProxy> replicas = PostgresStoreReplicas.start(dir, bouncer.base() + EAGER, upstream,
                    "conditional: if-match");
            try {
                History history = new History();
                Racers.raceOnReplicas(history, "docs/race",
                        i -> replicas.get(i % PostgresStoreReplicas.REPLICAS).baseUri().resolve("/docs/race"));
                PostgresStoreReplicas.check(history, upstream, pg, List.of("docs/race"));
                assertDefinite(history, "two replicas");
            } finally {
                replicas.forEach(ChildProxy::close);
            }
        }
    }

    /**
     * The store's export (a fetch-size cursor in one transaction) reads every scope, from two proxies' pools
     * taking turns on the pooler's server connections: the cursor runs from the unnamed statement too.
     */
    @Test
    void theFenceStoresExportThroughTransactionPooling() throws Exception {
        try (Pg pg = Pg.create(""); PgBouncer bouncer = PgBouncer.transaction(pg)) {
            Datasource ds = new Datasource(bouncer.base(), "postgres", null, null, 1, Duration.ofSeconds(5),
                    Duration.ofSeconds(10));
            StoreConfig.Postgres config = new StoreConfig.Postgres(ds, true, StoreConfig.Cache.OFF);
            try (PostgresFenceStore one = PostgresFenceStore.open(config);
                 PostgresFenceStore two = PostgresFenceStore.open(config)) {
                pg.execute("INSERT INTO stockade_fences (scope, token, updated_at) SELECT 's/' || lpad(i::text, 5,"
                        + " '0'), i, now() FROM generate_series(1, 2500) i");
                for (int round = 0; round < 6; round++) {
                    List<FenceAdmin.ScopeEntry> all = new ArrayList<>();
                    (round % 2 == 0 ? one : two).forEachScope(all::add);
                    assertEquals(2500, all.size(), "round " + round);
                    for (int i = 0; i < all.size(); i++) {
                        assertEquals(String.format("s/%05d", i + 1), all.get(i).scope());
                        assertEquals(i + 1, all.get(i).token());
                    }
                }
            }
        }
    }

    /**
     * The SDK's lease table; four holders, each on its own file, take a new lease token before each of 15 writes,
     * so every write is verified by a lookup (60 in all); then an invented token is still refused.
     */
    @Test
    void theVerifierLooksUpEveryWriteThroughTransactionPooling() throws Exception {
        try (Pg pg = Pg.create("""
                CREATE TABLE stockade_leases (name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL,
                    expires_at timestamptz NOT NULL);
                INSERT INTO stockade_leases SELECT 'files/f' || i, 'w' || i, 0, now() + interval '10 min'
                    FROM generate_series(0, 3) i;
                """); PgBouncer bouncer = PgBouncer.transaction(pg);
             ProxyFixture proxy = VerifiedFiles.start(dir, "kind: postgres\ndatasource: {url: \"${PG}\","
                     + " user: postgres, pool-size: 4}\ncache: {enabled: false}",
                     Map.of("PG", bouncer.base() + EAGER))) {
            List<String> failures = Collections.synchronizedList(new ArrayList<>());
            ExecutorService pool = Executors.newFixedThreadPool(4);
            try {
                List<Future<?>> runs = new ArrayList<>();
                for (int t = 0; t < 4; t++) {
                    String file = "f" + t;
                    runs.add(pool.submit(() -> {
                        for (int n = 1; n <= 15; n++) {
                            pg.execute("UPDATE stockade_leases SET token = " + n + " WHERE name = 'files/" + file
                                    + "'");
                            Http.Response r = VerifiedFiles.put(proxy, file, "v" + n, n);
                            if (r.status() / 100 != 2) {
                                failures.add(file + " token " + n + ": " + r.status() + " " + r.body());
                            }
                        }
                        return null;
                    }));
                }
                for (Future<?> f : runs) {
                    f.get();
                }
            } finally {
                pool.shutdownNow();
            }
            assertEquals(List.of(), failures, "the holders' writes\n" + bouncer.log());
            // an invented token is still refused by the lookup, nothing written
            assertEquals(403, VerifiedFiles.put(proxy, "f0", "evil", 16).status());
            assertEquals("v15", VerifiedFiles.stored(dir, "f0").orElseThrow());
            assertEquals(15, proxy.server().store().get("files/f0").orElseThrow().token());
        }
    }

    /**
     * Statement pooling: each statement on whichever server connection is free, no transaction block allowed. The
     * verifier's lookups (single autocommit statements) work; the postgres backend's write of two statements, one
     * transaction, is refused by the pooler: every write fails closed (nothing written, the fence unmoved), never
     * half-applied. A write of one statement sent with its fence ({@code one-statement: true}) is one
     * autocommit statement: served, fenced (a stale token refused).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void statementPoolingServesTheVerifierAndFailsTheBackendClosed() throws Exception {
        try (Pg pg = Pg.create("""
                CREATE TABLE stockade_leases (name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL,
                    expires_at timestamptz NOT NULL);
                INSERT INTO stockade_leases VALUES ('files/f', 'w', 3, now() + interval '10 min');
                """ + ACCOUNTS + "INSERT INTO acct VALUES ('a0', 0);");
             PgBouncer bouncer = PgBouncer.start(pg, "statement", 2)) {
            try (ProxyFixture proxy = VerifiedFiles.start(dir.resolve("v"), "kind: postgres\ndatasource: {url:"
                    + " \"${PG}\", user: postgres, pool-size: 4}\ncache: {enabled: false}",
                    Map.of("PG", bouncer.base() + EAGER))) {
                for (int n = 0; n < 20; n++) {
                    Http.Response r = VerifiedFiles.put(proxy, "f", "v" + n, 3);
                    assertTrue(r.status() / 100 == 2, r.status() + " " + r.body());
                }
                assertEquals(403, VerifiedFiles.put(proxy, "f", "evil", 4).status());
            }
            // the fence table exists already (migrate: true is a transaction, which statement pooling refuses)
            try (PgBouncer tx = PgBouncer.transaction(pg);
                 ProxyFixture migrate = ProxyFixture.start(dir.resolve("m"), accounts("separate"),
                         Map.of("PG_URL", tx.base()))) {
                assertEquals(0, pg.column("SELECT scope FROM stockade_fences").size());
            }
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("s"),
                    accounts("separate").replace("commit: separate", "commit: separate\n      migrate: false"),
                    Map.of("PG_URL", bouncer.base()))) {
                for (int n = 1; n <= 3; n++) {
                    Http.Response r = Http.put(proxy.uri("/acct/a0"), "{\"balance\": " + n + ", \"amount\": 1}",
                            Map.of("Fencing-Token", Integer.toString(n)));
                    assertEquals(503, r.status(), r.body());
                }
                assertEquals(List.of("0"), pg.column("SELECT balance::text FROM acct WHERE id = 'a0'"));
                assertEquals(List.of(), pg.column("SELECT amount::text FROM log"));
                assertEquals(0, pg.column("SELECT scope FROM stockade_fences").size());
            }
            // the same policy with its first statement only (the "amount" parameter goes with the second)
            String oneStatement = accounts("separate")
                    .replace("commit: separate", "migrate: false\n      one-statement: true").lines()
                    .filter(l -> !l.contains("name: log") && !l.contains("amount:"))
                    .collect(Collectors.joining("\n", "", "\n"));
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("o"), oneStatement,
                    Map.of("PG_URL", bouncer.base()))) {
                Http.Response r = Http.put(proxy.uri("/acct/a0"), "{\"balance\": 5}", Map.of("Fencing-Token", "5"));
                assertEquals(200, r.status(), r.body());
                r = Http.put(proxy.uri("/acct/a0"), "{\"balance\": 4}", Map.of("Fencing-Token", "4"));
                assertEquals(409, r.status(), r.body());
                assertEquals(List.of("5"), pg.column("SELECT balance::text FROM acct WHERE id = 'a0'"));
                assertEquals(List.of("5"), pg.column("SELECT token::text FROM stockade_fences"));
            }
        }
    }

    /** Every answer was definite: acknowledged, or refused as stale (no 502/503/504 from the database path). */
    static void assertDefinite(History history, String what) {
        List<String> unknown = history.ops().stream().filter(o -> o.outcome() == History.Outcome.UNKNOWN)
                .map(Object::toString).toList();
        assertEquals(List.of(), unknown, what + ": answers neither acknowledged nor refused as stale");
    }
}
