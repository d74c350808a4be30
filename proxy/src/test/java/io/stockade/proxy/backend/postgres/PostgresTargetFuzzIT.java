package io.stockade.proxy.backend.postgres;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.RawAttempts;
import io.stockade.proxy.testing.DifferentialOracle;
import io.stockade.proxy.testing.TargetGrammar;
import io.stockade.testing.Pg;

import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The differential fuzzer of the postgres backend (the request-target review): hostile spellings of a few resources
 * ({@link TargetGrammar}) sent to a real proxy in front of a real PostgreSQL, the path variable bound as the row's
 * key, judged by {@link DifferentialOracle} against the rows of the table and of {@code stockade_fences}, read
 * directly.
 * <p>
 * CI runs a fixed budget (300 tries per property, from {@code junit-platform.properties}); run longer on demand:
 * {@code mvn -pl policies,proxy verify -Dtest='*TargetFuzzIT' -Djqwik.tries.default=20000}.
 */
class PostgresTargetFuzzIT {
    private static Path dir;
    private static ProxyFixture proxy;
    private static Pg pg;
    private static DifferentialOracle oracle;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-pg-fuzz");
        pg = Pg.create("CREATE TABLE docs (id text PRIMARY KEY, content text)");
        proxy = ProxyFixture.start(dir.resolve("journal"), """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: docs
                    match: {path: "/docs/{path...}"}
                    scope: docs/{path}
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 2}
                      params: {name: {from: path, field: path}, content: body-text}
                      statements:
                        PUT: >-
                          INSERT INTO docs (id, content) VALUES (:name, :content)
                          ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content
                        DELETE: DELETE FROM docs WHERE id = :name
                """, Map.of("PG_URL", pg.url()));
        oracle = new DifferentialOracle(new DifferentialOracle.Storage() {
            @Override
            public Map<String, String> snapshot() throws Exception {
                Map<String, String> out = new HashMap<>();
                for (String row : pg.column("SELECT id || chr(1) || content FROM docs")) {
                    int split = row.indexOf('\u0001');
                    out.put(row.substring(0, split), row.substring(split + 1));
                }
                return out;
            }

            @Override
            public String scopeOf(String resource) {
                return "docs/" + resource;
            }
        }, () -> {
            Map<String, Long> out = new HashMap<>();
            for (String row : pg.column("SELECT scope || chr(1) || token FROM stockade_fences")) {
                int split = row.indexOf('\u0001');
                out.put(row.substring(0, split), Long.parseLong(row.substring(split + 1)));
            }
            return out;
        });
    }

    @AfterContainer
    static void stop() {
        System.out.println("PostgresTargetFuzzIT: " + (oracle == null ? "-" : oracle.summary()));
        if (proxy != null) {
            proxy.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    @Provide
    Arbitrary<TargetGrammar.Attempt> attempts() {
        return TargetGrammar.attempts("/docs", List.of("PUT", "PUT", "DELETE"), 2);
    }

    @Property
    void noSpellingLandsAStaleWriteOrMissesTheFence(@ForAll("attempts") TargetGrammar.Attempt attempt)
            throws Exception {
        oracle.judge(attempt, PostgresTargetFuzzIT::send);
    }

    static DifferentialOracle.Result send(TargetGrammar.Attempt attempt, String body) throws Exception {
        return RawAttempts.send(proxy, attempt, body);
    }
}
