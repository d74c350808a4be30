package io.stockade.proxy.backend.postgres;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The postgres backend against a stale writer who spells a key another way (a hostile review, 2026-12-06): the scope
 * is rendered from the path's text, the statement's parameter is the value, and where two spellings name one row a
 * stale holder wrote the row under a scope no one fenced (each test below landed before the fix). Now a path
 * variable the scope reads has one spelling: an integer or number in its plain form (else 400), anything else bound
 * as text (a column of another type refuses it, 502 saying why). Each test checks the row and the fence rows.
 */
class PostgresHostileIT {
    static final String DDL = """
            CREATE TABLE items (id bigint PRIMARY KEY, v text NOT NULL);
            CREATE TABLE things (id text PRIMARY KEY, v text NOT NULL);
            CREATE TABLE counted (id bigint PRIMARY KEY, reads bigint NOT NULL DEFAULT 0);
            INSERT INTO items VALUES (1, 'seed');
            INSERT INTO things VALUES ('a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'seed');
            INSERT INTO counted VALUES (1, 0);
            """;
    static final String POLICY = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: items
                match: {path: "/items/{id}", methods: [PUT]}
                scope: items/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  params:
                    id: {from: path, type: integer}
                    v: {from: query, type: string}
                  statements:
                    PUT: UPDATE items SET v = :v WHERE id = :id
              - name: items-one
                match: {path: "/one/{id}", methods: [PUT]}
                scope: items/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  one-statement: true
                  params:
                    id: {from: path, type: integer}
                    v: {from: query, type: string}
                  statements:
                    PUT: UPDATE items SET v = :v WHERE id = :id
            """;
    /** A string path variable into a bigint key, and one into a key column that starts as text (uuid later). */
    static final String TEXT_POLICY = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: items-text
                match: {path: "/itext/{id}", methods: [PUT]}
                scope: items/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  params:
                    id: path
                    v: {from: query, type: string}
                  statements:
                    PUT: UPDATE items SET v = :v WHERE id = :id
              - name: things
                match: {path: "/things/{id}", methods: [PUT]}
                scope: things/{id}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  params:
                    id: path
                    v: {from: query, type: string}
                  statements:
                    PUT: UPDATE things SET v = :v WHERE id = :id
            """;
    static final String UUID = "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11";

    @TempDir
    Path dir;

    private static Http.Response put(ProxyFixture proxy, String path, long token) throws Exception {
        return Http.put(proxy.uri(path), "", Map.of("Fencing-Token", Long.toString(token)));
    }

    /**
     * type: integer accepts "01", "+1", "-0" and "001" as the number 1 (Exact.parseInteger), but the scope is
     * rendered from the path text: items/01 is a scope no one fenced, and its statement updates row 1.
     */
    @Test
    void anIntegerPathVariableSpelledWithALeadingZeroOrPlusEscapesTheFence() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            assertEquals(200, put(proxy, "/items/1?v=holder10", 10).status());
            assertEquals(OptionalLong.of(10), pg.fence("items/1"));
            // the zombie still holds token 5
            Http.Response zombie = put(proxy, "/items/01?v=zombie5", 5);
            Http.Response plus = put(proxy, "/items/+1?v=zombie5plus", 5);
            String landed = "status " + zombie.status() + "/" + plus.status() + "; row 1 holds "
                    + pg.single("SELECT v FROM items WHERE id = 1") + "; fences "
                    + pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope");
            assertEquals(400, zombie.status(), landed);
            assertEquals(400, plus.status(), landed);
            assertTrue(zombie.body().contains("write it as 1"), zombie.body());
            assertEquals(400, put(proxy, "/items/-0?v=zombie5", 5).status());
            assertEquals(Optional.of("holder10"), pg.single("SELECT v FROM items WHERE id = 1"), landed);
            assertEquals(List.of("items/1=10"),
                    pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope"), landed);
        }
    }

    /** The same with one-statement: true (the fence in the statement's WITH, keyed by the same text). */
    @Test
    void anIntegerPathVariableSpelledDifferentlyEscapesTheOneStatementFence() throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), POLICY, Map.of("PG_URL", pg.url()))) {
            assertEquals(200, put(proxy, "/one/1?v=holder10", 10).status());
            Http.Response zombie = put(proxy, "/one/001?v=zombie5", 5);
            String landed = "status " + zombie.status() + "; row 1 holds "
                    + pg.single("SELECT v FROM items WHERE id = 1") + "; fences "
                    + pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope");
            assertEquals(400, zombie.status(), landed);
            assertEquals(Optional.of("holder10"), pg.single("SELECT v FROM items WHERE id = 1"), landed);
            assertEquals(List.of("items/1=10"),
                    pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope"), landed);
        }
    }

    /**
     * A string path variable (the default type, bound untyped) into a bigint column: PostgreSQL's int8 input takes
     * leading zeros, a sign and surrounding blanks ("%201", "1%20"), so again one row, many scopes. Now it is bound
     * as text, which a bigint column refuses: every spelling is refused, the holder's too, with what to declare.
     */
    @Test
    void aStringPathVariableThatPostgresCastsToTheSameKeyEscapesTheFence() throws Exception {
        try (Pg pg = Pg.create(DDL)) {
            // at load, the database answering: the policy is refused, saying what to declare
            Exception refused = assertThrows(Exception.class, () -> ProxyFixture.start(dir.resolve("j"),
                    TEXT_POLICY, Map.of("PG_URL", pg.url())).close());
            assertTrue(String.valueOf(refused.getMessage()).contains("policy 'items-text'")
                    && refused.getMessage().contains("`type: integer`"), String.valueOf(refused));
            assertEquals(Optional.of("seed"), pg.single("SELECT v FROM items WHERE id = 1"));
            assertEquals(List.of(), pg.column("SELECT scope FROM stockade_fences"));
        }
    }

    /**
     * When the database changes after the load (the key column made uuid), a text-bound scope variable is refused
     * at the write: every spelling, the holder's too, 502 with what to declare, nothing written.
     */
    @Test
    void aKeyColumnChangedAfterTheLoadRefusesTheTextBoundVariable() throws Exception {
        try (Pg pg = Pg.create(DDL.replace("CREATE TABLE items (id bigint", "CREATE TABLE items (id text"));
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), TEXT_POLICY, Map.of("PG_URL", pg.url()))) {
            pg.execute("ALTER TABLE items ALTER COLUMN id TYPE bigint USING id::bigint");
            Http.Response holder = put(proxy, "/itext/1?v=holder10", 10);
            assertEquals(502, holder.status(), holder.body());
            assertTrue(holder.body().contains("type: integer"), holder.body());
            Http.Response blank = put(proxy, "/itext/%201?v=zombie-blank", 5);
            String landed = "status " + blank.status() + "; row 1 holds "
                    + pg.single("SELECT v FROM items WHERE id = 1") + "; fences "
                    + pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope");
            assertEquals(502, blank.status(), landed);
            assertEquals(Optional.of("seed"), pg.single("SELECT v FROM items WHERE id = 1"), landed);
            assertEquals(List.of(), pg.column("SELECT scope FROM stockade_fences"), landed);
        }
    }

    /**
     * A uuid key (a string path variable, PostgreSQL infers uuid): the upper-case spelling, or the one without
     * hyphens, was the same uuid and another scope. Now bound as text, which a uuid column refuses (a uuid key is
     * kept in a text column, in one spelling, or fenced with fence: column).
     */
    @Test
    void aUuidPathVariableInUpperCaseEscapesTheFence() throws Exception {
        try (Pg pg = Pg.create(DDL.replace("CREATE TABLE items (id bigint", "CREATE TABLE items (id text"));
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), TEXT_POLICY, Map.of("PG_URL", pg.url()))) {
            assertEquals(200, put(proxy, "/things/" + UUID + "?v=holder10", 10).status()); // a text key: one spelling
            pg.execute("ALTER TABLE things ALTER COLUMN id TYPE uuid USING id::uuid");
            assertEquals(502, put(proxy, "/things/" + UUID + "?v=holder11", 11).status());
            Http.Response upper = put(proxy, "/things/" + UUID.toUpperCase(java.util.Locale.ROOT) + "?v=zombie-upper",
                    5);
            Http.Response bare = put(proxy, "/things/" + UUID.replace("-", "") + "?v=zombie-bare", 5);
            String landed = "status " + upper.status() + "/" + bare.status() + "; row holds "
                    + pg.single("SELECT v FROM things") + "; fences "
                    + pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope");
            assertEquals(502, upper.status(), landed);
            assertEquals(502, bare.status(), landed);
            assertEquals(Optional.of("holder10"), pg.single("SELECT v FROM things"), landed);
            assertEquals(List.of("things/" + UUID + "=10"),
                    pg.column("SELECT scope || '=' || token FROM stockade_fences ORDER BY scope"), landed);
        }
    }
}
