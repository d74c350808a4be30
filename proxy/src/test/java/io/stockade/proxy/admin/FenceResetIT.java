package io.stockade.proxy.admin;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.testing.LogLines;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 46, item 5: nothing could undo a forged token that took a scope ({@code retire} needs a floor at or above
 * it, which keeps the lock-out); on main the honest holder's 5 stayed refused (409) for ever. {@code fence reset}
 * lowers it, with the admin token, logged, and only where no lease on the scope can be valid: the policy's verifier
 * says the token is nobody's, or the operator forces it with a reason where the proxy cannot see leases. Also the
 * offline command ({@code stockade-proxy fence reset}), which asks for the admin token too.
 */
class FenceResetIT {
    private static final String ADMIN = "reset-admin-token";
    private static final String LEASES = """
            CREATE TABLE stockade_leases (
                name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL);
            INSERT INTO stockade_leases VALUES ('leased/b', 'w7', 7, now() + interval '1 hour')""";

    @TempDir
    Path dir;

    private String policy() {
        return """
                store: {type: memory, journal: "${JOURNAL}"}
                admin: {token: "%s"}
                policies:
                  - name: docs
                    match: {path: "/docs/{id}"}
                    scope: docs/{id}
                    backend: {type: http, url: "${UPSTREAM}", settle: 100ms}
                  - name: leased
                    match: {path: "/leased/{id}"}
                    scope: leased/{id}
                    fence:
                      verify: {kind: postgres, datasource: {url: "${PG}", user: postgres}, cache: {enabled: false}}
                    backend: {type: http, url: "${UPSTREAM}", settle: 100ms}
                """.formatted(ADMIN);
    }

    @Test
    void aScopeAForgedTokenTookIsResetWithForceAndAReasonWhereNoVerifierCanTellAndTheHolderWritesAgain()
            throws Exception {
        try (Pg pg = Pg.create(LEASES); TestUpstream upstream = TestUpstream.start()) {
            Map<String, String> vars = Map.of("PG", pg.url(), "UPSTREAM", upstream.baseUri().toString());
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy(), vars);
                 LogLines log = new LogLines(FenceOperations.class.getName(), Level.WARNING)) {
                // a policy without max-advance bounds no token: one request takes the scope
                assertEquals(201, put(proxy, "/docs/a", "evil", Long.MAX_VALUE).status());
                assertEquals(409, put(proxy, "/docs/a", "v5", 5).status(), "the lock-out of issue 46");

                Http.Response unforced = reset(proxy, "{\"scope\":\"docs/a\",\"token\":4}");
                assertEquals(409, unforced.status(), unforced.body());
                assertTrue(unforced.body().contains("force-required"), unforced.body());
                Http.Response noReason = reset(proxy, "{\"scope\":\"docs/a\",\"token\":4,\"force\":true}");
                assertEquals(409, noReason.status(), noReason.body());
                assertEquals(Long.MAX_VALUE, proxy.server().store().get("docs/a").orElseThrow().token(),
                        "a refused reset changed the fence");
                Http.Response noToken = Http.send("POST", proxy.uri("/admin/fences/reset"),
                        HttpRequest.BodyPublishers.ofString("{\"scope\":\"docs/a\",\"token\":4}"), Map.of());
                assertEquals(401, noToken.status(), noToken.body());

                Http.Response done = reset(proxy, "{\"scope\":\"docs/a\",\"token\":4,\"force\":true,"
                        + "\"reason\":\"ticket 46: a forged first token; every writer stopped\"}");
                assertEquals(200, done.status(), done.body());
                assertTrue(done.body().contains("\"from\":9223372036854775807,\"token\":4,\"reset\":true"),
                        done.body());
                String line = log.await(m -> m.startsWith("fence reset: scope 'docs/a'"),
                        java.time.Duration.ofSeconds(2));
                assertNotNull(line, "the reset is logged");
                assertTrue(line.contains("forced by the operator: ticket 46"), line);

                assertEquals(204, put(proxy, "/docs/a", "v5", 5).status()); // over the forger's write
                assertEquals("v5", upstream.contentText("/docs/a").orElseThrow());
                // a reset lowers, below a covering floor it cannot, and it never raises
                assertEquals(400, reset(proxy, "{\"scope\":\"docs/a\",\"token\":9,\"force\":true,"
                        + "\"reason\":\"r\"}").status());
                assertEquals(200, Http.send("POST", proxy.uri("/admin/fences/raise"),
                        HttpRequest.BodyPublishers.ofString("{\"prefix\":\"docs/\",\"token\":3}"), auth())
                        .status());
                Http.Response belowFloor = reset(proxy, "{\"scope\":\"docs/a\",\"token\":2,\"force\":true,"
                        + "\"reason\":\"r\"}");
                assertEquals(400, belowFloor.status(), belowFloor.body());
                assertTrue(belowFloor.body().contains("a prefix floor at 3"), belowFloor.body());
            }
            // the reset is journaled: a restart keeps it, and the honest holder's token after it
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy(), vars)) {
                proxy.awaitDocsOpen();
                assertEquals(5, proxy.server().store().get("docs/a").orElseThrow().token());
                assertEquals(409, put(proxy, "/docs/a", "old", 4).status());
            }
        }
    }

    /**
     * The file backend keeps each file's token beside it too and refuses a write below it whatever the store says:
     * a reset of a file scope is refused (501) with what to do, and the fence and the file stay as they were.
     */
    @Test
    void aFileScopeIsNotResetBecauseItsSidecarWouldStillRefuse() throws Exception {
        String yaml = """
                store: {type: memory, journal: "${JOURNAL}"}
                admin: {token: "%s"}
                policies:
                  - name: files
                    match: {path: "/files/{id}"}
                    scope: files/{id}
                    backend: {type: file, root: "${ROOT}"}
                """.formatted(ADMIN);
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                Map.of("ROOT", dir.resolve("root").toString()))) {
            assertEquals(201, Http.put(proxy.uri("/files/a"), "v9", Map.of("Fencing-Token", "9")).status());
            Http.Response refused = reset(proxy, "{\"scope\":\"files/a\",\"token\":4,\"force\":true,"
                    + "\"reason\":\"r\"}");
            assertEquals(501, refused.status(), refused.body());
            assertTrue(refused.body().contains("keeps each file's token beside it too"), refused.body());
            assertEquals(9, proxy.server().store().get("files/a").orElseThrow().token(), "the fence moved");
            assertEquals(409, Http.put(proxy.uri("/files/a"), "v5", Map.of("Fencing-Token", "5")).status());
            assertEquals("v9", Files.readString(dir.resolve("root/files/a")));
        }
    }

    @Test
    void aPolicysVerifierDecides() throws Exception {
        try (Pg pg = Pg.create(LEASES); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy(),
                     Map.of("PG", pg.url(), "UPSTREAM", upstream.baseUri().toString()))) {
            assertEquals(201, put(proxy, "/leased/b", "v7", 7).status());
            // the token is the lease holder's: nothing to repair, and force does not override the verifier
            Http.Response valid = reset(proxy, "{\"scope\":\"leased/b\",\"token\":3,\"force\":true,\"reason\":\"r\"}");
            assertEquals(409, valid.status(), valid.body());
            assertTrue(valid.body().contains("lease-valid"), valid.body());
            assertEquals(7, proxy.server().store().get("leased/b").orElseThrow().token());

            // a token nobody's lease holds (raised before the verifier was there, say): reset without force
            assertEquals(200, Http.send("POST", proxy.uri("/admin/fences/raise"),
                    HttpRequest.BodyPublishers.ofString("{\"scope\":\"leased/b\",\"token\":1000}"), auth()).status());
            assertEquals(409, put(proxy, "/leased/b", "v7", 7).status());
            Http.Response done = reset(proxy, "{\"scope\":\"leased/b\",\"token\":6}");
            assertEquals(200, done.status(), done.body());
            assertTrue(done.body().contains("no valid lease holder's"), done.body());
            assertEquals(204, put(proxy, "/leased/b", "v7 again", 7).status());
            assertEquals("v7 again", upstream.contentText("/leased/b").orElseThrow());
        }
    }

    /** On the etcd store: the reset is a compare on the key's revision, and this replica's own memory forgets. */
    @Test
    void onTheEtcdStore() throws Exception {
        Tools.require(Tools.Tool.ETCD);
        String yaml = String.join("\n",
                "store: {type: etcd, endpoints: \"${ETCD}\", prefix: /reset/, timeout: 2s}",
                "admin: {token: \"" + ADMIN + "\"}",
                "policies:",
                "  - name: docs",
                "    match: {path: \"/docs/{id}\"}",
                "    scope: docs/{id}",
                "    backend: {type: http, url: \"${UPSTREAM}\", conditional: if-match}", "");
        try (EtcdServer etcd = EtcdServer.single(); TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml, Map.of("ETCD", etcd.endpoints(),
                     "UPSTREAM", upstream.baseUri().toString()))) {
            assertEquals(201, put(proxy, "/docs/e", "evil", Long.MAX_VALUE).status());
            assertEquals(409, put(proxy, "/docs/e", "v5", 5).status());
            Http.Response done = reset(proxy, "{\"scope\":\"docs/e\",\"token\":4,\"force\":true,"
                    + "\"reason\":\"forged\"}");
            assertEquals(200, done.status(), done.body());
            assertEquals(204, put(proxy, "/docs/e", "v5", 5).status());
            assertEquals("v5", upstream.contentText("/docs/e").orElseThrow());
            assertEquals(409, put(proxy, "/docs/e", "old", 4).status());
        }
    }

    /** The offline command lowers with the admin token, as the API does, and refuses without it. */
    @Test
    void theOfflineCommandAsksForTheAdminToken() throws Exception {
        try (Pg pg = Pg.create(LEASES); TestUpstream upstream = TestUpstream.start()) {
            Map<String, String> vars = Map.of("PG", pg.url(), "UPSTREAM", upstream.baseUri().toString());
            Path file = dir.resolve("stockade.yaml");
            Files.writeString(file, policy().replace("${JOURNAL}", dir.resolve("j").toString())
                    .replace("${PG}", pg.url()).replace("${UPSTREAM}", upstream.baseUri().toString()));
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy(), vars)) {
                assertEquals(201, put(proxy, "/docs/c", "evil", 1L << 62).status());
            }
            String[] noToken = run(file, "reset", "docs/c", "--token", "2", "--force", "--reason", "r");
            assertEquals("3", noToken[0], noToken[2]);
            assertTrue(noToken[2].contains("needs the admin token"), noToken[2]);
            Path tokenFile = Files.writeString(dir.resolve("admin-token"), ADMIN + "\n");
            String[] unforced = run(file, "reset", "docs/c", "--token", "2", "--admin-token-file",
                    tokenFile.toString());
            assertEquals("3", unforced[0], unforced[2]);
            assertTrue(unforced[2].contains("force-required"), unforced[2]);
            String[] done = run(file, "reset", "docs/c", "--token", "2", "--force", "--reason", "forged",
                    "--admin-token-file", tokenFile.toString());
            assertEquals("0", done[0], done[2]);
            assertTrue(done[1].contains("\"token\":2,\"reset\":true"), done[1]);
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), policy(), vars)) {
                proxy.awaitDocsOpen();
                assertEquals(204, put(proxy, "/docs/c", "v3", 3).status());
            }
        }
    }

    /** Exit code, stdout, stderr of the fence command. */
    private static String[] run(Path file, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new java.util.ArrayList<>(List.of("--config", file.toString()));
        all.addAll(List.of(args));
        int code = FenceCommand.run(all, System.in, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
        return new String[] {Integer.toString(code), out.toString(StandardCharsets.UTF_8),
            err.toString(StandardCharsets.UTF_8)};
    }

    private static Http.Response put(ProxyFixture proxy, String path, String body, long token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", Long.toString(token)));
    }

    private static Http.Response reset(ProxyFixture proxy, String json) throws Exception {
        URI uri = proxy.uri("/admin/fences/reset");
        return Http.send("POST", uri, HttpRequest.BodyPublishers.ofString(json), auth());
    }

    private static Map<String, String> auth() {
        return Map.of("Authorization", "Bearer " + ADMIN, "Content-Type", "application/json");
    }
}
