package io.stockade.proxy;

import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import io.stockade.proxy.backend.postgres.PostgresBackend;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The contract through the postgres backend, {@code fence: table}: the fence row is bumped in the write's own
 * transaction. What landed is read from the table itself; the fence from {@code stockade_fences}.
 */
class PostgresContractIT extends ContractIT {
    Pg pg;

    @Override
    String backendYaml() {
        return """
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 4}
                      params:
                        content: body-text
                      statements:
                        GET: SELECT content FROM docs WHERE id = :scope
                        PUT: >-
                          INSERT INTO docs (id, content) VALUES (:scope, :content)
                          ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content
                        DELETE: DELETE FROM docs WHERE id = :scope
                """;
    }

    @Override
    Map<String, String> startStorage() throws Exception {
        pg = Pg.create("CREATE TABLE docs (id text PRIMARY KEY, content text)");
        return Map.of("PG_URL", pg.url());
    }

    @Override
    void stopStorage() {
        pg.close();
    }

    @Override
    Optional<String> stored(String path) throws Exception {
        return pg.single("SELECT content FROM docs WHERE id = ?", path.substring(1));
    }

    @Override
    OptionalLong fenceOf(String scope) throws Exception {
        return pg.fence(scope);
    }

    @Override
    void takeFenceAway() {
        ((PostgresBackend) proxy.server().backend("docs")).pool().close();
    }

    @Override
    String expectedRead(String content) {
        return "[{\"content\":\"" + content + "\"}]";
    }

    @Test
    void aWriteAnswersRowsAffectedAsJson() throws Exception {
        Http.Response r = put("/docs/j", "v", "3");
        assertEquals(200, r.status(), r.body());
        assertEquals("{\"rows_affected\":1,\"rows\":[]}", r.body());
    }

    @Test
    void theFenceRowIsBumpedInTheSameTransaction() throws Exception {
        assert2xx(put("/docs/f", "v", "41"));
        assertEquals(OptionalLong.of(41), pg.fence("docs/f"));
    }
}
