package io.stockade.proxy;

import java.net.URI;
import java.net.http.HttpRequest;
import java.nio.file.Path;
import java.util.Map;

import io.stockade.policy.PolicyException;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.store.FenceStores;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code server.management}: {@code /metrics} and the admin API on a listener of their own, so the port writers reach
 * serves neither (first-hour report). The data port answers them 404 saying where they are, with the right bearer
 * token too, and relays nothing; the management port serves them and the health endpoints, and relays no write: a
 * fenced PUT sent to it is 404, reaches no upstream and moves no fence. Both answer the health endpoints.
 */
class ManagementListenerIT {
    static final String TOKEN = "management-admin-token";

    @TempDir
    Path dir;

    static String yaml(TestUpstream upstream) {
        return """
                server: {management: {port: 0}}
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: any
                    match: {path: "/{a}/{b}"}
                    scope: any/{a}/{b}
                    backend: {type: http, url: "%s"}
                admin: {token: %s}
                """.formatted(upstream.baseUri(), TOKEN);
    }

    @Test
    void theDataPortServesNeitherMetricsNorAdminAndTheManagementPortRelaysNoWrite() throws Exception {
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture p = ProxyFixture.start(dir.resolve("j"), yaml(upstream), Map.of())) {
            StockadeServer server = p.server();
            assertNotEquals(server.port(), server.managementPort(), "two listeners");
            URI data = URI.create("http://127.0.0.1:" + server.port());
            URI management = URI.create("http://127.0.0.1:" + server.managementPort());
            FenceAdmin store = FenceStores.admin(server.store()).orElseThrow();
            assertEquals(201, Http.put(data.resolve("/docs/a"), "v1", Map.of("Fencing-Token", "5")).status());

            Map<String, String> bearer = Map.of("Authorization", "Bearer " + TOKEN);
            Http.Response metrics = Http.get(data.resolve("/metrics"));
            assertEquals(404, metrics.status(), metrics.body());
            assertTrue(metrics.body().contains("management listener"), metrics.body());
            Http.Response export = Http.send("GET", data.resolve("/admin/fences/export"),
                    HttpRequest.BodyPublishers.noBody(), bearer);
            assertEquals(404, export.status(), export.body());
            assertTrue(export.body().contains("management listener") && !export.body().contains("docs/a"),
                    export.body());
            Http.Response raise = Http.send("POST", data.resolve("/admin/fences/raise"),
                    HttpRequest.BodyPublishers.ofString("{\"scope\":\"any/docs/a\",\"token\":100}"),
                    Map.of("Authorization", "Bearer " + TOKEN, "Content-Type", "application/json"));
            assertEquals(404, raise.status(), raise.body());
            // a side door to the admin API on the data port is not relayed either
            Http.Response side = RawHttp.send(server.port(), "POST /%61dmin/fences/raise HTTP/1.1\r\nHost: x\r\n"
                    + "Authorization: Bearer " + TOKEN + "\r\nFencing-Token: 100\r\nContent-Length: 0\r\n"
                    + "Connection: close\r\n\r\n");
            assertEquals(404, side.status(), side.body());
            assertEquals(5, store.scope("any/docs/a").orElseThrow().token(), "the fence did not move");
            assertTrue(store.floors().isEmpty(), "no floor was raised: " + store.floors());

            Http.Response scraped = Http.get(management.resolve("/metrics"));
            assertEquals(200, scraped.status());
            assertTrue(scraped.body().contains("stockade_decisions_total"), scraped.body());
            Http.Response shown = Http.send("GET", management.resolve("/admin/fences/scope?name=any/docs/a"),
                    HttpRequest.BodyPublishers.noBody(), bearer);
            assertEquals(200, shown.status(), shown.body());
            assertTrue(shown.body().contains("\"token\":5"), shown.body());
            Http.Response unauthorized = Http.send("GET", management.resolve("/admin/fences/floors"),
                    HttpRequest.BodyPublishers.noBody(), Map.of());
            assertEquals(401, unauthorized.status(), "the management port still takes the bearer token");

            for (String target : new String[]{"/docs/a", "/docs/b", "/metrics/x"}) {
                Http.Response write = Http.put(management.resolve(target), "zombie", Map.of("Fencing-Token", "9"));
                assertEquals(404, write.status(), target + ": " + write.body());
                assertTrue(write.body().contains("data port"), write.body());
            }
            assertEquals(1, upstream.requestCount(), "only the write sent to the data port reached the upstream: "
                    + upstream.received());
            assertEquals("v1", upstream.contentText("/docs/a").orElseThrow());
            assertEquals(5, store.scope("any/docs/a").orElseThrow().token());
            assertTrue(store.scope("any/docs/b").isEmpty());

            for (URI listener : new URI[]{data, management}) {
                assertEquals(200, Http.get(listener.resolve("/health/live")).status(), listener.toString());
                assertEquals(200, Http.get(listener.resolve("/health/ready")).status(), listener.toString());
                assertEquals(200, Http.get(listener.resolve("/health/ready/any")).status(), listener.toString());
            }
        }
    }

    @Test
    void withoutAManagementListenerTheDataPortServesBothAsBefore() throws Exception {
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture p = ProxyFixture.start(dir.resolve("j"),
                     yaml(upstream).replace("server: {management: {port: 0}}\n", ""), Map.of())) {
            assertEquals(p.server().port(), p.server().managementPort());
            assertEquals(200, Http.get(p.uri("/metrics")).status());
            assertEquals(200, Http.send("GET", p.uri("/admin/fences/floors"), HttpRequest.BodyPublishers.noBody(),
                    Map.of("Authorization", "Bearer " + TOKEN)).status());
        }
    }

    @Test
    void aManagementPortEqualToTheDataPortIsRefusedAtLoadWhereItIsWritten() {
        String yaml = """
                server:
                  port: 18080
                  management:
                    port: 18080
                store: {type: memory}
                policies:
                  - name: any
                    match: {path: "/{a}"}
                    scope: any/{a}
                    backend: {type: http, url: "http://127.0.0.1:1"}
                """;
        PolicyException e = assertThrows(PolicyException.class,
                () -> PolicyLoader.parse(yaml, Path.of("m.yaml"), Map.of()));
        assertTrue(e.getMessage().contains("server.management.port") && e.getMessage().contains("port of its own"),
                e.getMessage());
        PolicyException unknown = assertThrows(PolicyException.class, () -> PolicyLoader.parse(
                yaml.replace("    port: 18080\n", "    prot: 18081\n"), Path.of("m.yaml"), Map.of()));
        assertTrue(unknown.getMessage().contains("prot"), unknown.getMessage());
    }
}
