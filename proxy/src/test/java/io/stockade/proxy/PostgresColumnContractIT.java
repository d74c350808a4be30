package io.stockade.proxy;

import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import io.stockade.policy.PolicyException;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.backend.postgres.PostgresBackend;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The contract through the postgres backend, {@code fence: column}: the token lives in the data row and the
 * statements compare it. A delete is a soft delete (content NULL, token kept), or the fence would go with the row.
 */
class PostgresColumnContractIT extends ContractIT {
    Pg pg;

    @Override
    String backendYaml() {
        throw new UnsupportedOperationException();
    }

    @Override
    String backendYaml(String policy) {
        String cmp = policy.equals("strict") ? "<" : "<=";
        return """
                    backend:
                      type: postgres
                      datasource: {url: "${PG_URL}", user: postgres, pool-size: 4}
                      fence: column
                      params:
                        content: body-text
                      statements:
                        GET: SELECT content FROM docs WHERE id = :scope AND content IS NOT NULL
                        PUT: >-
                          INSERT INTO docs (id, content, fence_token) VALUES (:scope, :content, :fencing_token)
                          ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content, fence_token = EXCLUDED.fence_token
                          WHERE docs.fence_token IS NULL OR docs.fence_token CMP EXCLUDED.fence_token
                        DELETE: >-
                          UPDATE docs SET content = NULL, fence_token = :fencing_token
                          WHERE id = :scope AND (fence_token IS NULL OR fence_token CMP :fencing_token)
                      check: SELECT fence_token FROM docs WHERE id = :scope
                """.replace("CMP", cmp);
    }

    @Override
    String policyYaml() {
        StringBuilder b = new StringBuilder("""
                store:
                  type: memory
                  journal: ${JOURNAL}
                policies:
                """);
        policy(b, "docs", "");
        policy(b, "strict", "    fence:\n      equal: reject\n      header: X-Lease-Token\n");
        policy(b, "lenient", "    fence:\n      missing: allow\n");
        policy(b, "capped", "    fence:\n      max-advance: 100\n");
        return b.toString();
    }

    /** The policy's statements compare the token in the row: a NULL token changes no row that has one. */
    @Override
    boolean tokenlessWritesLand() {
        return false;
    }

    @Override
    Map<String, String> startStorage() throws Exception {
        pg = Pg.create("CREATE TABLE docs (id text PRIMARY KEY, content text, fence_token bigint)");
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
        return pg.single("SELECT fence_token FROM docs WHERE id = ?", scope)
                .map(t -> OptionalLong.of(Long.parseLong(t))).orElse(OptionalLong.empty());
    }

    @Override
    void takeFenceAway() {
        ((PostgresBackend) proxy.server().backend("docs")).pool().close();
    }

    @Override
    String expectedRead(String content) {
        return "[{\"content\":\"" + content + "\"}]";
    }

    /** In column mode the comparison is in the user's statements: observe cannot run them unfenced. */
    @Override
    @Test
    void observeModeForwardsWhatEnforceWouldRefuseAndCountsIt() {
        PolicyException e = assertThrows(PolicyException.class, () -> load("observe"));
        assertTrue(e.getMessage().contains("fence: column needs fence.mode enforce"), e.getMessage());
    }

    @Override
    @Test
    void offModeIsAPlainProxy() {
        PolicyException e = assertThrows(PolicyException.class, () -> load("off"));
        assertTrue(e.getMessage().contains("fence: column needs fence.mode enforce"), e.getMessage());
    }

    private void load(String mode) throws PolicyException {
        StringBuilder b = new StringBuilder("store: {type: memory, journal: /tmp/x}\npolicies:\n");
        policy(b, "docs", "    fence:\n      mode: " + mode + "\n");
        PolicyLoader.parse(b.toString(), Path.of("column.yaml"), Map.of("PG_URL", pg.url()));
    }

    @Test
    void theTokenIsKeptInTheRow() throws Exception {
        assert2xx(put("/docs/c", "v", "12"));
        assertEquals(OptionalLong.of(12), fenceOf("docs/c"));
        Http.Response r = put("/docs/c", "old", "11");
        assertEquals(409, r.status(), r.body());
        assertTrue(r.body().contains("\"highest\":12"), r.body());
    }
}
