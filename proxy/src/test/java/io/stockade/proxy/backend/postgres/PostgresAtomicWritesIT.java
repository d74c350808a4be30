package io.stockade.proxy.backend.postgres;

import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.PgBouncer;
import io.stockade.testing.Tools;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every statement of a postgres write and its fence bump commit together or not at all, whatever protocol the
 * driver picks. Each failing shape is sent {@value #REPEATS} times on a pool of exactly one connection, past the
 * {@code prepareThreshold} the URL gives (the datasource's {@code statements: auto}: named server-side statements
 * on this direct connection from the URL's threshold on, none through PgBouncer, which this checks in
 * {@code pg_prepared_statements}); after each request the tables and the fence row are compared with
 * what they were before (read directly from PostgreSQL), and a good write afterwards must land and move the fence.
 * Each shape runs as an explicit transaction (the default) and, for a route of one statement, as one statement with
 * its fence too ({@code table-one}, {@code table-one-p}: {@code one-statement: true}).
 * Run for the default driver settings, prepareThreshold 0, 1 and -1 (pgjdbc's "always, binary") in the URL, the
 * simple query protocol, {@code autosave=always}, and through PgBouncer in transaction pooling.
 */
class PostgresAtomicWritesIT {
    /** Past the largest threshold a URL here gives (pgjdbc's default, 5): each shape would be named by then. */
    static final int REPEATS = 7;
    static final String PGBOUNCER = "PgBouncer, transaction pooling, prepareThreshold=1";

    static final String DDL = """
            CREATE TABLE accounts (
                id          text PRIMARY KEY,
                owner       text NOT NULL UNIQUE,
                balance     numeric(14, 2) NOT NULL CHECK (balance >= 0),
                fence_token bigint NOT NULL DEFAULT 0);
            CREATE TABLE ledger (
                id      bigserial PRIMARY KEY,
                account text NOT NULL REFERENCES accounts (id),
                amount  numeric(14, 2) NOT NULL CHECK (amount < 1000000),
                memo    jsonb,
                note    text NOT NULL,
                tag     text UNIQUE,
                ref     text REFERENCES accounts (id),
                later   text REFERENCES accounts (id) DEFERRABLE INITIALLY DEFERRED,
                qty     integer,
                token   bigint);
            CREATE FUNCTION refuse(p text) RETURNS boolean LANGUAGE plpgsql AS $$
            BEGIN
                IF p = 'business' THEN
                    RAISE EXCEPTION 'insufficient funds' USING ERRCODE = 'check_violation';
                ELSIF p = 'plain' THEN
                    RAISE EXCEPTION 'refused by a plain RAISE';
                ELSIF p = 'divide' THEN
                    PERFORM 1 / 0;
                END IF;
                RETURN true;
            END $$;
            INSERT INTO accounts (id, owner, balance) VALUES
                ('acc-0', 'taken-owner', 0), ('acc-t', 'o-t', 1), ('acc-c', 'o-c', 1), ('acc-o', 'o-o', 1),
                ('acc-u', 'o-u', 1), ('acc-t1', 'o-t1', 1), ('acc-c1', 'o-c1', 1), ('acc-tp', 'o-tp', 1),
                ('acc-op', 'o-op', 1), ('acc-up', 'o-up', 1), ('acc-t1p', 'o-t1p', 1), ('acc-t1x', 'o-t1x', 1);
            CREATE FUNCTION refuse_at_commit() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN RAISE EXCEPTION 'refused at COMMIT' USING ERRCODE = 'check_violation'; END $$;
            CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER UPDATE ON accounts DEFERRABLE INITIALLY DEFERRED
                FOR EACH ROW WHEN (NEW.owner = 'refused-at-commit') EXECUTE FUNCTION refuse_at_commit();
            INSERT INTO ledger (account, amount, note, tag) VALUES ('acc-0', 0, 'seed', 'taken');
            """;

    /** The multi-statement write of table mode (also observe and unfenced runs). */
    static final String TABLE_STATEMENTS = """
                  statements:
                    PUT:
                      - {name: set-balance, sql: "UPDATE accounts SET balance = :balance WHERE id = :id \
            RETURNING id, balance"}
                      - {name: ledger, sql: "INSERT INTO ledger (account, amount, memo, note, tag, ref, later, qty) \
            VALUES (:id, :amount, :memo::jsonb, :note, :tag, :ref, :later, :qty) RETURNING id"}
                      - {name: rules, sql: "SELECT refuse(:raise) AS ok"}
            """;
    /** The same write in column mode: every statement uses the token. */
    static final String COLUMN_STATEMENTS = """
                  fence: column
                  statements:
                    PUT:
                      - {name: set-balance, sql: "UPDATE accounts SET balance = :balance, fence_token = :fencing_token \
            WHERE id = :id AND fence_token <= :fencing_token RETURNING id, balance"}
                      - {name: ledger, sql: "INSERT INTO ledger \
            (account, amount, memo, note, tag, ref, later, qty, token) \
            VALUES (:id, :amount, :memo::jsonb, :note, :tag, :ref, :later, :qty, :fencing_token) RETURNING id"}
                      - {name: rules, sql: "SELECT refuse(:raise) AS ok, :fencing_token::bigint AS token"}
                  check: SELECT fence_token FROM accounts WHERE id = :id
            """;
    static final String MULTI_PARAMS = """
                  body-limit: 2KiB
                  params:
                    id: path
                    balance: {from: body, type: number}
                    amount: {from: body, type: number}
                    memo: {from: body, type: json, nullable: true}
                    note: {from: body, nullable: true}
                    tag: {from: body, nullable: true}
                    ref: {from: body, nullable: true}
                    later: {from: body, nullable: true}
                    qty: {from: body, nullable: true}
                    raise: {from: body, nullable: true}
            """;
    static final String ONE_PARAMS = """
                  params:
                    id: path
                    owner: {from: body, nullable: true}
            """;

    static String policy(String name, String path, String fence, String params, String statements) {
        return """
                  - name: NAME
                    match: {path: "PATH", methods: [PUT]}
                    scope: accounts/{id}
                FENCE    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 1}
                """.replace("NAME", name).replace("PATH", path).replace("FENCE", fence)
                + params + statements;
    }

    /** {@code commit: pipelined}: COMMIT sent with the statements (table mode). */
    static final String PIPELINED = "      commit: pipelined\n";

    static String yaml() {
        return "store: {type: memory, journal: \"${JOURNAL}\"}\npolicies:\n"
                + policy("table", "/t/{id}", "", MULTI_PARAMS, TABLE_STATEMENTS)
                + policy("column", "/c/{id}", "", MULTI_PARAMS, COLUMN_STATEMENTS)
                + policy("observe", "/o/{id}", "    fence: {mode: observe}\n", MULTI_PARAMS, TABLE_STATEMENTS)
                + policy("unfenced", "/u/{id}", "    fence: {missing: allow}\n", MULTI_PARAMS, TABLE_STATEMENTS)
                // one statement sent with its fence as one (one-statement: true)
                + policy("table-one", "/t1/{id}", "", "      one-statement: true\n" + ONE_PARAMS, """
                              statements:
                                PUT: UPDATE accounts SET owner = :owner WHERE id = :id RETURNING id, owner
                        """)
                // the same one statement as an explicit transaction (the default)
                + policy("table-one-tx", "/t1x/{id}", "", ONE_PARAMS, """
                              statements:
                                PUT: UPDATE accounts SET owner = :owner WHERE id = :id RETURNING id, owner
                        """)
                + policy("table-p", "/tp/{id}", "", PIPELINED + MULTI_PARAMS, TABLE_STATEMENTS)
                + policy("observe-p", "/op/{id}", "    fence: {mode: observe}\n", PIPELINED + MULTI_PARAMS,
                        TABLE_STATEMENTS)
                + policy("unfenced-p", "/up/{id}", "    fence: {missing: allow}\n", PIPELINED + MULTI_PARAMS,
                        TABLE_STATEMENTS)
                + policy("table-one-p", "/t1p/{id}", "", PIPELINED + "      one-statement: true\n" + ONE_PARAMS,
                        """
                              statements:
                                PUT: UPDATE accounts SET owner = :owner WHERE id = :id RETURNING id, owner
                        """)
                + policy("column-one", "/c1/{id}", "", ONE_PARAMS, """
                              fence: column
                              statements:
                                PUT: >-
                                  UPDATE accounts SET owner = :owner, fence_token = :fencing_token
                                  WHERE id = :id AND fence_token <= :fencing_token RETURNING id, owner
                              check: SELECT fence_token FROM accounts WHERE id = :id
                        """);
    }

    /** A failing request: the body fields that differ from a good write, and the status it must answer. */
    record Shape(String name, Map<String, String> fields, int status) {
    }

    /** A good body with a token below the fence: refused (409) after the statements ran, in column mode. */
    static final Shape STALE = new Shape("stale token", Map.of(), 409);

    /** The multi-statement shapes: each fails in a different statement, at bind, execution or COMMIT. */
    static final List<Shape> MULTI = List.of(
            // (a jsonb \u0000 used to fail here; the binder now refuses it before anything runs)
            new Shape("numeric(14, 2) overflows (statement 2)", Map.of("amount", "1e20"), 400),
            new Shape("CHECK in statement 2", Map.of("amount", "2000000"), 422),
            new Shape("CHECK in statement 1", Map.of("balance", "-1"), 422),
            new Shape("foreign key", Map.of("ref", "\"nobody\""), 422),
            new Shape("NOT NULL", Map.of("note", "null"), 422),
            new Shape("unique violation", Map.of("tag", "\"taken\""), 409),
            new Shape("type error at bind (text into integer)", Map.of("qty", "\"abc\""), 400),
            new Shape("statement 3 raises check_violation", Map.of("raise", "\"business\""), 422),
            new Shape("statement 3 divides by zero", Map.of("raise", "\"divide\""), 400),
            // a plain RAISE (P0001) is mapped to 502 statement-failed, as any SQLSTATE the backend does not classify
            new Shape("statement 3 raises P0001", Map.of("raise", "\"plain\""), 502),
            new Shape("deferred foreign key, refused at COMMIT", Map.of("later", "\"nobody\""), 422));

    static final List<Shape> ONE = List.of(
            new Shape("unique violation", Map.of("owner", "\"taken-owner\""), 409),
            new Shape("NOT NULL", Map.of("owner", "null"), 422),
            new Shape("deferred trigger, refused at COMMIT", Map.of("owner", "\"refused-at-commit\""), 422));

    static String body(Map<String, String> fields) {
        StringBuilder b = new StringBuilder("{");
        fields.forEach((k, v) -> b.append(b.length() > 1 ? ", " : "").append('"').append(k).append("\": ").append(v));
        return b.append('}').toString();
    }

    static Map<String, String> good(long n) {
        Map<String, String> f = new LinkedHashMap<>();
        f.put("balance", Long.toString(n));
        f.put("amount", "1");
        f.put("memo", "{\"n\": " + n + "}");
        f.put("note", "\"n" + n + "\"");
        f.put("tag", "null");
        f.put("ref", "null");
        f.put("later", "null");
        f.put("qty", "\"3\"");
        f.put("raise", "null");
        return f;
    }

    @TempDir
    Path dir;

    /** A route under test: its policy, path, and the fence it holds now (-1: none, or unfenced). */
    static final class Route {
        final String policy;
        final String path;
        final boolean fenced;
        final boolean multi;
        long fence = -1;
        long next = 10;

        Route(String policy, String path, boolean fenced, boolean multi) {
            this.policy = policy;
            this.path = path;
            this.fenced = fenced;
            this.multi = multi;
        }
    }

    @ParameterizedTest(name = "driver settings: {0}")
    @ValueSource(strings = {"default", "prepareThreshold=0", "prepareThreshold=1", "prepareThreshold=-1",
            "preferQueryMode=simple", "autosave=always", PGBOUNCER})
    void everyFailingShapeLeavesRowsAndFenceAsTheyWereOnOneConnection(String driver) throws Exception {
        if (driver.equals(PGBOUNCER)) {
            Tools.require(Tools.Tool.PGBOUNCER);
        }
        try (Pg pg = Pg.create(DDL);
             Connection look = pg.connect();
             // one server connection for the one client connection: the same backend PID throughout
             PgBouncer bouncer = driver.equals(PGBOUNCER) ? PgBouncer.start(pg, "transaction", 1) : null) {
            String url = switch (driver) {
                case "default" -> pg.url();
                case PGBOUNCER -> bouncer.base() + "?prepareThreshold=1";
                default -> pg.url() + "&" + driver;
            };
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml(), Map.of("PG_URL", url))) {
                List<Route> routes = List.of(new Route("table", "/t/acc-t", true, true),
                        new Route("column", "/c/acc-c", true, true), new Route("observe", "/o/acc-o", true, true),
                        new Route("unfenced", "/u/acc-u", false, true),
                        new Route("table-one", "/t1/acc-t1", true, false),
                        new Route("table-one-tx", "/t1x/acc-t1x", true, false),
                        new Route("column-one", "/c1/acc-c1", true, false),
                        new Route("table-p", "/tp/acc-tp", true, true),
                        new Route("observe-p", "/op/acc-op", true, true),
                        new Route("unfenced-p", "/up/acc-up", false, true),
                        new Route("table-one-p", "/t1p/acc-t1p", true, false));
                for (Route route : routes) {
                    HikariDataSource pool = ((PostgresBackend) proxy.server().backend(route.policy)).pool();
                    goodWrite(proxy, look, route, pg);
                    int pid = backendPid(pool);
                    List<Shape> shapes = new ArrayList<>(route.multi ? MULTI : ONE);
                    if (route.fenced && !route.policy.startsWith("observe")) {
                        shapes.add(STALE);
                    }
                    for (Shape shape : shapes) {
                        List<String> before = snapshot(look);
                        for (int i = 0; i < REPEATS; i++) {
                            Map<String, String> fields = route.multi ? good(50 + i) : new LinkedHashMap<>(
                                    Map.of("owner", "\"owner-" + route.policy + "-" + i + "\""));
                            fields.putAll(shape.fields());
                            // above the fence, so a bump that leaked would show; below it for the stale shape
                            long token = shape == STALE ? route.fence - 1 : route.fence + 1 + i;
                            refused(proxy, look, route, shape.name() + ", request " + (i + 1), body(fields), token,
                                    shape.status(), before);
                        }
                        assertClean(pool, pid, route.policy + ", " + shape.name());
                        goodWrite(proxy, look, route, pg); // the positive control: lands, moves the fence
                    }
                    // past the URL's threshold: named statements on a direct connection (statements: auto), so
                    // every shape above ran named too; none through PgBouncer (safe behind a pooler) or with 0
                    boolean named = !driver.equals(PGBOUNCER) && !driver.equals("prepareThreshold=0")
                            && !driver.equals("preferQueryMode=simple");
                    assertEquals(named, preparedOnServer(pool) > 0, route.policy + ": named server-side statements");
                }
            }
        }
    }

    /**
     * Everything a client can get wrong in a body (its shape, a field's presence or type, its size) is refused
     * before the fence is touched; a value only the database refuses (out of a column's range) is refused inside
     * the write's transaction and rolled back with the fence bump. Either way the fence does not move.
     */
    @Test
    void aBadBodyNeverRaisesTheFence() throws Exception {
        Map<String, String> missing = good(1);
        missing.remove("balance");
        String goodBody = body(good(1));
        Map<String, String> cases = new LinkedHashMap<>();
        cases.put("not JSON", "balance=10");
        cases.put("a JSON array", "[1, 2]");
        cases.put("an empty body", "");
        cases.put("trailing text", goodBody + " x");
        cases.put("a duplicate field", goodBody.substring(0, goodBody.length() - 1) + ", \"balance\": 2}");
        cases.put("a bad escape", goodBody.replace("\"n1\"", "\"\\x\""));
        cases.put("a missing field", body(missing));
        cases.put("a number as text", body(with(good(1), "balance", "\"ten\"")));
        cases.put("null where not nullable", body(with(good(1), "balance", "null")));
        cases.put("a number for a string", body(with(good(1), "qty", "3")));
        cases.put("a NUL in a string (text cannot hold it)", body(with(good(1), "note", "\"a\\u0000b\"")));
        cases.put("a NUL in a jsonb string", body(with(good(1), "memo", "{\"a\": \"\\u0000\"}")));
        cases.put("a lone surrogate in a string", body(with(good(1), "note", "\"a\\ud800b\"")));
        cases.put("a number numeric cannot hold", body(with(good(1), "balance", "1e131072")));
        cases.put("over body-limit", body(with(good(1), "note", "\"" + "x".repeat(3000) + "\"")));
        cases.put("out of the column's range (the database refuses it)", body(with(good(1), "balance", "1e20")));
        Map<String, Integer> status = Map.of("over body-limit", 413);
        try (Pg pg = Pg.create(DDL);
             Connection look = pg.connect();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml(), Map.of("PG_URL", pg.url()))) {
            for (Route route : List.of(new Route("table", "/t/acc-t", true, true),
                    new Route("column", "/c/acc-c", true, true), new Route("observe", "/o/acc-o", true, true))) {
                HikariDataSource pool = ((PostgresBackend) proxy.server().backend(route.policy)).pool();
                goodWrite(proxy, look, route, pg);
                int pid = backendPid(pool);
                for (Map.Entry<String, String> c : cases.entrySet()) {
                    List<String> before = snapshot(look);
                    for (int i = 0; i < REPEATS; i++) {
                        refused(proxy, look, route, c.getKey() + ", request " + (i + 1), c.getValue(),
                                route.fence + 1 + i, status.getOrDefault(c.getKey(), 400), before);
                    }
                    assertClean(pool, pid, route.policy + ", " + c.getKey());
                }
                goodWrite(proxy, look, route, pg);
            }
        }
    }

    /**
     * A connection lost before COMMIT was sent: nothing can have committed, so 503 (retry). Lost during COMMIT:
     * the proxy cannot know, so 504 unknown outcome. The backend is terminated ({@code pg_terminate_backend}) while
     * it sleeps in a statement or in a deferred trigger that runs at COMMIT, or stopped ({@code SIGSTOP}) so that
     * the backend's transaction watchdog (statement-timeout per statement, the fence's own and COMMIT, + 5 s)
     * gives up on it.
     */
    @Test
    void aConnectionLostBeforeCommitIs503AndDuringCommitIsAnUnknownOutcome() throws Exception {
        String app = "stockade-lost-" + Long.toHexString(System.nanoTime());
        String ddl = """
                CREATE TABLE accounts (id text PRIMARY KEY, owner text NOT NULL, balance numeric NOT NULL);
                INSERT INTO accounts VALUES ('acc-1', 'ann', 1);
                """ + slowCommit("slow-commit", 0.8);
        String yaml = slowPolicy("1s", "commit: separate",
                "UPDATE accounts SET owner = :owner, balance = balance + 1 WHERE id = :id RETURNING id, balance",
                "SELECT 1 AS slept FROM pg_sleep(:pause)");
        try (Pg pg = Pg.create(ddl);
             Connection look = pg.connect();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                     Map.of("PG_URL", pg.url() + "&ApplicationName=" + app))) {
            Route route = new Route("slow", "/slow/acc-1", true, false);
            assertEquals(200, put(proxy, route, "{\"owner\": \"bob\", \"pause\": \"0\"}", 5).status());
            List<String> before = snapshot(look);

            // terminated while a statement runs: 503, nothing written
            Http.Response r = lost(proxy, look, app, "%pg_sleep%", "{\"owner\": \"x\", \"pause\": \"0.8\"}",
                    6, "pg_terminate_backend");
            assertEquals(503, r.status(), r.body());
            assertTrue(r.header("Retry-After").isPresent(), r.headers().toString());
            assertEquals(before, snapshot(look));

            // terminated during COMMIT (a deferred trigger sleeps in it): the outcome is unknown, 504
            r = lost(proxy, look, app, "COMMIT", "{\"owner\": \"slow-commit\", \"pause\": \"0\"}", 7,
                    "pg_terminate_backend");
            assertEquals(504, r.status(), r.body());
            assertTrue(r.body().contains("unknown-outcome"), r.body());
            assertEquals(before, snapshot(look), "in truth it did not commit (the trigger had not finished)");

            // the server stops answering mid-statement: the watchdog ((2 statements + the fence's up to 2 + COMMIT)
            // x 1 s + 5 s) ends it before COMMIT: 503
            long start = System.nanoTime();
            r = lost(proxy, look, app, "%pg_sleep%", "{\"owner\": \"y\", \"pause\": \"0.8\"}", 8,
                    "SIGSTOP");
            assertEquals(503, r.status(), r.body());
            assertTrue(r.body().contains("failed before COMMIT, nothing was written"), r.body());
            assertTrue(System.nanoTime() - start > 7_000_000_000L, "the watchdog gave up on it, not sooner");
            assertEquals(before, snapshot(look));

            // the pool's one connection was replaced each time; a good write lands
            assertEquals(200, put(proxy, route, "{\"owner\": \"carl\", \"pause\": \"0\"}", 6).status());
            assertEquals(OptionalLong.of(6), pg.fence("accounts/acc-1"));
            assertEquals(List.of("carl"), query(look, "SELECT owner FROM accounts"));
        }
    }

    /**
     * A transaction that is slow but alive is not the watchdog's: the fence call waits for the fence row's lock,
     * the one statement sleeps, a deferred trigger sleeps in COMMIT, each within the statement timeout (4 s) and
     * together longer than one statement's timeout plus 5 s (the watchdog's bound before it counted the fence call
     * and the COMMIT, which cut this write off with a 503).
     */
    @Test
    void aSlowButLiveTransactionIsNotCutOffByTheWatchdog() throws Exception {
        String app = "stockade-slow-" + Long.toHexString(System.nanoTime());
        String ddl = """
                CREATE TABLE accounts (id text PRIMARY KEY, owner text NOT NULL);
                INSERT INTO accounts VALUES ('acc-1', 'ann');
                """ + slowCommit("slow", 3.3);
        // the explicit transaction's bound (one statement sent with its fence runs under one statement timeout)
        String yaml = slowPolicy("4s", "one-statement: false",
                "UPDATE accounts SET owner = :owner FROM pg_sleep(:pause) WHERE id = :id RETURNING id");
        try (Pg pg = Pg.create(ddl);
             Connection look = pg.connect();
             Connection holder = pg.connect();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                     Map.of("PG_URL", pg.url() + "&ApplicationName=" + app))) {
            Route route = new Route("slow", "/slow/acc-1", true, false);
            assertEquals(200, put(proxy, route, "{\"owner\": \"bob\", \"pause\": \"0\"}", 5).status());

            holder.setAutoCommit(false);
            query(holder, "SELECT scope FROM stockade_fences WHERE scope = 'accounts/acc-1' FOR UPDATE");
            long start = System.nanoTime();
            var answer = java.util.concurrent.CompletableFuture.supplyAsync(
                    () -> slowPut(proxy, "{\"owner\": \"slow\", \"pause\": \"3.3\"}", 6));
            assertTrue(waitsForALock(look, app), "the write never waited for the fence row");
            Thread.sleep(3_300);
            holder.commit();

            Http.Response r = answer.get(30, java.util.concurrent.TimeUnit.SECONDS);
            long tookMs = (System.nanoTime() - start) / 1_000_000;
            assertEquals(200, r.status(), "after " + tookMs + " ms: " + r.body());
            assertTrue(tookMs > 9_500, "the write took " + tookMs + " ms: longer than the old bound (9 s)");
            assertEquals(List.of("slow"), query(look, "SELECT owner FROM accounts"));
            assertEquals(OptionalLong.of(6), pg.fence("accounts/acc-1"));
        }
    }

    /**
     * Why {@code one-statement} is opt-in. A write whose statement reads rows other than those it writes (a sum over
     * {@code entries}) runs for 1.5 s with token 6 while a writer with token 5 adds a row to the same scope. The
     * transaction raises the fence before the statement runs: the lower write waits for it and is refused (409), and
     * nothing lands behind the sum's back. One statement decides its fence as it ends: the lower write commits
     * meanwhile (the fence was still 4) and the sum, read from a snapshot taken before, does not count it, as the
     * policy reference says.
     */
    @ParameterizedTest(name = "one-statement: {0}")
    @ValueSource(booleans = {false, true})
    void aLowerTokenDuringAStatementThatReadsOtherRows(boolean oneStatement) throws Exception {
        String app = "stockade-reads-" + Long.toHexString(System.nanoTime());
        String yaml = """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: sum
                    match: {path: "/sum/{id}", methods: [PUT]}
                    scope: books/{id}
                    backend:
                      type: postgres
                      one-statement: ONE
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 2}
                      params: {id: path, pause: {from: body}}
                      statements:
                        PUT: INSERT INTO summary (book, total) SELECT :id, sum(amount) FROM entries, pg_sleep(:pause)
                  - name: add
                    match: {path: "/add/{id}", methods: [PUT]}
                    scope: books/{id}
                    backend:
                      type: postgres
                      one-statement: ONE
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 2}
                      params: {id: path}
                      statements:
                        PUT: INSERT INTO entries (book, amount) VALUES (:id, 100)
                """.replace("ONE", Boolean.toString(oneStatement));
        try (Pg pg = Pg.create("CREATE TABLE entries (book text, amount int);"
                + " CREATE TABLE summary (book text, total bigint);");
             Connection look = pg.connect();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                     Map.of("PG_URL", pg.url() + "&ApplicationName=" + app))) {
            assertEquals(200, Http.put(proxy.uri("/sum/b"), "{\"pause\": \"0\"}",
                    Map.of("Fencing-Token", "4")).status());
            query(look, "DELETE FROM summary RETURNING book");
            var sum = java.util.concurrent.CompletableFuture.supplyAsync(() -> {
                try {
                    return Http.put(proxy.uri("/sum/b"), "{\"pause\": \"1.5\"}", Map.of("Fencing-Token", "6"));
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            });
            long deadline = System.nanoTime() + 5_000_000_000L;
            while (query(look, "SELECT pid::text FROM pg_stat_activity WHERE application_name = '" + app
                    + "' AND wait_event = 'PgSleep'").isEmpty()) {
                assertTrue(System.nanoTime() < deadline, "the sum never started");
                Thread.sleep(5);
            }
            Http.Response lower = Http.put(proxy.uri("/add/b"), "", Map.of("Fencing-Token", "5"));
            assertEquals(200, sum.get(20, java.util.concurrent.TimeUnit.SECONDS).status());
            assertEquals(OptionalLong.of(6), pg.fence("books/b"));
            List<String> total = query(look, "SELECT coalesce(total::text, 'none') FROM summary");
            if (oneStatement) {
                assertEquals(200, lower.status(), "one statement: the lower write lands while the sum runs");
                assertEquals(List.of("100"), query(look, "SELECT amount::text FROM entries"));
                assertEquals(List.of("none"), total, "and the sum did not see it");
            } else {
                assertEquals(409, lower.status(), "the transaction: the lower write is refused: " + lower.body());
                assertEquals(List.of(), query(look, "SELECT amount::text FROM entries"));
                assertEquals(List.of("none"), total);
            }
        }
    }

    /**
     * The policy file of the {@code slow} route ({@code PUT /slow/{id}}, scope {@code accounts/{id}}, body fields
     * {@code owner} and {@code pause}) on a pool of one connection, with the statement timeout, the {@code commit}
     * line and the PUT statements given.
     */
    private static String slowPolicy(String statementTimeout, String commit, String... put) {
        StringBuilder statements = new StringBuilder();
        for (String statement : put) {
            statements.append("            - ").append(statement).append('\n');
        }
        return """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: slow
                    match: {path: "/slow/{id}", methods: [PUT]}
                    scope: accounts/{id}
                    backend:
                      type: postgres
                      %s
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 1, statement-timeout: %s}
                      params:
                        id: path
                        owner: {from: body}
                        pause: {from: body}
                      statements:
                        PUT:
                """.formatted(commit, statementTimeout) + statements;
    }

    /**
     * DDL for the table {@code ledger} and a deferred trigger on {@code accounts} that sleeps {@code seconds} in
     * the COMMIT of a transaction that set an account's owner to {@code owner}.
     */
    private static String slowCommit(String owner, double seconds) {
        return """
                CREATE TABLE ledger (id bigint);
                CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
                BEGIN PERFORM pg_sleep(%s); RETURN NULL; END $$;
                CREATE CONSTRAINT TRIGGER slow_commit AFTER UPDATE ON accounts DEFERRABLE INITIALLY DEFERRED
                    FOR EACH ROW WHEN (NEW.owner = '%s') EXECUTE FUNCTION slow_commit();
                """.formatted(seconds, owner);
    }

    /**
     * A PUT of {@code /slow/acc-1} that may take longer than {@link Http}'s 10 s (a write the watchdog gives up on,
     * or a slow one it must not): 30 s.
     */
    private static Http.Response slowPut(ProxyFixture proxy, String body, long token) {
        var request = java.net.http.HttpRequest.newBuilder(proxy.uri("/slow/acc-1"))
                .timeout(java.time.Duration.ofSeconds(30))
                .PUT(java.net.http.HttpRequest.BodyPublishers.ofString(body))
                .header("Fencing-Token", Long.toString(token)).build();
        try {
            var r = Http.client().send(request, java.net.http.HttpResponse.BodyHandlers.ofString());
            return new Http.Response(r.statusCode(), r.body(), r.headers());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean waitsForALock(Connection look, String app) throws Exception {
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (System.nanoTime() < deadline) {
            try (var ps = look.prepareStatement("SELECT 1 FROM pg_stat_activity WHERE application_name = ?"
                    + " AND wait_event_type = 'Lock'")) {
                ps.setString(1, app);
                try (ResultSet r = ps.executeQuery()) {
                    if (r.next()) {
                        return true;
                    }
                }
            }
            Thread.sleep(5);
        }
        return false;
    }

    /**
     * {@code commit: pipelined}: COMMIT travels with the statements, so a connection lost while they run may have
     * lost it after the server committed; the proxy cannot tell, and answers 504 unknown outcome, as it would for a
     * lost COMMIT. The same for one statement sent with its fence ({@code one-statement: true}), which
     * commits as it ends. What the database says after an error in a statement stays definite (the shapes above,
     * and a statement timeout here: rolled back, not unknown).
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"commit: pipelined", "one-statement: true"})
    void aCommitSentWithTheStatementsMakesAConnectionLostMidWriteAnUnknownOutcome(String shape) throws Exception {
        String app = "stockade-lostp-" + Long.toHexString(System.nanoTime());
        String yaml = shape.startsWith("commit")
                ? slowPolicy("1s", shape,
                "UPDATE accounts SET owner = :owner WHERE id = :id RETURNING id -- ends in a comment",
                "SELECT 1 AS slept FROM pg_sleep(:pause) -- so does the last one, before the COMMIT")
                : slowPolicy("1s", shape,
                "UPDATE accounts SET owner = :owner FROM pg_sleep(:pause) WHERE id = :id RETURNING id -- comment");
        try (Pg pg = Pg.create("CREATE TABLE accounts (id text PRIMARY KEY, owner text NOT NULL);"
                + " CREATE TABLE ledger (id bigint); INSERT INTO accounts VALUES ('acc-1', 'ann');");
             Connection look = pg.connect();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                     Map.of("PG_URL", pg.url() + "&ApplicationName=" + app))) {
            Route route = new Route("slow", "/slow/acc-1", true, false);
            assertEquals(200, put(proxy, route, "{\"owner\": \"bob\", \"pause\": \"0\"}", 5).status());
            List<String> before = snapshot(look);

            // one statement: the fence travels in the statement's own text
            String sleeping = shape.startsWith("commit") ? "%pg_sleep%" : "WITH stockade_fence_gate AS %pg_sleep%";
            Http.Response r = lost(proxy, look, app, sleeping, "{\"owner\": \"x\", \"pause\": \"0.8\"}",
                    6, "pg_terminate_backend");
            assertEquals(504, r.status(), r.body());
            assertTrue(r.body().contains("unknown-outcome"), r.body());
            assertEquals(before, snapshot(look), "in truth it did not commit (terminated mid-statement)");

            // the server's own error in a statement is still a definite answer: the COMMIT behind it was skipped
            r = put(proxy, route, "{\"owner\": \"y\", \"pause\": \"1.5\"}", 6);
            assertEquals(503, r.status(), "a rollback is a known outcome: " + r.body());
            assertTrue(r.header("Retry-After").isPresent(), r.toString());
            assertTrue(r.body().contains("statement-timeout") && r.body().contains("rolled back"), r.body());
            assertEquals(before, snapshot(look));

            assertEquals(200, put(proxy, route, "{\"owner\": \"carl\", \"pause\": \"0\"}", 6).status());
            assertEquals(OptionalLong.of(6), pg.fence("accounts/acc-1"));
            assertEquals(List.of("carl"), query(look, "SELECT owner FROM accounts"));
        }
    }

    /**
     * {@code commit: pipelined}, or one statement with its fence: once the server has answered the statements and
     * the COMMIT (or the one statement, which committed as it ended), the write is committed; a result the driver
     * cannot read afterwards (a {@code money} value pgjdbc cannot convert) must say so, not claim an unknown outcome
     * or a rollback.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"commit: pipelined, one-statement: false", "one-statement: true"})
    void aWriteCommittedWithItsStatementsWhoseRowsCannotBeReadSaysItWasCommitted(String shape) throws Exception {
        String yaml = """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: m
                    match: {path: "/m/{id}", methods: [PUT]}
                    scope: accounts/{id}
                    backend:
                      {SHAPE}
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 1}
                      params: {id: path, owner: {from: body}}
                      statements:
                        PUT: UPDATE accounts SET owner = :owner WHERE id = :id RETURNING 1000::money AS m
                """.replace("{SHAPE}", shape.replace(", ", "\n      "));
        try (Pg pg = Pg.create("CREATE TABLE accounts (id text PRIMARY KEY, owner text NOT NULL);"
                + " INSERT INTO accounts VALUES ('acc-1', 'ann');");
             Connection look = pg.connect();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml, Map.of("PG_URL", pg.url()))) {
            Http.Response r = Http.put(proxy.uri("/m/acc-1"), "{\"owner\": \"bob\"}", Map.of("Fencing-Token", "3"));
            assertEquals(502, r.status(), r.body());
            assertTrue(r.body().contains("answer-unreadable") && r.body().contains("was committed ("
                    + (shape.startsWith("commit") ? "commit: pipelined" : "one statement")), r.body());
            assertEquals(List.of("bob"), query(look, "SELECT owner FROM accounts"), "it was committed");
            assertEquals(OptionalLong.of(3), pg.fence("accounts/acc-1"));
        }
    }

    /**
     * Sends a write and, once its connection (application name {@code app}) sleeps in a query like
     * {@code query}, terminates the backend or stops it ({@code SIGSTOP}, resumed after the answer).
     */
    private static Http.Response lost(ProxyFixture proxy, Connection look, String app, String query, String body,
                                      long token, String how) throws Exception {
        // a stopped server is given up on by the watchdog after (2 statements + 3) x 1 s + 5 s
        var answer = java.util.concurrent.CompletableFuture.supplyAsync(() -> slowPut(proxy, body, token));
        String pid = null;
        long deadline = System.nanoTime() + 5_000_000_000L;
        while (pid == null && System.nanoTime() < deadline) {
            try (var ps = look.prepareStatement("SELECT pid FROM pg_stat_activity WHERE application_name = ?"
                    + " AND query LIKE ? AND wait_event = 'PgSleep'")) {
                ps.setString(1, app);
                ps.setString(2, query);
                try (ResultSet r = ps.executeQuery()) {
                    pid = r.next() ? r.getString(1) : null;
                }
            }
            Thread.sleep(5);
        }
        assertTrue(pid != null, "the write never slept in " + query);
        if (how.equals("SIGSTOP")) {
            signal("STOP", pid);
            try {
                return answer.get(20, java.util.concurrent.TimeUnit.SECONDS);
            } finally {
                signal("CONT", pid);
            }
        }
        query(look, "SELECT pg_terminate_backend(" + pid + ")::text");
        return answer.get(20, java.util.concurrent.TimeUnit.SECONDS);
    }

    private static void signal(String signal, String pid) throws Exception {
        Process p = new ProcessBuilder("kill", "-" + signal, pid).inheritIO().start();
        assertEquals(0, p.waitFor(), "kill -" + signal + " " + pid + " (the test needs the right to signal the"
                + " PostgreSQL server's processes: root, on the same machine)");
    }

    private static Map<String, String> with(Map<String, String> fields, String name, String value) {
        fields.put(name, value);
        return fields;
    }

    /**
     * A good write with the lowest token above the fence: lands (200), the fence (or the row's token column) moves
     * to it. Were a failing write's higher token left behind, this one would be refused as stale.
     */
    private void goodWrite(ProxyFixture proxy, Connection look, Route route, Pg pg) throws Exception {
        long token = route.fence + 1;
        long n = route.next++;
        Map<String, String> fields = route.multi ? good(n)
                : new LinkedHashMap<>(Map.of("owner", "\"owner-" + route.policy + "-good-" + n + "\""));
        List<String> before = snapshot(look);
        Http.Response r = put(proxy, route, body(fields), token);
        assertEquals(200, r.status(), route.policy + ", good write: " + r.body());
        assertTrue(!before.equals(snapshot(look)), route.policy + ": the good write did not land");
        String id = route.path.substring(route.path.lastIndexOf('/') + 1);
        if (route.multi) {
            assertEquals(List.of(n + ".00"), query(look, "SELECT balance FROM accounts WHERE id = '" + id + "'"));
        }
        if (route.fenced) {
            OptionalLong fence = route.policy.startsWith("column")
                    ? OptionalLong.of(Long.parseLong(query(look, "SELECT fence_token FROM accounts WHERE id = '"
                    + id + "'").getFirst()))
                    : pg.fence("accounts/" + id);
            assertEquals(OptionalLong.of(token), fence, route.policy + ": the good write moved the fence");
            route.fence = token;
        }
    }

    /** One request that must be refused with {@code status} and leave every row and the fence as {@code before}. */
    private static void refused(ProxyFixture proxy, Connection look, Route route, String what, String body, long token,
                                int status, List<String> before) throws Exception {
        Http.Response r = put(proxy, route, body, token);
        String where = route.policy + ", " + what + ": ";
        assertEquals(status, r.status(), where + r.body());
        assertEquals(before, snapshot(look), where + "the rows or the fence changed");
    }

    private static Http.Response put(ProxyFixture proxy, Route route, String body, long token) throws Exception {
        return Http.put(proxy.uri(route.path), body,
                route.fenced ? Map.of("Fencing-Token", Long.toString(token)) : Map.of());
    }

    /** Every row of the data tables and of the fence table (timestamps included). */
    static List<String> snapshot(Connection c) throws SQLException {
        List<String> all = new ArrayList<>();
        all.addAll(query(c, "SELECT a::text FROM accounts a ORDER BY id"));
        all.addAll(query(c, "SELECT l::text FROM ledger l ORDER BY id"));
        all.addAll(query(c, "SELECT f::text FROM stockade_fences f ORDER BY scope"));
        return all;
    }

    static List<String> query(Connection c, String sql) throws SQLException {
        List<String> out = new ArrayList<>();
        try (Statement s = c.createStatement(); ResultSet r = s.executeQuery(sql)) {
            while (r.next()) {
                out.add(r.getString(1));
            }
        }
        return out;
    }

    private static int backendPid(HikariDataSource pool) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT pg_backend_pid()")) {
            r.next();
            return r.getInt(1);
        }
    }

    private static int preparedOnServer(HikariDataSource pool) throws SQLException {
        try (Connection c = pool.getConnection(); Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT count(*) FROM pg_prepared_statements")) {
            r.next();
            return r.getInt(1);
        }
    }

    /** The pool's one connection is the one every request used, autocommit and outside any transaction. */
    private static void assertClean(HikariDataSource pool, int pid, String what) throws SQLException {
        assertEquals(1, pool.getHikariPoolMXBean().getTotalConnections(), what + ": one connection");
        assertEquals(pid, backendPid(pool), what + ": the same connection served every request");
        try (Connection c = pool.getConnection()) {
            assertTrue(c.getAutoCommit(), what + ": autocommit restored");
            assertEquals(TransactionState.IDLE, c.unwrap(BaseConnection.class).getTransactionState(),
                    what + ": no transaction left open");
        }
    }
}
