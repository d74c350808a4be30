package io.stockade.proxy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.LogRecord;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.testing.LogLines;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A SQL typo in a postgres policy is a located error at load, not a 502 at the first write: with the database
 * reachable, each statement is described by PostgreSQL without being run, and a column the table does not have
 * stops the start with exit 2, naming the field, the policy, its route and the database's own message and hint;
 * a reload with it is refused and the policies in force stay. Statements the database describes (casts, jsonb,
 * RETURNING, a placeholder it cannot type without the proxy's typed value) start as before, and a database that
 * cannot be reached at load is the start's warning, not a failure.
 */
class PostgresStatementCheckIT {
    @TempDir
    Path dir;
    private Pg pg;

    @BeforeEach
    void schema() throws Exception {
        pg = Pg.create("""
                CREATE TABLE items (id text PRIMARY KEY, name text NOT NULL, doc jsonb, fence_token bigint NOT NULL
                DEFAULT 0);
                INSERT INTO items (id, name) VALUES ('a', 'first');
                """);
    }

    @AfterEach
    void drop() throws Exception {
        pg.close();
    }

    private Path policy(String url, String fence, String put) throws Exception {
        return Files.writeString(dir.resolve("stockade.yaml"), """
                server: {port: 0}
                store: {type: memory, journal: "%s"}
                policies:
                  - name: items
                    match: {path: "/items/{id}", methods: [PUT]}
                    scope: items/{id}
                    backend:
                      type: postgres
                      datasource: {url: "%s", user: postgres, connect-timeout: 1s}
                      params:
                        id: path
                        name: {from: body, type: string}
                %s
                      statements:
                        PUT:
                          - name: set-name
                            sql: "%s"
                """.formatted(dir.resolve("journal"), url, fence, put));
    }

    private static final String COLUMN = "      fence: column\n"
            + "      check: SELECT fence_token FROM items WHERE id = :id";
    private static final String TYPO = "UPDATE items SET nmae = :name WHERE id = :id RETURNING id";

    record Run(int code, String out, String err) {
    }

    /** Main's command line; one that starts would serve until stopped, so it fails after 60 s instead. */
    private static Run main(Path config) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        int code = org.junit.jupiter.api.Assertions.assertTimeoutPreemptively(java.time.Duration.ofSeconds(60),
                () -> Main.run(new String[]{"--config", config.toString()}, new PrintStream(out, true,
                        StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8)),
                "the proxy started (it did not stop at the statement)");
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aColumnTypoStopsTheStartLocatedWithTheDatabasesMessage() throws Exception {
        Path config = policy(pg.url(), "", TYPO);
        Run run = main(config);
        assertEquals(Main.EXIT_USAGE, run.code(), run.err());
        assertEquals("", run.out(), "never listened");
        // located at the statement, line and column, as the loader locates its own errors (issue 49)
        List<String> lines = Files.readAllLines(config);
        int line = 0;
        while (!lines.get(line).contains("sql: \"")) {
            line++;
        }
        String at = config + ":" + (line + 1) + ":" + (lines.get(line).indexOf("sql: \"") + 6) + ": ";
        assertTrue(run.err().contains(at + "policies[0].backend.statements.PUT[0] ('set-name'): policy 'items'"
                + " (/items/{id}): column \"nmae\" of relation \"items\" does not exist (SQLSTATE 42703)"), run.err());
        assertTrue(run.err().contains("does not match its database"), run.err());
        // nothing ran: the row is as it was, and no fence was taken in the database
        assertEquals(List.of("first"), pg.column("SELECT name FROM items WHERE id = 'a'"));
        assertEquals(List.of("0"), pg.column("SELECT count(*) FROM stockade_fences"));
    }

    /**
     * A path variable the scope reads is bound as text (one spelling, one scope): against a key column of another
     * type PostgreSQL refuses it, and the check says so at load, naming what to declare (PostgresHostileIT has the
     * write that landed under another spelling before).
     */
    @Test
    void aScopeVariableAgainstAKeyOfAnotherTypeIsALoadErrorNamingTheType() throws Exception {
        pg.execute("CREATE TABLE numbered (id bigint PRIMARY KEY, name text)");
        Run run = main(policy(pg.url(), "", "UPDATE numbered SET name = :name WHERE id = :id"));
        assertEquals(Main.EXIT_USAGE, run.code(), run.err());
        assertTrue(run.err().contains("operator does not exist: bigint = text (SQLSTATE 42883)"), run.err());
        assertTrue(run.err().contains("a path variable the scope reads (id) is bound as text")
                && run.err().contains("`type: integer`"), run.err());
        Run insert = main(policy(pg.url(), "", "INSERT INTO numbered (id, name) VALUES (:id, :name)"));
        assertEquals(Main.EXIT_USAGE, insert.code(), insert.err());
        assertTrue(insert.err().contains("(SQLSTATE 42804)") && insert.err().contains("`type: integer`"),
                insert.err());
        assertEquals(List.of("0"), pg.column("SELECT count(*) FROM numbered"));
    }

    @Test
    void aTypoInColumnModeAndAnUnknownTableAreCaughtToo() throws Exception {
        Run column = main(policy(pg.url(), COLUMN,
                "UPDATE items SET name = :name, fence_token = :fencing_token WHERE id = :id"
                        + " AND fence_tokn <= :fencing_token RETURNING id"));
        assertEquals(Main.EXIT_USAGE, column.code(), column.err());
        assertTrue(column.err().contains("column \"fence_tokn\" does not exist (SQLSTATE 42703)"), column.err());
        assertEquals(List.of("0"), pg.column("SELECT fence_token FROM items WHERE id = 'a'"));

        Run table = main(policy(pg.url(), "", "INSERT INTO itemz (id, name) VALUES (:id, :name)"));
        assertEquals(Main.EXIT_USAGE, table.code(), table.err());
        assertTrue(table.err().contains("relation \"itemz\" does not exist (SQLSTATE 42P01)"), table.err());
    }

    @Test
    void statementsTheDatabaseDescribesStartAsBefore() throws Exception {
        // a cast, jsonb, RETURNING, and a placeholder PostgreSQL cannot type without the proxy's typed value
        Path config = policy(pg.url(), "", "UPDATE items SET name = :name, doc = jsonb_build_object('n', :name::text)"
                + " WHERE id = :id AND (:name IS NOT NULL) RETURNING id, name");
        try (StockadeServer server = StockadeServer.start(PolicyLoader.load(config))) {
            assertTrue(server.port() > 0);
        }
    }

    /**
     * A statement sent with its fence as one statement ({@code one-statement: true}) is described in that
     * combined text too: one PostgreSQL refuses there only (it reads a table named as the fence's {@code WITH}) stops
     * the start saying so and what to set; with {@code one-statement: false} it starts, and its write lands fenced.
     * A statement that starts with its own {@code WITH} is sent as an explicit transaction and lands fenced too.
     */
    @Test
    void aStatementThatCannotCarryItsFenceIsALoadErrorNamingTheSetting() throws Exception {
        pg.execute("CREATE TABLE stockade_fence_gate (id text PRIMARY KEY); INSERT INTO stockade_fence_gate"
                + " VALUES ('a')");
        String clash = "UPDATE items SET name = :name FROM stockade_fence_gate g WHERE g.id = items.id"
                + " AND items.id = :id RETURNING items.id";
        Path config = policy(pg.url(), "      one-statement: true", clash);
        Run run = main(config);
        assertEquals(Main.EXIT_USAGE, run.code(), run.err());
        assertTrue(run.err().contains("policies[0].backend.statements.PUT[0] ('set-name'): policy 'items'"
                + " (/items/{id}): sent as one statement with its fence (one-statement: true),"
                + " PostgreSQL refuses it: "), run.err());
        assertTrue(run.err().contains("; set one-statement: false"), run.err());
        assertEquals(List.of("first"), pg.column("SELECT name FROM items WHERE id = 'a'"));

        policy(pg.url(), "      one-statement: false", clash);
        try (StockadeServer server = StockadeServer.start(PolicyLoader.load(config))) {
            assertEquals(200, io.stockade.testing.Http.put(URI.create("http://127.0.0.1:" + server.port()
                    + "/items/a"), "{\"name\": \"second\"}", Map.of("Fencing-Token", "4")).status());
        }
        assertEquals(List.of("second"), pg.column("SELECT name FROM items WHERE id = 'a'"));
        assertEquals(List.of("4"), pg.column("SELECT token FROM stockade_fences WHERE scope = 'items/a'"));

        policy(pg.url(), "      one-statement: true", "WITH n AS (SELECT :name::text AS v)"
                + " UPDATE items SET name = (SELECT v FROM n) WHERE id = :id RETURNING id");
        try (StockadeServer server = StockadeServer.start(PolicyLoader.load(config))) {
            URI items = URI.create("http://127.0.0.1:" + server.port() + "/items/a");
            assertEquals(200, io.stockade.testing.Http.put(items, "{\"name\": \"third\"}",
                    Map.of("Fencing-Token", "5")).status());
            assertEquals(409, io.stockade.testing.Http.put(items, "{\"name\": \"stale\"}",
                    Map.of("Fencing-Token", "4")).status());
        }
        assertEquals(List.of("third"), pg.column("SELECT name FROM items WHERE id = 'a'"));
        assertEquals(List.of("5"), pg.column("SELECT token FROM stockade_fences WHERE scope = 'items/a'"));
    }

    @Test
    void anUnreachableDatabaseAtLoadIsAWarningNotAFailure() throws Exception {
        int closed = FreePorts.next(); // nothing listens there: the ports of a test JVM's own block
        // fence: column opens no connection at start: only the check would, and it finds no database
        Path config = policy("jdbc:postgresql://127.0.0.1:" + closed + "/test", COLUMN,
                "UPDATE items SET nmae = :name, fence_token = :fencing_token WHERE id = :id"
                        + " AND fence_token <= :fencing_token RETURNING id");
        try (LogLines warnings = new LogLines("io.stockade.proxy.backend.postgres", Level.WARNING);
             StockadeServer server = StockadeServer.start(PolicyLoader.load(config))) {
            assertTrue(server.port() > 0, "started: the statements are checked when the database answers");
            // and the operator is told they were not (a typo above would show only at the first write)
            assertTrue(warnings.records().stream().map(LogRecord::getMessage).anyMatch(m -> m.contains(
                    "were not checked at load") && m.contains("refused")), warnings.records().stream()
                    .map(LogRecord::getMessage).toList().toString());
        }
    }

    @Test
    void aReloadWithATypoIsRefusedAndThePoliciesInForceStay() throws Exception {
        Path config = policy(pg.url(), "", "UPDATE items SET name = :name WHERE id = :id RETURNING id");
        try (StockadeServer server = StockadeServer.start(PolicyLoader.load(config))) {
            policy(pg.url(), "", TYPO);
            io.stockade.proxy.admin.PolicyReload.Refused refused = org.junit.jupiter.api.Assertions.assertThrows(
                    io.stockade.proxy.admin.PolicyReload.Refused.class,
                    () -> server.reload());
            assertTrue(refused.getMessage().contains("column \"nmae\" of relation \"items\" does not exist"),
                    refused.getMessage());
            assertTrue(refused.getMessage().contains("the policies in force stay"), refused.getMessage());
        }
    }
}
