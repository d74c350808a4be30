package io.stockade.proxy.backend.postgres;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A zombie holder, a route of two statements whose second one fails, and the error mapping of the postgres
 * backend: unique violation, check violation, bad parameters.
 */
class PostgresZombieAndAtomicityIT {
    static final String DDL = """
            CREATE TABLE accounts (id text PRIMARY KEY, balance numeric NOT NULL CHECK (balance >= 0),
                                   owner text UNIQUE);
            CREATE TABLE audit (id bigserial PRIMARY KEY, account text NOT NULL, note text NOT NULL);
            INSERT INTO accounts VALUES ('acc1', 100, 'ann');
            INSERT INTO accounts VALUES ('acc2', 100, 'bob');
            """;
    static final String POLICY = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: balance
                match: {path: "/accounts/{id}/balance", methods: [GET, PUT]}
                scope: accounts/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  params:
                    id: path
                    balance: {from: body, type: number}
                    note: {from: body, type: string, nullable: true}
                  statements:
                    GET: SELECT id, balance FROM accounts WHERE id = :id
                    PUT:
                      - UPDATE accounts SET balance = :balance WHERE id = :id
                      - {name: audit, sql: "INSERT INTO audit (account, note) VALUES (:id, :note) RETURNING account"}
              - name: owner
                match: {path: "/accounts/{id}/owner", methods: [PUT]}
                scope: accounts/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  params:
                    id: path
                    owner: {from: query, type: string}
                  statements:
                    PUT: UPDATE accounts SET owner = :owner WHERE id = :id
            """;

    @TempDir
    Path dir;

    private static Http.Response put(ProxyFixture proxy, String path, String body, long token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    @Test
    void aPausedHolderIsRejectedAfterTheNextHolderWroteAndTheRowKeepsTheNewValue() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            // holder A (token 7) writes, then prepares its next write and is paused past its lease
            assertEquals(200, put(proxy, "/accounts/acc1/balance", "{\"balance\": 70, \"note\": \"a1\"}", 7).status());
            CountDownLatch resumed = new CountDownLatch(1);
            CompletableFuture<Http.Response> zombie = CompletableFuture.supplyAsync(() -> {
                try {
                    resumed.await(); // the GC pause / SIGSTOP
                    return put(proxy, "/accounts/acc1/balance", "{\"balance\": 1, \"note\": \"zombie\"}", 7);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            });
            // holder B got the lease with token 8 and writes
            assertEquals(200, put(proxy, "/accounts/acc1/balance", "{\"balance\": 80, \"note\": \"b1\"}", 8).status());
            resumed.countDown();
            Http.Response late = zombie.get(10, TimeUnit.SECONDS);
            assertEquals(409, late.status(), late.body());
            assertTrue(late.body().contains("\"highest\":8"), late.body());
            assertEquals(Optional.of("80"), pg.single("SELECT balance FROM accounts WHERE id = 'acc1'"));
            assertEquals(0, pg.column("SELECT note FROM audit WHERE note = 'zombie'").size());
        }
    }

    @Test
    void aFailingSecondStatementLeavesNeitherDataNorFenceChanged() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            assertEquals(200, put(proxy, "/accounts/acc1/balance", "{\"balance\": 90, \"note\": \"ok\"}", 3).status());
            // note NULL: the UPDATE succeeds, the audit INSERT violates NOT NULL
            Http.Response r = put(proxy, "/accounts/acc1/balance", "{\"balance\": 10, \"note\": null}", 9);
            assertEquals(422, r.status(), r.body());
            assertTrue(r.body().contains("constraint-violation"), r.body());
            assertEquals(Optional.of("90"), pg.single("SELECT balance FROM accounts WHERE id = 'acc1'"));
            assertEquals(OptionalLong.of(3), pg.fence("accounts/acc1"), "the fence bump rolled back too");
            assertEquals(1, pg.column("SELECT note FROM audit").size());
            // token 4 is still good: 9 never took effect
            assertEquals(200, put(proxy, "/accounts/acc1/balance", "{\"balance\": 50, \"note\": \"x\"}", 4).status());
        }
    }

    @Test
    void aWriteAnswersRowsAffectedAndReturningRowsAndAReadAnswersRows() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            Http.Response w = put(proxy, "/accounts/acc2/balance", "{\"balance\": 12.5, \"note\": \"n\"}", 1);
            assertEquals("{\"rows_affected\":2,\"rows\":[{\"account\":\"acc2\"}]}", w.body());
            Http.Response r = Http.get(proxy.uri("/accounts/acc2/balance"));
            assertEquals("[{\"id\":\"acc2\",\"balance\":12.5}]", r.body());
        }
    }

    @Test
    void checkViolationIs422UniqueViolationIs409NamingTheConstraint() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            Http.Response negative = put(proxy, "/accounts/acc1/balance", "{\"balance\": -1, \"note\": \"n\"}", 1);
            assertEquals(422, negative.status(), negative.body());
            assertTrue(negative.body().contains("accounts_balance_check"), negative.body());
            Http.Response taken = put(proxy, "/accounts/acc1/owner?owner=bob", "", 2);
            assertEquals(409, taken.status(), taken.body());
            assertTrue(taken.body().contains("\"constraint\":\"accounts_owner_key\""), taken.body());
            assertEquals(OptionalLong.empty(), pg.fence("accounts/acc1"), "both failures rolled the fence back");
        }
    }

    @Test
    void missingOrMistypedParametersAre400NamingTheParameter() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            Http.Response noField = put(proxy, "/accounts/acc1/balance", "{\"note\": \"n\"}", 1);
            assertEquals(400, noField.status(), noField.body());
            assertTrue(noField.body().contains("\"parameter\":\"balance\""), noField.body());
            Http.Response wrongType = put(proxy, "/accounts/acc1/balance",
                    "{\"balance\": \"ten\", \"note\": \"n\"}", 1);
            assertEquals(400, wrongType.status(), wrongType.body());
            assertTrue(wrongType.body().contains("must be a number"), wrongType.body());
            Http.Response notJson = put(proxy, "/accounts/acc1/balance", "balance=10", 1);
            assertEquals(400, notJson.status(), notJson.body());
            Http.Response noQuery = put(proxy, "/accounts/acc1/owner", "", 1);
            assertEquals(400, noQuery.status(), noQuery.body());
            assertTrue(noQuery.body().contains("query parameter 'owner'"), noQuery.body());
            assertEquals(OptionalLong.empty(), pg.fence("accounts/acc1"));
        }
    }
}
