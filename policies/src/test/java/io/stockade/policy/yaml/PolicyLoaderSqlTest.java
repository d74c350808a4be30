package io.stockade.policy.yaml;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.stockade.policy.Policy;
import io.stockade.policy.PolicyException;
import io.stockade.policy.SqlConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.TokenVerification;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The {@code sql} section: the PostgreSQL listener, its database and fenced tables; located errors. */
class PolicyLoaderSqlTest {
    private static final Path SOURCE = Path.of("test.yaml");

    private static final String MINIMAL = """
            store:
              type: memory
              journal: /var/lib/stockade
            sql:
              database:
                name: app
              secret-file: /etc/stockade/sql.key
              policies:
                - name: jobs
                  tables:
                    - table: jobs
                      scope: jobs/{id}
                    - table: billing.job_runs
                      scope: jobs/{job_id}/runs
            """;

    private static StockadeConfig parse(String yaml) throws PolicyException {
        return PolicyLoader.parse(yaml, SOURCE, Map.of());
    }

    private static String errors(String yaml) {
        return assertThrows(PolicyException.class, () -> parse(yaml)).getMessage();
    }

    @Test
    void aFileWithOnlySqlTablesNeedsNoHttpPolicyAndGetsTheDefaults() throws Exception {
        StockadeConfig config = parse(MINIMAL);
        assertEquals(List.of(), config.policies());
        SqlConfig sql = config.sql();
        assertEquals(new SqlConfig.Listen("127.0.0.1", 6432, null, java.time.Duration.ofSeconds(60)), sql.listen());
        assertEquals(new SqlConfig.Database("127.0.0.1", 5432, "app", null), sql.database());
        assertEquals("stockade_fence", sql.fenceRole());
        assertEquals("stockade", sql.schema());
        assertEquals(SqlConfig.DirectClients.REFUSE, sql.direct());
        assertEquals(SqlConfig.SessionTokens.ALLOW, sql.sessions());
        SqlConfig.SqlPolicy jobs = sql.policies().get(0);
        assertEquals(Policy.MissingToken.REJECT, jobs.missing());
        assertEquals(Policy.EqualToken.ACCEPT, jobs.equal());
        assertEquals(Policy.Fence.UNLIMITED, jobs.maxAdvance());
        assertNull(jobs.verify());
        assertEquals(List.of("public.jobs", "billing.job_runs"),
                sql.tables().stream().map(SqlConfig.FencedTable::qualified).toList());
        assertEquals(List.of("job_id"), sql.tables().get(1).scope().variables());
        assertEquals("jobs/7/runs", sql.tables().get(1).scope().render(Map.of("job_id", "7")));
    }

    @Test
    void theSameFileLoadsEqualAndAnotherScopeDoesNot() throws Exception {
        assertEquals(parse(MINIMAL).sql(), parse(MINIMAL).sql());
        assertTrue(!parse(MINIMAL).sql().equals(parse(MINIMAL.replace("jobs/{id}", "job/{id}")).sql()));
    }

    @Test
    void fenceKeysVerifyAndLockAreRead() throws Exception {
        StockadeConfig config = parse(MINIMAL.replace("      tables:", """
                      lock: jobs-leader
                      fence:
                        missing: allow
                        equal: reject
                        max-advance: 100
                        verify:
                          kind: etcd
                          endpoints: http://127.0.0.1:2379
                      tables:""".indent(6).stripTrailing()));
        SqlConfig.SqlPolicy jobs = config.sql().policies().get(0);
        assertEquals(Policy.MissingToken.ALLOW, jobs.missing());
        assertEquals(Policy.EqualToken.REJECT, jobs.equal());
        assertEquals(100, jobs.maxAdvance());
        assertTrue(jobs.verify() instanceof TokenVerification.Etcd);
        assertEquals("jobs-leader", jobs.lock());
    }

    @Test
    void theAdminDatasourceMustNameTheListenersDatabase() throws Exception {
        String block = "  admin-datasource: {url: \"jdbc:postgresql://db:5432/%s?sslmode=verify-full\", user: adm,"
                + " password-file: /etc/stockade/adm.pw}\n  policies:";
        SqlConfig sql = parse(MINIMAL.replace("  policies:", block.formatted("app"))).sql();
        assertEquals("adm", sql.admin().user());
        assertEquals(null, parse(MINIMAL).sql().admin());
        String other = errors(MINIMAL.replace("  policies:", block.formatted("other")));
        assertTrue(other.contains("sql.admin-datasource: its url names the database 'other', but the fence is in the"
                + " database of sql.database.name, 'app'"), other);
    }

    @Test
    void verifyWithoutALockIsAnErrorAndHmacCannotVerifyASqlSession() {
        String noLock = errors(MINIMAL.replace("      tables:", """
                      fence:
                        verify: {kind: etcd, endpoints: "http://127.0.0.1:2379"}
                      tables:""".indent(6).stripTrailing()));
        assertTrue(noLock.contains("sql.policies[0]: missing required key 'lock'"), noLock);
        String hmac = errors(MINIMAL.replace("      tables:", """
                      lock: l
                      fence:
                        verify:
                          kind: hmac
                          keys: [{id: k1, key: 0123456789abcdef0123456789abcdef-k1}]
                      tables:""".indent(6).stripTrailing()));
        assertTrue(hmac.contains("verify kind hmac checks a signature header"), hmac);
    }

    @Test
    void namesThatReachSqlMustBePlainIdentifiers() {
        String message = errors(MINIMAL.replace("table: jobs\n", "table: 'Jobs; DROP TABLE x'\n")
                .replace("scope: jobs/{id}", "scope: jobs/{Id}"));
        assertTrue(message.contains("sql.policies[0].tables[0].table") && message.contains("is not a table name"),
                message);
        assertTrue(message.contains("sql.policies[0].tables[0].scope") && message.contains("not a column name"),
                message);
        assertTrue(errors(MINIMAL.replace("secret-file:", "fence-role: Stockade\n  secret-file:"))
                .contains("sql.fence-role"));
    }

    @Test
    void aTableIsFencedOnceAndPolicyNamesDifferFromHttpPolicies() {
        assertTrue(errors(MINIMAL.replace("table: billing.job_runs", "table: public.jobs"))
                .contains("fenced twice"));
        String http = MINIMAL + """
                policies:
                  - name: jobs
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: /srv}
                """;
        assertTrue(errors(http).contains("sql policy name 'jobs' is also the name of a policy"), errors(http));
    }

    @Test
    void unknownKeysAreNamedWithTheValidOnes() {
        String message = errors(MINIMAL.replace("secret-file:", "secret: x\n  secret-file:"));
        assertTrue(message.contains("sql.secret") && message.contains("secret-file"), message);
        assertTrue(errors(MINIMAL.replace("name: app", "name: app\n    sslmode: require"))
                .contains("sql.database.sslmode"));
    }

    @Test
    void withoutSqlTheHttpPoliciesAreStillRequired() {
        String message = errors("store: {type: memory, journal: /j}\n");
        assertTrue(message.contains("policies"), message);
    }
}
