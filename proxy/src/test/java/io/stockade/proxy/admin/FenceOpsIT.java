package io.stockade.proxy.admin;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fence-state operations through both interfaces — the {@code fence} command and the admin endpoints — on the
 * etcd and postgres stores (while proxies run) and the memory store (the command only while no proxy holds the
 * journal).
 * Nothing lowers a token.
 */
class FenceOpsIT {
    static final String ADMIN_TOKEN = "s3cret-admin-token";
    static EtcdServer etcd;

    @TempDir
    Path dir;

    @BeforeAll
    static void startEtcd() {
        if (EtcdServer.available()) {
            etcd = EtcdServer.single();
        }
    }

    static void assumeEtcd() {
        Tools.require(Tools.Tool.ETCD);
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    String yaml(String store) {
        return TestPolicies.on(store).admin("token-file: ${TOKEN_FILE}")
                .policy("docs", "/docs/{id...}", "docs/{id}").http("${UPSTREAM}", "conditional: if-match").yaml();
    }

    String etcdStore() {
        assumeEtcd();
        return """
                store:
                  type: etcd
                  endpoints: %s
                  prefix: /ops/%s/
                """.formatted(etcd.endpoints(), UUID.randomUUID());
    }

    static String postgresStore(Pg pg) {
        return """
                store:
                  type: postgres
                  datasource: {url: "%s", user: postgres, pool-size: 4}
                """.formatted(pg.url());
    }

    record Run(int code, String out, String err) {
    }

    Run cli(Path config, String stdin, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(List.of("--config", config.toString()));
        all.addAll(List.of(args));
        int code = FenceCommand.run(all, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    Path configFile(String yaml, TestUpstream upstream) throws Exception {
        Path tokenFile = dir.resolve("admin-token");
        Files.writeString(tokenFile, ADMIN_TOKEN + "\n");
        Path config = dir.resolve("stockade.yaml");
        Files.writeString(config, yaml.replace("${UPSTREAM}", upstream.baseUri().toString())
                .replace("${TOKEN_FILE}", tokenFile.toString()).replace("${JOURNAL}", dir.resolve("j").toString()));
        return config;
    }

    ProxyFixture proxy(Path config) throws Exception {
        return ProxyFixture.start(dir.resolve("j"), Files.readString(config), Map.of());
    }

    static Http.Response admin(ProxyFixture p, String method, String path, String body, String token)
            throws Exception {
        Map<String, String> h = token == null ? Map.of() : Map.of("Authorization", "Bearer " + token);
        return Http.send(method, p.uri(path), body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body), h);
    }

    static Http.Response write(ProxyFixture p, String path, long token) throws Exception {
        return Http.put(p.uri(path), "t" + token, Map.of("Fencing-Token", Long.toString(token)));
    }

    @Test
    void adminEndpointsNeedTheBearerToken() throws Exception {
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture p = proxy(configFile(yaml(etcdStore()), upstream))) {
            assertEquals(401, admin(p, "GET", "/admin/fences/floors", null, null).status());
            Http.Response wrong = admin(p, "GET", "/admin/fences/floors", null, "wrong");
            assertEquals(401, wrong.status());
            assertEquals("application/problem+json", wrong.header("Content-Type").orElseThrow());
            assertTrue(wrong.header("WWW-Authenticate").isPresent());
            assertEquals(401, admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"\",\"token\":1}", null).status());
            assertEquals(200, admin(p, "GET", "/admin/fences/floors", null, ADMIN_TOKEN).status());
        }
    }

    @Test
    void withoutAnAdminBlockTheEndpointsAreOff() throws Exception {
        try (TestUpstream upstream = TestUpstream.start()) {
            String yaml = yaml(etcdStore());
            yaml = yaml.substring(0, yaml.indexOf("admin:"));
            try (ProxyFixture p = proxy(configFile(yaml, upstream))) {
                assertEquals(404, admin(p, "GET", "/admin/fences/floors", null, ADMIN_TOKEN).status());
            }
        }
    }

    @Test
    void everyOperationOverHttpOnEtcd() throws Exception {
        everyOperationOverHttp(etcdStore());
    }

    @Test
    void everyOperationOverHttpOnPostgres() throws Exception {
        try (Pg pg = Pg.create("")) {
            everyOperationOverHttp(postgresStore(pg));
        }
    }

    void everyOperationOverHttp(String store) throws Exception {
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture p = proxy(configFile(yaml(store), upstream))) {
            assertEquals(2, write(p, "/docs/a/1", 5).status() / 100);
            assertEquals(2, write(p, "/docs/b/1", 7).status() / 100);
            Http.Response show = admin(p, "GET", "/admin/fences/scope?name=docs/a/1", null, ADMIN_TOKEN);
            assertEquals(200, show.status(), show.body());
            assertTrue(show.body().contains("\"token\":5"), show.body());
            Http.Response list = admin(p, "GET", "/admin/fences/scopes?prefix=docs/&limit=10", null, ADMIN_TOKEN);
            assertTrue(list.body().indexOf("docs/b/1") < list.body().indexOf("docs/a/1"),
                    "most recent first: " + list.body());
            // raising a scope below its token changes nothing: lowering is impossible
            Http.Response lower = admin(p, "POST", "/admin/fences/raise", "{\"scope\":\"docs/a/1\",\"token\":2}",
                    ADMIN_TOKEN);
            assertTrue(lower.body().contains("\"token\":5") && lower.body().contains("\"raised\":false"), lower.body());
            assertEquals(409, write(p, "/docs/a/1", 4).status());
            // a prefix floor applies to scopes that do not exist yet
            Http.Response floor = admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"docs/a/\",\"token\":100}",
                    ADMIN_TOKEN);
            assertEquals(200, floor.status(), floor.body());
            Http.Response belowFloor = write(p, "/docs/a/new", 99);
            assertEquals(409, belowFloor.status());
            if (store.contains("type: etcd")) {
                // the refusal says where the highest came from (the postgres store cannot tell: docs/admin-api.md)
                assertTrue(belowFloor.body().contains("below the floor 100 an operator raised")
                        && belowFloor.body().contains("\"floor\":true"), belowFloor.body());
            }
            Http.Response belowWrite = write(p, "/docs/b/1", 6);
            assertEquals(409, belowWrite.status());
            assertFalse(belowWrite.body().contains("floor"), belowWrite.body());
            assertEquals(2, write(p, "/docs/a/new2", 101).status() / 100);
            assertEquals(2, write(p, "/docs/b/2", 3).status() / 100);  // other prefix untouched
            // a lower floor does not lower the floor
            admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"docs/a/\",\"token\":1}", ADMIN_TOKEN);
            assertEquals(409, write(p, "/docs/a/other", 50).status());
            // retire: refused while uncovered, done when a floor covers it
            Http.Response refused = admin(p, "POST", "/admin/fences/retire", "{\"scope\":\"docs/b/1\"}", ADMIN_TOKEN);
            assertEquals(409, refused.status(), refused.body());
            Http.Response retired = admin(p, "POST", "/admin/fences/retire", "{\"scope\":\"docs/a/1\"}", ADMIN_TOKEN);
            assertEquals(200, retired.status(), retired.body());
            assertEquals(409, write(p, "/docs/a/1", 6).status(), "the floor still fences a retired scope");
            // export, then import into it a lower state: nothing goes down
            Http.Response export = admin(p, "GET", "/admin/fences/export", null, ADMIN_TOKEN);
            assertEquals(200, export.status());
            assertTrue(export.body().contains("{\"kind\":\"floor\",\"prefix\":\"docs/a/\",\"token\":100,"
                    + "\"keeper\":\"store\"}"), export.body());
            assertTrue(export.body().contains("\"scope\":\"docs/b/1\",\"token\":7"), export.body());
            Http.Response imported = admin(p, "POST", "/admin/fences/import",
                    "{\"kind\":\"scope\",\"scope\":\"docs/b/1\",\"token\":1}\n"
                            + "{\"kind\":\"floor\",\"prefix\":\"docs/a/\",\"token\":3}\n"
                            + "{\"kind\":\"scope\",\"scope\":\"docs/c/1\",\"token\":40}\n", ADMIN_TOKEN);
            assertEquals(200, imported.status(), imported.body());
            assertTrue(imported.body().contains("\"keptHigher\":2"), imported.body());
            assertEquals(409, write(p, "/docs/b/1", 6).status());
            assertEquals(409, write(p, "/docs/c/1", 39).status());
            assertEquals(404, admin(p, "GET", "/admin/fences/nope", null, ADMIN_TOKEN).status());
            assertEquals(400, admin(p, "POST", "/admin/fences/raise", "{\"scope\":\"x\",\"token\":-1}",
                    ADMIN_TOKEN).status());
        }
    }

    @Test
    void everyOperationThroughTheCommandOnEtcdWhileAProxyRuns() throws Exception {
        everyOperationThroughTheCommandWhileAProxyRuns(etcdStore());
    }

    @Test
    void everyOperationThroughTheCommandOnPostgresWhileAProxyRuns() throws Exception {
        try (Pg pg = Pg.create("")) {
            everyOperationThroughTheCommandWhileAProxyRuns(postgresStore(pg));
        }
    }

    void everyOperationThroughTheCommandWhileAProxyRuns(String store) throws Exception {
        try (TestUpstream upstream = TestUpstream.start()) {
            Path config = configFile(yaml(store), upstream);
            try (ProxyFixture p = proxy(config)) {
                assertEquals(2, write(p, "/docs/a/1", 5).status() / 100);
                Run show = cli(config, "", "show", "docs/a/1");
                assertEquals(0, show.code(), show.err());
                assertTrue(show.out().contains("\"token\":5"), show.out());
                Run lower = cli(config, "", "raise", "--scope", "docs/a/1", "--token", "1");
                assertTrue(lower.out().contains("\"token\":5"), lower.out());
                assertEquals(0, cli(config, "", "raise", "--prefix", "docs/", "--token", "50").code());
                assertEquals(409, write(p, "/docs/brand-new", 49).status(), "the floor reaches a new scope");
                Run floors = cli(config, "", "floors");
                assertTrue(floors.out().contains("\"prefix\":\"docs/\",\"token\":50"), floors.out());
                Run list = cli(config, "", "list", "--prefix", "docs/", "--limit", "5");
                assertTrue(list.out().contains("docs/a/1"), list.out());
                Run export = cli(config, "", "export");
                assertTrue(export.out().contains("\"kind\":\"scope\",\"scope\":\"docs/a/1\",\"token\":5"),
                        export.out());
                Run imported = cli(config, "{\"kind\":\"scope\",\"scope\":\"docs/a/1\",\"token\":2}\n", "import");
                assertEquals(0, imported.code(), imported.err());
                assertTrue(cli(config, "", "show", "docs/a/1").out().contains("\"token\":5"));
                Run retired = cli(config, "", "retire", "docs/a/1");
                assertEquals(0, retired.code(), retired.err());
                assertEquals(3, cli(config, "", "show", "nothing/here").code());
                assertEquals(0, cli(config, "", "raise", "--scope", "other/x", "--token", "5").code());
                Run uncovered = cli(config, "", "retire", "other/x");
                assertEquals(3, uncovered.code(), uncovered.out() + uncovered.err());
                assertTrue(cli(config, "", "show", "other/x").out().contains("\"token\":5"), "not retired");
            }
        }
    }

    @Test
    void theCommandOnTheMemoryStoreWaitsForTheProxyToLetGoOfTheJournal() throws Exception {
        String memory = "store:\n  type: memory\n  journal: ${JOURNAL}\n";
        try (TestUpstream upstream = TestUpstream.start()) {
            Path config = configFile(yaml(memory), upstream);
            try (ProxyFixture p = proxy(config)) {
                assertEquals(2, write(p, "/docs/a/1", 5).status() / 100);
                Run locked = cli(config, "", "show", "docs/a/1");
                assertEquals(1, locked.code());
                assertTrue(locked.err().contains("journal.lock") && locked.err().contains("admin endpoints"),
                        locked.err());
                // the same operations over HTTP on the memory store
                assertEquals(200, admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"docs/z/\",\"token\":9}",
                        ADMIN_TOKEN).status());
                assertEquals(409, write(p, "/docs/z/new", 8).status());
            }
            Run raise = cli(config, "", "raise", "--prefix", "docs/a/", "--token", "20");
            assertEquals(0, raise.code(), raise.err());
            Run refused = cli(config, "", "retire", "docs/zz");
            assertEquals(3, refused.code());
            Run retired = cli(config, "", "retire", "docs/a/1");
            assertEquals(0, retired.code(), retired.err());
            Run floors = cli(config, "", "floors");
            assertTrue(floors.out().contains("\"prefix\":\"docs/z/\",\"token\":9"), floors.out());
            // after a restart the floors still hold (journaled) and the retired scope stays fenced
            try (ProxyFixture p = proxy(config)) {
                Http.Response w19 = write(p, "/docs/a/1", 19);
                assertTrue(w19.body().contains("below the floor 20 an operator raised"), w19.body());
                assertEquals(409, w19.status(), w19.body() + " floors: "
                        + admin(p, "GET", "/admin/fences/floors", null, ADMIN_TOKEN).body() + " show: "
                        + admin(p, "GET", "/admin/fences/scope?name=docs/a/1", null, ADMIN_TOKEN).body());
                assertEquals(409, write(p, "/docs/z/x", 8).status());
                assertFalse(admin(p, "GET", "/admin/fences/scope?name=docs/a/1", null, ADMIN_TOKEN).body()
                        .contains("\"token\":5"));
            }
        }
    }

    @Test
    void theCommandReadsTheStoreAndThePoliciesNotTheAdminTokenOrTheListener() throws Exception {
        // the admin token and the listener from variables nobody set for an offline run
        Path config = dir.resolve("offline.yaml");
        String policies = """
                policies:
                  - name: docs
                    match: {path: "/docs/{id}"}
                    scope: docs/{id}
                    backend: {type: http, url: "%s"}
                """;
        String rest = """
                server: {host: "${STOCKADE_TEST_UNSET_HOST}"}
                store:
                  type: memory
                  journal: %s
                admin:
                  token: ${STOCKADE_TEST_UNSET_ADMIN_TOKEN}
                """.formatted(dir.resolve("j"));
        Files.writeString(config, rest + policies.formatted("http://127.0.0.1:1/"));
        Run raise = cli(config, "", "raise", "--scope", "docs/a", "--token", "7");
        assertEquals(0, raise.code(), raise.err());
        Run show = cli(config, "", "show", "docs/a");
        assertTrue(show.out().contains("\"token\":7"), show.out());
        // the policies' variables are needed: they say where each scope's fence is kept (a postgres backend's
        // datasource, for one)
        Files.writeString(config, rest + policies.formatted("${STOCKADE_TEST_UNSET_UPSTREAM}"));
        Run policy = cli(config, "", "show", "docs/a");
        assertEquals(2, policy.code());
        assertTrue(policy.err().contains("STOCKADE_TEST_UNSET_UPSTREAM is not set")
                && policy.err().contains("where each scope's fence is kept"), policy.err());
        // the store's own variables are still required, with the loader's message
        Files.writeString(config, "store: {type: memory, journal: \"${STOCKADE_TEST_UNSET_JOURNAL}\"}\npolicies: []\n");
        Run missing = cli(config, "", "show", "docs/a");
        assertEquals(2, missing.code());
        assertTrue(missing.err().contains("STOCKADE_TEST_UNSET_JOURNAL is not set"), missing.err());
    }
}
