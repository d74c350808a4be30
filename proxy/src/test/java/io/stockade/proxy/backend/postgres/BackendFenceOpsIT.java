package io.stockade.proxy.backend.postgres;

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
import java.util.Optional;
import java.util.OptionalLong;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.StockadeServer;
import io.stockade.proxy.admin.FenceCommand;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.store.FenceStores;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fence-state operations on a scope whose fence a postgres backend keeps in its own database ({@code fence:
 * table}, the proxy's store never consulted for its writes): a raise or a floor through the admin API and through
 * the {@code fence} command holds for the backend's next write — a lower token is refused 409 and the row (read
 * with JDBC) is unchanged — {@code show} answers the table's token, export and import carry the backend's scopes.
 * A fence the proxy cannot reach (fence: column) is refused with the reason; a call that could mean two fences
 * must name its policy. The store is a postgres store in another schema, so every assertion can tell the two
 * fences apart.
 */
class BackendFenceOpsIT {
    static final String ADMIN_TOKEN = "backend-fence-ops-admin";

    @TempDir
    Path dir;
    Pg storeDb;
    Pg backendDb;
    Pg columnDb;
    TestUpstream upstream;

    @BeforeEach
    void databases() throws Exception {
        storeDb = Pg.create("");
        backendDb = Pg.create("CREATE TABLE docs (id text PRIMARY KEY, content text)");
        columnDb = Pg.create("CREATE TABLE rows (id text PRIMARY KEY, content text, fence_token bigint)");
        upstream = TestUpstream.start();
    }

    @AfterEach
    void dropDatabases() {
        upstream.close();
        storeDb.close();
        backendDb.close();
        columnDb.close();
    }

    static String yaml(Pg store, Pg backend, Pg column, TestUpstream upstream, Path tokenFile) {
        return yaml("""
                store:
                  type: postgres
                  datasource: {url: "%s", user: postgres, pool-size: 2}
                """.formatted(store.url()), backend, column, upstream, tokenFile);
    }

    static String yaml(String store, Pg backend, Pg column, TestUpstream upstream, Path tokenFile) {
        return store + """
                policies:
                  - name: orders
                    match: {path: "/orders/{id}"}
                    scope: orders/{id}
                    backend:
                      type: postgres
                      datasource: {url: "%s", user: postgres, pool-size: 4}
                      params: {content: body-text}
                      statements:
                        GET: SELECT content FROM docs WHERE id = :scope
                        PUT: >-
                          INSERT INTO docs (id, content) VALUES (:scope, :content)
                          ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content
                  - name: rows
                    match: {path: "/rows/{id}"}
                    scope: rows/{id}
                    backend:
                      type: postgres
                      datasource: {url: "%s", user: postgres, pool-size: 2}
                      fence: column
                      params: {content: body-text}
                      statements:
                        PUT: >-
                          INSERT INTO rows (id, content, fence_token) VALUES (:scope, :content, :fencing_token)
                          ON CONFLICT (id) DO UPDATE SET content = EXCLUDED.content, fence_token = EXCLUDED.fence_token
                          WHERE rows.fence_token IS NULL OR rows.fence_token <= EXCLUDED.fence_token
                      check: SELECT fence_token FROM rows WHERE id = :scope
                  - name: docs
                    match: {path: "/docs/{id}"}
                    scope: docs/{id}
                    backend: {type: http, url: "%s", conditional: if-match}
                admin:
                  token-file: %s
                """.formatted(backend.url(), column.url(), upstream.baseUri(), tokenFile);
    }

    Path config() throws Exception {
        Path tokenFile = dir.resolve("admin-token");
        Files.writeString(tokenFile, ADMIN_TOKEN + "\n");
        Path config = dir.resolve("stockade.yaml");
        Files.writeString(config, yaml(storeDb, backendDb, columnDb, upstream, tokenFile));
        return config;
    }

    ProxyFixture proxy(Path config) throws Exception {
        return ProxyFixture.start(dir.resolve("j"), Files.readString(config), Map.of());
    }

    static Http.Response admin(ProxyFixture p, String method, String path, String body) throws Exception {
        return Http.send(method, p.uri(path), body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body), Map.of("Authorization", "Bearer " + ADMIN_TOKEN));
    }

    static Http.Response put(ProxyFixture p, String path, String content, long token) throws Exception {
        return Http.put(p.uri(path), content, Map.of("Fencing-Token", Long.toString(token)));
    }

    /** The content of the row of {@code orders/<id>}, read straight from the backend's table. */
    Optional<String> row(String id) throws Exception {
        return backendDb.single("SELECT content FROM docs WHERE id = ?", "orders/" + id);
    }

    Optional<String> floor(Pg pg, String prefix) throws Exception {
        return pg.single("SELECT token::text FROM stockade_floors WHERE prefix = ?", prefix);
    }

    record Run(int code, String out, String err) {
    }

    static Run cli(Path config, String stdin, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new ArrayList<>(List.of("--config", config.toString()));
        all.addAll(List.of(args));
        int code = FenceCommand.run(all, new ByteArrayInputStream(stdin.getBytes(StandardCharsets.UTF_8)),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }

    @Test
    void aRaiseThroughTheAdminApiFencesTheBackendsNextWrite() throws Exception {
        try (ProxyFixture p = proxy(config())) {
            assertEquals(200, put(p, "/orders/a", "v3", 3).status());
            Http.Response raise = admin(p, "POST", "/admin/fences/raise", "{\"scope\":\"orders/a\",\"token\":1000}");
            assertEquals(200, raise.status(), raise.body());
            assertEquals(OptionalLong.of(1000), backendDb.fence("orders/a"), "raised in the backend's table: "
                    + raise.body());
            assertEquals(OptionalLong.empty(), storeDb.fence("orders/a"), "not in the store, which nothing reads");
            assertTrue(raise.body().contains("\"token\":1000") && raise.body().contains("\"raised\":true")
                    && raise.body().contains("\"keeper\":\"backend\",\"policy\":\"orders\""), raise.body());

            Http.Response zombie = put(p, "/orders/a", "zombie", 3);
            assertEquals(409, zombie.status(), zombie.body());
            assertEquals(409, put(p, "/orders/a", "zombie", 999).status());
            assertEquals(Optional.of("v3"), row("a"), "the refused writes changed nothing");
            assertEquals(OptionalLong.of(1000), backendDb.fence("orders/a"));

            Http.Response show = admin(p, "GET", "/admin/fences/scope?name=orders/a", null);
            assertEquals(200, show.status(), show.body());
            assertTrue(show.body().contains("\"token\":1000") && show.body().contains("\"effective\":1000")
                    && show.body().contains("\"policy\":\"orders\""), show.body());
            // raising below the table's token lowers nothing
            Http.Response lower = admin(p, "POST", "/admin/fences/raise", "{\"scope\":\"orders/a\",\"token\":7}");
            assertTrue(lower.body().contains("\"token\":1000") && lower.body().contains("\"raised\":false"),
                    lower.body());
            assertEquals(200, put(p, "/orders/a", "v1000", 1000).status(), "the new holder writes");
            assertEquals(Optional.of("v1000"), row("a"));
        }
    }

    @Test
    void aFloorThroughTheAdminApiReachesTheBackendsNewRows() throws Exception {
        try (ProxyFixture p = proxy(config())) {
            Http.Response floor = admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"orders/\",\"token\":500}");
            assertEquals(200, floor.status(), floor.body());
            assertEquals(Optional.of("500"), floor(backendDb, "orders/"), floor.body());
            assertEquals(Optional.empty(), floor(storeDb, "orders/"));
            assertTrue(floor.body().contains("\"floor\":500") && floor.body().contains("\"policy\":\"orders\""),
                    floor.body());

            assertEquals(409, put(p, "/orders/new", "zombie", 499).status());
            assertEquals(Optional.empty(), row("new"), "nothing written");
            assertEquals(OptionalLong.empty(), backendDb.fence("orders/new"), "no fence row either");
            Http.Response show = admin(p, "GET", "/admin/fences/scope?name=orders/new", null);
            assertTrue(show.body().contains("\"token\":null") && show.body().contains("\"floor\":500"), show.body());
            Http.Response floors = admin(p, "GET", "/admin/fences/floors", null);
            assertTrue(floors.body().contains("{\"prefix\":\"orders/\",\"token\":500,\"keeper\":\"backend\","
                    + "\"policy\":\"orders\"}"), floors.body());
            assertEquals(200, put(p, "/orders/new", "v500", 500).status());
            assertEquals(Optional.of("v500"), row("new"));
            // retire: the floor covers the row's token, so the row may go; the floor still fences the scope
            assertEquals(200, admin(p, "POST", "/admin/fences/retire", "{\"scope\":\"orders/new\"}").status());
            assertEquals(OptionalLong.empty(), backendDb.fence("orders/new"));
            assertEquals(409, put(p, "/orders/new", "zombie", 499).status());
            assertEquals(Optional.of("v500"), row("new"));
        }
    }

    @Test
    void theFenceCommandActsOnTheBackendsTableWhileTheProxyRuns() throws Exception {
        Path config = config();
        try (ProxyFixture p = proxy(config)) {
            assertEquals(200, put(p, "/orders/b", "v5", 5).status());
            Run raise = cli(config, "", "raise", "--scope", "orders/b", "--token", "70");
            assertEquals(0, raise.code(), raise.err());
            assertEquals(OptionalLong.of(70), backendDb.fence("orders/b"), raise.out());
            assertTrue(raise.out().contains("\"raised\":true") && raise.out().contains("\"policy\":\"orders\""),
                    raise.out());
            assertEquals(409, put(p, "/orders/b", "zombie", 69).status());
            assertEquals(Optional.of("v5"), row("b"));
            assertEquals(OptionalLong.of(70), backendDb.fence("orders/b"));

            Run show = cli(config, "", "show", "orders/b");
            assertEquals(0, show.code(), show.err());
            assertTrue(show.out().contains("\"token\":70"), show.out());

            Run floor = cli(config, "", "raise", "--prefix", "orders/c", "--token", "30", "--policy", "orders");
            assertEquals(0, floor.code(), floor.err());
            assertEquals(409, put(p, "/orders/c1", "zombie", 29).status());
            assertEquals(Optional.empty(), row("c1"));
            assertTrue(cli(config, "", "floors").out().contains("\"prefix\":\"orders/c\",\"token\":30,\"keeper\":"
                    + "\"backend\",\"policy\":\"orders\""));
            Run list = cli(config, "", "list", "--prefix", "orders/");
            assertTrue(list.out().contains("\"scope\":\"orders/b\",\"token\":70"), list.out());
        }
    }

    @Test
    void onTheMemoryStoreTheCommandReachesTheBackendWhileTheProxyHoldsTheJournal() throws Exception {
        Path tokenFile = dir.resolve("admin-token");
        Files.writeString(tokenFile, ADMIN_TOKEN + "\n");
        Path config = dir.resolve("memory.yaml");
        Files.writeString(config, yaml("store: {type: memory, journal: \"" + dir.resolve("j") + "\"}\n", backendDb,
                columnDb, upstream, tokenFile));
        try (ProxyFixture p = proxy(config)) {
            assertEquals(200, put(p, "/orders/m", "v5", 5).status());
            Run raise = cli(config, "", "raise", "--scope", "orders/m", "--token", "9");
            assertEquals(0, raise.code(), raise.err());
            assertEquals(OptionalLong.of(9), backendDb.fence("orders/m"));
            assertEquals(409, put(p, "/orders/m", "zombie", 8).status());
            assertEquals(Optional.of("v5"), row("m"));
            Run store = cli(config, "", "show", "docs/x");
            assertEquals(1, store.code(), store.out());
            assertTrue(store.err().contains("journal.lock"), store.err());
        }
    }

    @Test
    void afterAReloadTheOperationsReachTheBackendNowInForce() throws Exception {
        Path config = config();
        try (Pg moved = Pg.create("CREATE TABLE docs (id text PRIMARY KEY, content text)");
             StockadeServer server = StockadeServer.start(PolicyLoader.load(config).withPort(0))) {
            java.net.URI base = java.net.URI.create("http://127.0.0.1:" + server.port());
            Files.writeString(config, Files.readString(config).replace(backendDb.url(), moved.url()));
            Http.Response reload = Http.send("POST", base.resolve("/admin/policies/reload"),
                    HttpRequest.BodyPublishers.noBody(), Map.of("Authorization", "Bearer " + ADMIN_TOKEN));
            assertEquals(200, reload.status(), reload.body());
            Http.Response raise = Http.send("POST", base.resolve("/admin/fences/raise"),
                    HttpRequest.BodyPublishers.ofString("{\"scope\":\"orders/r\",\"token\":50}"),
                    Map.of("Authorization", "Bearer " + ADMIN_TOKEN));
            assertEquals(200, raise.status(), raise.body());
            assertEquals(OptionalLong.of(50), moved.fence("orders/r"), "the database the policy names now");
            assertEquals(OptionalLong.empty(), backendDb.fence("orders/r"));
            assertEquals(409, Http.put(base.resolve("/orders/r"), "zombie", Map.of("Fencing-Token", "49")).status());
            assertEquals(Optional.empty(), moved.single("SELECT content FROM docs WHERE id = 'orders/r'"));
        }
    }

    @Test
    void exportAndImportCarryTheBackendsScopes() throws Exception {
        Path config = config();
        String export;
        try (ProxyFixture p = proxy(config)) {
            assertEquals(200, put(p, "/orders/a", "v9", 9).status());
            assertEquals(2, Http.put(p.uri("/docs/d"), "d", Map.of("Fencing-Token", "4")).status() / 100);
            assertEquals(200, admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"orders/x\",\"token\":40}")
                    .status());
            Http.Response exported = admin(p, "GET", "/admin/fences/export", null);
            assertEquals(200, exported.status(), exported.body());
            export = exported.body();
            assertTrue(export.contains("\"scope\":\"orders/a\",\"token\":9"), "the backend's scope: " + export);
            assertTrue(export.contains("{\"kind\":\"scope\",\"scope\":\"orders/a\",\"token\":9,\"keeper\":\"backend\","
                    + "\"policy\":\"orders\"}"), export);
            assertTrue(export.contains("{\"kind\":\"floor\",\"prefix\":\"orders/x\",\"token\":40,\"keeper\":"
                    + "\"backend\",\"policy\":\"orders\"}"), export);
            assertTrue(export.contains("{\"kind\":\"scope\",\"scope\":\"docs/d\",\"token\":4,\"keeper\":\"store\"}"),
                    export);
            assertEquals(export, cli(config, "", "export").out(), "the command exports the same");
        }
        // restored onto fresh databases: the backend's fences come back in its table, the store's in the store
        storeDb.close();
        backendDb.close();
        storeDb = Pg.create("");
        backendDb = Pg.create("CREATE TABLE docs (id text PRIMARY KEY, content text)");
        config = config();
        Run imported = cli(config, export, "import");
        assertEquals(0, imported.code(), imported.err());
        assertTrue(imported.out().contains("\"raised\":3"), imported.out());
        assertEquals(OptionalLong.of(9), backendDb.fence("orders/a"));
        assertEquals(Optional.of("40"), floor(backendDb, "orders/x"));
        assertEquals(OptionalLong.of(4), storeDb.fence("docs/d"));
        assertEquals(OptionalLong.empty(), storeDb.fence("orders/a"));
        try (ProxyFixture p = proxy(config)) {
            assertEquals(409, put(p, "/orders/a", "zombie", 8).status());
            assertEquals(409, put(p, "/orders/x1", "zombie", 39).status());
            assertEquals(Optional.empty(), row("a"));
            assertEquals(Optional.empty(), row("x1"));
            // and through the admin API: an import never lowers the table's token
            Http.Response again = admin(p, "POST", "/admin/fences/import",
                    "{\"kind\":\"scope\",\"scope\":\"orders/a\",\"token\":2,\"keeper\":\"backend\",\"policy\":"
                            + "\"orders\"}\n{\"kind\":\"scope\",\"scope\":\"orders/z\",\"token\":12}\n");
            assertEquals(200, again.status(), again.body());
            assertTrue(again.body().contains("\"keptHigher\":1"), again.body());
            assertEquals(OptionalLong.of(9), backendDb.fence("orders/a"));
            assertEquals(OptionalLong.of(12), backendDb.fence("orders/z"), "an unnamed line goes by its template");
        }
    }

    @Test
    void whatCannotBeReachedIsRefusedWithTheReasonAndNothingMoves() throws Exception {
        Path config = config();
        try (ProxyFixture p = proxy(config)) {
            assertEquals(200, put(p, "/rows/r", "v5", 5).status());
            assertEquals(200, put(p, "/orders/a", "v5", 5).status());
            FenceAdmin store = FenceStores.admin(p.server().store()).orElseThrow();

            // fence: column keeps the token in the row: nothing to raise, and saying "raised" would be a lie
            Http.Response column = admin(p, "POST", "/admin/fences/raise", "{\"scope\":\"rows/r\",\"token\":99}");
            assertEquals(501, column.status(), column.body());
            assertTrue(column.body().contains("not-supported") && column.body().contains("fence: column")
                    && column.body().contains("GREATEST"), column.body());
            Run columnCli = cli(config, "", "raise", "--prefix", "rows/", "--token", "99");
            assertEquals(3, columnCli.code(), columnCli.out());
            assertTrue(columnCli.err().contains("fence: column"), columnCli.err());
            assertEquals(Optional.of("5"), columnDb.single("SELECT fence_token::text FROM rows WHERE id = 'rows/r'"));
            assertEquals(Optional.empty(), store.scope("rows/r"), "nothing raised in the store instead");
            assertEquals(200, put(p, "/rows/r", "v6", 6).status(), "the row's own fence is as it was");
            assertEquals(501, admin(p, "GET", "/admin/fences/scope?name=rows/r", null).status());

            // a floor over every scope would span three fences: the call must say which
            Http.Response everything = admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"\",\"token\":50}");
            assertEquals(400, everything.status(), everything.body());
            assertTrue(everything.body().contains("orders") && everything.body().contains("docs")
                    && everything.body().contains("policy"), everything.body());
            assertTrue(store.floors().isEmpty());
            assertEquals(Optional.empty(), floor(backendDb, ""));
            Http.Response named = admin(p, "POST", "/admin/fences/raise",
                    "{\"prefix\":\"\",\"token\":50,\"policy\":\"orders\"}");
            assertEquals(200, named.status(), named.body());
            assertEquals(Optional.of("50"), floor(backendDb, ""));
            assertTrue(store.floors().isEmpty(), "only the named policy's fence");

            // a misspelt field or policy, and a scope the policy cannot make, are refused before anything
            assertEquals(400, admin(p, "POST", "/admin/fences/raise",
                    "{\"scope\":\"orders/a\",\"token\":90,\"polcy\":\"docs\"}").status());
            assertEquals(404, admin(p, "POST", "/admin/fences/raise",
                    "{\"scope\":\"orders/a\",\"token\":90,\"policy\":\"ordres\"}").status());
            Http.Response wrongPolicy = admin(p, "POST", "/admin/fences/raise",
                    "{\"scope\":\"orders/a\",\"token\":90,\"policy\":\"docs\"}");
            assertEquals(400, wrongPolicy.status(), wrongPolicy.body());
            assertTrue(wrongPolicy.body().contains("docs/{id}"), wrongPolicy.body());
            assertEquals(400, admin(p, "GET", "/admin/fences/scope?name=orders/a&plicy=docs", null).status());
            assertEquals(OptionalLong.of(5), backendDb.fence("orders/a"));
            assertEquals(Optional.empty(), store.scope("orders/a"));
            assertFalse(admin(p, "GET", "/admin/fences/scopes", null).body().contains("\"scope\":\"rows/r\""));
        }
    }
}
