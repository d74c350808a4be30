package io.stockade.proxy;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The admin API's policy view and live reload: the view redacts secrets, a reload puts a changed file in force,
 * a bad file is refused with its located errors and the old policies stay, and no call works without the token.
 */
class PolicyReloadIT {
    static final String TOKEN = "reload-admin-token";
    static final Map<String, String> AUTH = Map.of("Authorization", "Bearer " + TOKEN);

    @TempDir
    Path dir;
    Path file;
    StockadeServer server;

    String policy(String extra) {
        return """
                server:
                  port: 0
                store:
                  type: memory
                  journal: %s
                admin:
                  token: %s
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    backend:
                      type: file
                      root: %s
                %s""".formatted(dir.resolve("journal"), TOKEN, dir.resolve("root"), extra);
    }

    @BeforeEach
    void start() throws Exception {
        file = dir.resolve("stockade.yaml");
        Files.writeString(file, policy(""));
        server = StockadeServer.start(PolicyLoader.load(file));
    }

    @AfterEach
    void stop() {
        server.close();
    }

    URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    Http.Response reload(Map<String, String> headers) throws Exception {
        return Http.send("POST", uri("/admin/policies/reload"), HttpRequest.BodyPublishers.noBody(), headers);
    }

    @Test
    void everyPolicyCallNeedsTheToken() throws Exception {
        assertEquals(401, Http.get(uri("/admin/policies")).status());
        assertEquals(401, reload(Map.of()).status());
        assertEquals(401, reload(Map.of("Authorization", "Bearer wrong")).status());
    }

    @Test
    void theViewShowsThePoliciesAndRedactsSecrets() throws Exception {
        Http.Response view = Http.get(uri("/admin/policies"), AUTH);
        assertEquals(200, view.status(), view.body());
        assertTrue(view.body().contains("\"name\":\"files\""), view.body());
        assertTrue(view.body().contains("/files/{path...}"), view.body());
        assertFalse(view.body().contains(TOKEN), "the admin token must never be shown: " + view.body());
        assertTrue(view.body().contains("(redacted)"), view.body());
    }

    @Test
    void aReloadPutsANewPolicyInForce() throws Exception {
        assertEquals(404, Http.put(uri("/docs/a"), "x", Map.of("Fencing-Token", "1")).status());
        Files.writeString(file, policy("""
                  - name: docs
                    match:
                      path: /docs/{id}
                    scope: docs/{id}
                    backend:
                      type: file
                      root: %s
                """.formatted(dir.resolve("docs"))));
        Http.Response r = reload(AUTH);
        assertEquals(200, r.status(), r.body());
        assertEquals(201, Http.put(uri("/docs/a"), "x", Map.of("Fencing-Token", "1")).status());
        assertTrue(Http.get(uri("/admin/policies"), AUTH).body().contains("\"name\":\"docs\""));
    }

    @Test
    void aBadFileIsRefusedWithItsErrorsAndTheOldPoliciesStay() throws Exception {
        assertEquals(201, Http.put(uri("/files/a"), "v5", Map.of("Fencing-Token", "5")).status());
        Files.writeString(file, policy("  - name: broken\n    match:\n      path: /x/{id}\n    scope: x/{nope}\n"
                + "    backend:\n      type: file\n      root: " + dir.resolve("x") + "\n"));
        Http.Response r = reload(AUTH);
        assertEquals(422, r.status(), r.body());
        assertTrue(r.body().contains("stockade.yaml:"), "the error names the file and line: " + r.body());
        assertTrue(r.body().contains("nope"), r.body());
        // still in force, fence intact
        assertEquals(409, Http.put(uri("/files/a"), "v4", Map.of("Fencing-Token", "4")).status());
        assertEquals(201, Http.put(uri("/files/b"), "b", Map.of("Fencing-Token", "1")).status());
    }

    @Test
    void aReloadThatChangesTheStoreIsRefused() throws Exception {
        Files.writeString(file, policy("").replace(dir.resolve("journal").toString(),
                dir.resolve("other-journal").toString()));
        Http.Response r = reload(AUTH);
        assertEquals(409, r.status(), r.body());
        assertTrue(r.body().contains("store"), r.body());
    }

    @Test
    void aReloadThatChangesTheListenerLimitsIsRefusedAndNothingChanges() throws Exception {
        // Regression: a changed server.limits reported success, but Helidon's listener kept its limits from start
        // while the body watchdog took the new read-timeout: half applied.
        Files.writeString(file, policy("").replace("  port: 0\n", "  port: 0\n  limits: {read-timeout: 5s}\n"));
        Http.Response r = reload(AUTH);
        assertEquals(409, r.status(), r.body());
        assertTrue(r.body().contains("server.limits"), r.body());
        assertEquals(201, Http.put(uri("/files/a"), "v", Map.of("Fencing-Token", "1")).status());
    }

    @Test
    void aReloadThatAddsListenerTlsIsRefused() throws Exception {
        Path keystore = dir.resolve("server.p12");
        Files.write(keystore, new byte[] {0});
        Files.writeString(file, policy("").replace("  port: 0\n", "  port: 0\n  tls: {keystore: " + keystore
                + ", password: secret}\n"));
        Http.Response r = reload(AUTH);
        assertEquals(409, r.status(), r.body());
        assertTrue(r.body().contains("server.tls"), r.body());
    }

    @Test
    void aReloadThatAddsAManagementListenerIsRefused() throws Exception {
        Files.writeString(file, policy("").replace("  port: 0\n", "  port: 0\n  management: {port: 0}\n"));
        Http.Response r = reload(AUTH);
        assertEquals(409, r.status(), r.body());
        assertTrue(r.body().contains("server.management"), r.body());
        assertEquals(200, Http.get(uri("/metrics")).status(), "the metrics stay where they were");
    }

    /**
     * A management listener given on the command line (--management-port) is kept by a reload of a file without
     * one, as --port is: the metrics and the admin API stay off the data port.
     */
    @Test
    void aReloadKeepsTheManagementListenerTheProcessStartedWith() throws Exception {
        server.close();
        server = StockadeServer.start(PolicyLoader.load(file).withManagementPort(0));
        URI management = URI.create("http://127.0.0.1:" + server.managementPort());
        Http.Response r = Http.send("POST", management.resolve("/admin/policies/reload"),
                HttpRequest.BodyPublishers.noBody(), AUTH);
        assertEquals(200, r.status(), r.body());
        assertEquals(404, Http.get(uri("/metrics")).status());
        assertEquals(200, Http.get(management.resolve("/metrics")).status());
        assertEquals(404, reload(AUTH).status(), "the admin API is not on the data port");
    }
}
