package io.stockade.proxy.backend.postgres;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.testing.Racers;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * 32 writers race through the postgres backend, on one scope and on three overlapping scopes, in both fence
 * modes. A trigger logs every row change in commit order, so the checker sees the order PostgreSQL applied the
 * writes in, not only the final rows.
 */
class PostgresRacingWritersIT {
    static final int WRITERS = 32;
    static final int OPS_PER_WRITER = 20;
    static final String DDL = """
            CREATE TABLE docs (id text PRIMARY KEY, content text, fence_token bigint);
            CREATE TABLE docs_log (seq bigserial PRIMARY KEY, id text, content text);
            CREATE FUNCTION log_docs() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN INSERT INTO docs_log (id, content) VALUES (NEW.id, NEW.content); RETURN NEW; END $$;
            CREATE TRIGGER docs_log AFTER INSERT OR UPDATE ON docs FOR EACH ROW EXECUTE FUNCTION log_docs();
            """;

    @TempDir
    Path dir;

    /**
     * {@code fence} is {@code table} (the statement sent with its fence as one statement, the default),
     * {@code table-transaction} (table mode, {@code one-statement: false}: an explicit transaction),
     * {@code table-pipelined} (table mode, {@code commit: pipelined}, an explicit transaction) or {@code column}.
     */
    static String policy(String mode) {
        String fence = mode.startsWith("table") ? "table" : "column";
        String statement = fence.equals("table")
                ? "INSERT INTO docs (id, content) VALUES (:scope, :content)"
                + " ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content"
                : "INSERT INTO docs (id, content, fence_token) VALUES (:scope, :content, :fencing_token)"
                + " ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content, fence_token = EXCLUDED.fence_token"
                + " WHERE docs.fence_token <= EXCLUDED.fence_token";
        return """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: docs
                    match: {path: "/docs/{id}", methods: [PUT]}
                    scope: docs/{id}
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 16}
                      fence: FENCE
                      commit: COMMIT
                      one-statement: ONE
                      params: {content: body-text}
                      statements:
                        PUT: "STATEMENT"
                      CHECK
                """.replace("FENCE", fence).replace("STATEMENT", statement)
                .replace("COMMIT", mode.endsWith("pipelined") ? "pipelined" : "separate")
                .replace("ONE", Boolean.toString(mode.equals("table")))
                .replace("CHECK", fence.equals("column")
                        ? "check: SELECT fence_token FROM docs WHERE id = :scope" : "");
    }

    @Test
    void thirtyTwoWritersOnOneScopeTableMode() throws Exception {
        raceAndCheck("table", List.of("one"));
    }

    @Test
    void thirtyTwoWritersOnOverlappingScopesTableMode() throws Exception {
        raceAndCheck("table", List.of("a", "b", "c"));
    }

    @Test
    void thirtyTwoWritersOnOverlappingScopesTableModeWithThePipelinedCommit() throws Exception {
        raceAndCheck("table-pipelined", List.of("a", "b", "c"));
    }

    @Test
    void thirtyTwoWritersOnOneScopeTableModeAsAnExplicitTransaction() throws Exception {
        raceAndCheck("table-transaction", List.of("one"));
    }

    @Test
    void thirtyTwoWritersOnOverlappingScopesTableModeAsAnExplicitTransaction() throws Exception {
        raceAndCheck("table-transaction", List.of("a", "b", "c"));
    }

    @Test
    void thirtyTwoWritersOnOneScopeColumnMode() throws Exception {
        raceAndCheck("column", List.of("one"));
    }

    @Test
    void thirtyTwoWritersOnOverlappingScopesColumnMode() throws Exception {
        raceAndCheck("column", List.of("a", "b", "c"));
    }

    private void raceAndCheck(String fence, List<String> ids) throws Exception {
        try (Pg pg = Pg.create(DDL);
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy(fence), Map.of("PG_URL", pg.url()))) {
            History history = race(proxy, ids);
            Map<String, String> last = new HashMap<>();
            Map<String, List<String>> applied = new HashMap<>();
            for (String id : ids) {
                last.put("docs/" + id, pg.single("SELECT content FROM docs WHERE id = ?", "docs/" + id).orElse(null));
                applied.put("docs/" + id, pg.column("SELECT content FROM docs_log WHERE id = ? ORDER BY seq",
                        "docs/" + id));
            }
            HistoryChecker.Result result = HistoryChecker.check(history, last, applied);
            assertTrue(result.ok(), result.toString());
        }
    }

    /** Writers pick a scope at random; per scope a lease counter hands out takeovers, holders and zombies. */
    static History race(ProxyFixture proxy, List<String> ids) throws Exception {
        History history = new History();
        Map<String, AtomicLong> leases = new HashMap<>();
        ids.forEach(id -> leases.put(id, new AtomicLong(1)));
        Racers.race(history, WRITERS, OPS_PER_WRITER, (writer, n) -> {
            String id = ids.get(ThreadLocalRandom.current().nextInt(ids.size()));
            long token = Racers.token(leases.get(id));
            return new Racers.Write("docs/" + id, proxy.uri("/docs/" + id), token,
                    "w" + writer + "-n" + n + "-t" + token);
        });
        return history;
    }
}
