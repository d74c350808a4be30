package io.stockade.proxy.backend.postgres;

import java.math.BigDecimal;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.ThreadLocalRandom;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every value a postgres parameter binds is stored exactly as sent, or refused with 400 {@code bad-parameter}
 * naming the parameter before anything runs: the row and the {@code stockade_fences} row read back (JDBC, directly)
 * as they were. The hostile-load report's values, each of which main stored changed or answered 500: with the
 * shipped example, {@code {"balance": 1e131072}} and {@code 5e2147483648} were stored as 0.00 and 5.00 (pgjdbc's
 * binary numeric folded the exponent), {@code -1e1000000000} likewise, {@code 1e-1000000000} was a 500
 * (ArithmeticException), and {@code "a\ud800b"} was stored as {@code a?b}. {@link PostgresExactValuesPropertyIT}
 * searches the edges around them.
 */
class PostgresExactValuesIT {
    private static final Path EXAMPLES = Path.of("..", "policies", "examples").toAbsolutePath().normalize();

    /** One row per test; each column takes one parameter type. */
    static final String DDL = """
            CREATE TABLE vals (
                id     text PRIMARY KEY,
                num    numeric,
                amount numeric(14, 2),
                n      bigint,
                s      text,
                j      jsonb);
            """;

    /** A route per parameter type and source, each writing one column of the row {@code id}. */
    static final String YAML = "store: {type: memory, journal: \"${JOURNAL}\"}\npolicies:\n"
            + route("num", "val: {from: body, type: number}", "num = :val")
            + route("numq", "val: {from: query, type: number}", "num = :val")
            + route("amount", "val: {from: body, type: number, precision: 14, scale: 2}", "amount = :val")
            + route("amountq", "val: {from: query, type: number, precision: 14, scale: 2}", "amount = :val")
            + route("int", "val: {from: body, type: integer}", "n = :val")
            + route("intq", "val: {from: query, type: integer}", "n = :val")
            + route("str", "val: {from: body}", "s = :val")
            + route("strq", "val: {from: query}", "s = :val")
            + route("text", "val: body-text", "s = :val")
            + route("json", "val: {from: body, type: json}", "j = :val::jsonb")
            + route("jsonq", "val: {from: query, type: json}", "j = :val::jsonb");

    private static String route(String name, String param, String set) {
        return """
                  - name: NAME
                    match: {path: "/NAME/{id}", methods: [PUT]}
                    scope: vals/{id}
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 2}
                      params:
                        id: path
                        PARAM
                      statements:
                        PUT: UPDATE vals SET ASSIGN WHERE id = :id
                """.replace("NAME", name).replace("PARAM", param).replace("ASSIGN", set);
    }

    private static Pg pg;
    private static Connection look;
    private static ProxyFixture proxy;
    private static Path dir;

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-exact");
        pg = Pg.create(DDL);
        look = pg.connect();
        proxy = ProxyFixture.start(dir.resolve("j"), YAML, Map.of("PG_URL", pg.url()));
    }

    @AfterAll
    static void stop() throws SQLException {
        if (proxy != null) {
            proxy.close();
        }
        if (look != null) {
            look.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    /** The state a refused write must leave as it was: the row and its fence row, as PostgreSQL prints them. */
    static List<String> snapshot(Connection c, String table, String id, String scope) throws SQLException {
        return List.of(single(c, "SELECT r::text FROM " + table + " r WHERE id = ?", id).orElse("no row"),
                single(c, "SELECT f::text FROM stockade_fences f WHERE scope = ?", scope).orElse("no fence"));
    }

    static Optional<String> single(Connection c, String sql, String param) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.setString(1, param);
            try (ResultSet r = ps.executeQuery()) {
                return r.next() ? Optional.ofNullable(r.getString(1)) : Optional.empty();
            }
        }
    }

    /** A fresh row for one test, with a fence at 10 (a good write at 10 through {@code route}). */
    private static String row(String route, String body) throws Exception {
        String id = "r" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        pg.execute("INSERT INTO vals (id) VALUES ('" + id + "')");
        Http.Response first = put("/" + route + "/" + id, body, 10);
        assertEquals(200, first.status(), first.body());
        return id;
    }

    private static Http.Response put(String path, String body, long token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    /** A write with a token above the fence that must be refused: 400 naming val, the row and fence unchanged. */
    private static void refused(String route, String id, String query, String body, String what) throws Exception {
        List<String> before = snapshot(look, "vals", id, "vals/" + id);
        Http.Response r = put("/" + route + "/" + id + query, body, 11);
        assertEquals(400, r.status(), what + ": " + r.body());
        assertTrue(r.body().contains("\"type\":\"https://stockade.dev/problems/bad-parameter\"")
                || r.body().contains("bad-parameter"), what + ": " + r.body());
        assertTrue(r.body().contains("\"parameter\":\"val\""), what + ": the parameter is named: " + r.body());
        assertEquals(before, snapshot(look, "vals", id, "vals/" + id), what + ": the row or the fence changed");
    }

    private static String stored(String column, String id) throws SQLException {
        return single(look, "SELECT " + column + "::text FROM vals WHERE id = ?", id).orElse(null);
    }

    /**
     * The report's numbers, one test each: main stored 1e131072 as 0, 5e2147483648 as 5 and -1e1000000000 as 0
     * (200), and answered 1e-1000000000 with a 500.
     */
    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"1e131072", "5e2147483648", "-1e1000000000", "1e-1000000000"})
    void theReportsNumberIsRefusedBeforeTheFenceNotStoredChanged(String n) throws Exception {
        String id = row("num", "{\"val\": 1}");
        refused("num", id, "", "{\"val\": " + n + "}", n);
        refused("numq", id, "?val=" + n, "", n + " in the query");
        assertEquals("1", stored("num", id));
    }

    /** The report's string: main stored "a\ud800b" as a?b (200). */
    @Test
    void theReportsLoneSurrogateIsRefusedNotStoredAsAQuestionMark() throws Exception {
        String id = row("str", "{\"val\": \"x\"}");
        refused("str", id, "", "{\"val\": \"a\\ud800b\"}", "a\\ud800b");
        assertEquals("x", stored("s", id));
    }

    @Test
    void numbersNumericCannotHoldAreRefusedNotFolded() throws Exception {
        String id = row("num", "{\"val\": 1}");
        for (String n : List.of("1e-16384", "-9.99e131072", "1E+2147483647", "0.1e-16383", "1e131073",
                "-5e2147483647")) {
            refused("num", id, "", "{\"val\": " + n + "}", n);
            refused("numq", id, "?val=" + n.replace("+", "%2B"), "", n + " in the query");
        }
        assertEquals("1", stored("num", id));
    }

    @Test
    void numbersAtNumericsLimitsAreStoredExactly() throws Exception {
        String id = row("num", "{\"val\": 1}");
        long token = 11;
        for (String n : List.of("1e131071", "-9.99e131071", "1e-16383", "-1.5e-16382", "0e-1000000000",
                "0e2147483647", "1.500", "-0", "123456789012345678901234567890.123456789012345678901234567890")) {
            Http.Response r = put("/num/" + id, "{\"val\": " + n + "}", token);
            assertEquals(200, r.status(), n + ": " + r.body());
            assertEquals(0, new BigDecimal(n).compareTo(new BigDecimal(stored("num", id))), n);
            assertEquals(OptionalLong.of(token), pg.fence("vals/" + id), n + ": the fence moved");
            token++;
        }
    }

    @Test
    void aNumberIsNeverRoundedIntoItsPrecisionAndScale() throws Exception {
        String id = row("amount", "{\"val\": 1}");
        for (String n : List.of("1.005", "0.001", "1e-3", "1000000000000", "999999999999.995", "1e12", "1e131072",
                "1e-1000000000")) {
            refused("amount", id, "", "{\"val\": " + n + "}", n);
            refused("amountq", id, "?val=" + n, "", n + " in the query");
        }
        Http.Response r = put("/amount/" + id, "{\"val\": 999999999999.990}", 11);
        assertEquals(200, r.status(), r.body());
        assertEquals("999999999999.99", stored("amount", id));
    }

    @Test
    void notANumberSpellingsAreRefused() throws Exception {
        String id = row("num", "{\"val\": 1}");
        for (String n : List.of("NaN", "Infinity", "-Infinity", "\"NaN\"", "1e99999999999", "0x10", "01")) {
            refused("num", id, "", "{\"val\": " + n + "}", n);
        }
        for (String n : List.of("NaN", "nan", "Infinity", "-Infinity", "inf", "%D9%A1%D9%A2", "1e99999999999",
                "1%201", "0x10", "1_000", "%EF%BC%91", "1" + "0".repeat(1000))) {
            refused("numq", id, "?val=" + n, "", n + " in the query");
        }
        assertEquals("1", stored("num", id));
    }

    @Test
    void integersOutsideBigintOrNotWholeAreRefused() throws Exception {
        String id = row("int", "{\"val\": 1}");
        for (String n : List.of("9223372036854775808", "-9223372036854775809", "1.5", "1e19", "1e2147483648",
                "1e-1000000000")) {
            refused("int", id, "", "{\"val\": " + n + "}", n);
        }
        for (String n : List.of("9223372036854775808", "%D9%A1", "1.0", "1e2")) {
            refused("intq", id, "?val=" + n, "", n + " in the query");
        }
        Http.Response r = put("/int/" + id, "{\"val\": -9223372036854775808}", 11);
        assertEquals(200, r.status(), r.body());
        assertEquals("-9223372036854775808", stored("n", id));
    }

    @Test
    void aLoneSurrogateOrANulInAStringIsRefusedNotReplaced() throws Exception {
        String id = row("str", "{\"val\": \"x\"}");
        for (String s : List.of("a\\ud800b", "a\\udc00b", "\\udbff", "b\\ude00\\ud83d", "a\\u0000b")) {
            refused("str", id, "", "{\"val\": \"" + s + "\"}", s);
            refused("json", id, "", "{\"val\": {\"k\": \"" + s + "\"}}", s + " in a JSON value");
            refused("json", id, "", "{\"val\": {\"" + s + "\": 1}}", s + " in a JSON key");
        }
        // the bytes of a surrogate in UTF-8 (CESU-8), or any invalid UTF-8: never decoded into U+FFFD
        for (String q : List.of("%ED%A0%80", "a%FFb", "%C3", "%E9", "%C0%80")) {
            refused("strq", id, "?val=" + q, "", q + " in the query");
            refused("jsonq", id, "?val=%22" + q + "%22", "", q + " in a JSON query value");
        }
        // java.net.URI refuses to send these; the server refuses them before a policy sees them (bad-request)
        for (String q : List.of("%", "a%G0", "%4", "%%34%31")) {
            List<String> before = snapshot(look, "vals", id, "vals/" + id);
            Http.Response r = RawHttp.send(proxy.server().port(), "PUT /strq/" + id + "?val=" + q + " HTTP/1.1\r\n"
                    + "Host: x\r\nFencing-Token: 11\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            assertEquals(400, r.status(), q + ": " + r.body());
            assertEquals(before, snapshot(look, "vals", id, "vals/" + id), q + ": the row or the fence changed");
        }
        for (byte[] body : List.of(new byte[] {'a', (byte) 0xED, (byte) 0xA0, (byte) 0x80, 'b'},
                new byte[] {'a', (byte) 0xFF}, new byte[] {'{', '"', 'v', 'a', 'l', '"', ':', '"', (byte) 0xC3, '"',
                        '}'})) {
            List<String> before = snapshot(look, "vals", id, "vals/" + id);
            for (String route : List.of("text", "str")) {
                Http.Response r = Http.send("PUT", proxy.uri("/" + route + "/" + id),
                        HttpRequest.BodyPublishers.ofByteArray(body), Map.of("Fencing-Token", "11"));
                assertEquals(400, r.status(), route + ": " + r.body());
                assertTrue(r.body().contains("not valid UTF-8") && r.body().contains("\"parameter\":\"val\""),
                        r.body());
                assertEquals(before, snapshot(look, "vals", id, "vals/" + id), route + ": the row or fence changed");
            }
        }
        refused("strq", id, "?val=a&val=b", "", "a parameter given twice");
        assertEquals("x", stored("s", id));
        Http.Response pair = put("/str/" + id, "{\"val\": \"a\\ud83d\\ude00b\\uFFFD\\uFEFF\"}", 11);
        assertEquals(200, pair.status(), pair.body());
        assertEquals("a\ud83d\ude00b\uFFFD\uFEFF", stored("s", id));
    }

    @Test
    void jsonValuesHoldOnlyWhatJsonbStoresAsSent() throws Exception {
        String id = row("json", "{\"val\": {}}");
        for (String v : List.of("{\"a\": [1, 1e131072]}", "[1e-1000000000]", "{\"a\": 1, \"a\": 2}", "NaN",
                "{\"a\": Infinity}", "5e2147483648")) {
            refused("json", id, "", "{\"val\": " + v + "}", v);
        }
        Http.Response r = put("/json/" + id, "{\"val\": {\"b\": [1.500, 1e3, -0, \"\\ud83d\\ude00\"], \"a\": null}}",
                11);
        assertEquals(200, r.status(), r.body());
        assertEquals("{\"a\": null, \"b\": [1.500, 1000, 0, \"\ud83d\ude00\"]}", stored("j", id));
    }

    /** The report's values against the example as shipped: policies/examples/postgres-accounts.yaml and .sql. */
    @Test
    void theShippedExampleRefusesTheReportsValuesWithNothingChanged(@TempDir Path tmp) throws Exception {
        try (Pg bank = Pg.create(Files.readString(EXAMPLES.resolve("postgres-accounts.sql")));
             Connection bankLook = bank.connect()) {
            String shipped = Files.readString(EXAMPLES.resolve("postgres-accounts.yaml"));
            String policy = shipped.replace("journal: ./stockade-data/postgres/journal", "journal: ${JOURNAL}")
                    .replace("jdbc:postgresql://${PGHOST:-127.0.0.1}:${PGPORT:-5432}/${PGDATABASE:-bank}",
                            bank.url());
            assertEquals(4, shipped.split("\\$\\{PGDATABASE").length, "the example's datasource urls moved");
            try (ProxyFixture example = ProxyFixture.start(tmp.resolve("j"), policy,
                    Map.of("PGUSER", "postgres", "STOCKADE_PORT", "0"))) {
                Http.Response good = Http.put(example.uri("/accounts/acc-1/balance"), "{\"balance\": 120.50}",
                        Map.of("Fencing-Token", "42"));
                assertEquals(200, good.status(), good.body());
                for (String n : List.of("1e131072", "5e2147483648", "-1e1000000000", "1e-1000000000", "1.005",
                        "1e12")) {
                    List<String> before = List.of(snapshot(bankLook, "accounts", "acc-1", "accounts/acc-1").toString(),
                            bank.column("SELECT l::text FROM ledger l ORDER BY id").toString());
                    Http.Response r = Http.put(example.uri("/accounts/acc-1/balance"), "{\"balance\": " + n + "}",
                            Map.of("Fencing-Token", "43"));
                    assertEquals(400, r.status(), n + ": " + r.body());
                    assertTrue(r.body().contains("bad-parameter") && r.body().contains("\"parameter\":\"balance\""),
                            n + ": " + r.body());
                    assertEquals(before, List.of(snapshot(bankLook, "accounts", "acc-1", "accounts/acc-1").toString(),
                            bank.column("SELECT l::text FROM ledger l ORDER BY id").toString()), n + ": changed");
                }
                assertEquals("120.50", bank.single("SELECT balance::text FROM accounts WHERE id = 'acc-1'").get());
                Http.Response name = Http.put(example.uri("/profiles/p-1"), "{\"displayName\": \"a\\ud800b\"}",
                        Map.of("Fencing-Token", "7"));
                assertEquals(400, name.status(), name.body());
                assertTrue(name.body().contains("\"parameter\":\"name\""), name.body());
                assertEquals(List.of(), bank.column("SELECT display_name FROM profiles"));
            }
        }
    }
}
