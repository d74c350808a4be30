package io.stockade.proxy.postgres;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.StockadeServer;
import io.stockade.testing.Http;
import io.stockade.testing.PgCluster;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.TestPki;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * PostgreSQL over TLS with pgjdbc's own parameters ({@code sslmode=verify-full&sslrootcert=&sslcert=&sslkey=}),
 * against a private cluster that takes TCP connections over TLS only ({@code hostssl}, {@code hostnossl ...
 * reject}) and requires a client certificate of the test CA: so a proxy that works has used TLS. The server's
 * certificate names {@code localhost} only, so {@code 127.0.0.1} in a URL is a wrong name. Every wrong set-up
 * stops the proxy at start (the store and the backend prepare their tables then), naming the cause.
 */
@RequiresTools(Tools.Tool.POSTGRES_CLUSTER)
class PostgresTlsIT {
    @TempDir
    static Path pkiDir;
    static TestPki pki;
    static TestPki.Leaf proxyCert;
    static PgCluster pg;

    @TempDir
    Path dir;
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    static void startPostgres() throws IOException {
        pki = TestPki.create(pkiDir.resolve("ca"));
        proxyCert = pki.leaf("proxy", "DNS:proxy.stockade.test");
        pg = PgCluster.createTls(pki.leaf("postgres", "DNS:localhost"), true);
    }

    @AfterAll
    static void stopPostgres() {
        if (pg != null) {
            pg.close();
        }
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    /** The cluster's URL by {@code host} with pgjdbc's TLS parameters. */
    static String url(String host, String ssl) {
        return "jdbc:postgresql://" + host + ":" + pg.port() + "/postgres?" + ssl;
    }

    /** pgjdbc reads a PEM key as RSA unless told otherwise: TestPki's keys are EC. */
    static String verifyFull(Path ca, TestPki.Leaf client) {
        return "sslmode=verify-full&sslrootcert=" + ca + (client == null ? ""
                : "&sslcert=" + client.cert() + "&sslkey=" + client.key() + "&pemKeyAlgorithm=EC");
    }

    String storeYaml(String url) {
        return """
                store:
                  type: postgres
                  datasource: {url: "%s", user: postgres, connect-timeout: 2s}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: %s}
                """.formatted(url, dir.resolve("root"));
    }

    ProxyFixture proxy(String yaml) throws Exception {
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal"), yaml, Map.of());
        open.add(proxy);
        return proxy;
    }

    /** Starting must fail, naming the cause; nothing listens. */
    IOException refusedAtStart(String yaml) {
        return assertThrows(IOException.class, () -> StockadeServer.start(
                PolicyLoader.parse(yaml, dir.resolve("p.yaml"), Map.of()).withPort(0)));
    }

    static Http.Response put(ProxyFixture proxy, String path, String body, String token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", token));
    }

    @Test
    void theStoreWorksOverVerifyFullTlsWithTheProxysCertificate() throws Exception {
        String url = url("localhost", verifyFull(pki.ca(), proxyCert));
        ProxyFixture proxy = proxy(storeYaml(url));

        assertEquals(201, put(proxy, "/files/a", "v5", "5").status());
        assertEquals(409, put(proxy, "/files/a", "v4", "4").status());
        assertEquals("v5", Files.readString(dir.resolve("root/files/a")));
        try (Connection c = DriverManager.getConnection(url, "postgres", null);
             ResultSet r = c.createStatement()
                     .executeQuery("SELECT token FROM stockade_fences WHERE scope = 'files/a'")) {
            assertTrue(r.next());
            assertEquals(5, r.getLong(1));
        }
    }

    @Test
    void theBackendWorksOverVerifyFullTlsWithTheProxysCertificate() throws Exception {
        String url = url("localhost", verifyFull(pki.ca(), proxyCert));
        try (Connection c = DriverManager.getConnection(url, "postgres", null)) {
            c.createStatement().execute("CREATE TABLE IF NOT EXISTS tls_rows (id text PRIMARY KEY, v text)");
        }
        ProxyFixture proxy = proxy("""
                store: {type: memory, journal: %s}
                policies:
                  - name: rows
                    match: {path: "/rows/{id}", methods: [PUT]}
                    scope: rows/{id}
                    backend:
                      type: postgres
                      datasource: {url: "%s", user: postgres}
                      params: {id: path, v: {from: body-text}}
                      statements:
                        PUT: INSERT INTO tls_rows (id, v) VALUES (:id, :v) ON CONFLICT (id) DO UPDATE SET v = excluded.v
                """.formatted(dir.resolve("journal-b"), url));

        assertEquals(200, put(proxy, "/rows/a", "v5", "5").status());
        assertEquals(409, put(proxy, "/rows/a", "v4", "4").status());
        try (Connection c = DriverManager.getConnection(url, "postgres", null);
             ResultSet r = c.createStatement().executeQuery("SELECT v FROM tls_rows WHERE id = 'a'")) {
            assertTrue(r.next());
            assertEquals("v5", r.getString(1));
        }
    }

    @Test
    void aPlainConnectionIsRejectedByTheServerSoTheOthersUsedTls() {
        IOException e = refusedAtStart(storeYaml(url("localhost", "sslmode=disable")));
        assertTrue(e.getMessage().contains("no encryption"), e.getMessage());
    }

    @Test
    void aServerCertificateFromAnotherCaIsRefused() {
        TestPki other = TestPki.create(dir.resolve("other-ca"));
        IOException e = refusedAtStart(storeYaml(url("localhost", verifyFull(other.ca(), proxyCert))));
        assertTrue(e.getMessage().contains("unable to find valid certification path")
                || e.getMessage().contains("PKIX"), e.getMessage());
    }

    @Test
    void aServerCertificateForAnotherNameIsRefusedByVerifyFull() {
        IOException e = refusedAtStart(storeYaml(url("127.0.0.1", verifyFull(pki.ca(), proxyCert))));
        assertTrue(e.getMessage().contains("127.0.0.1"), e.getMessage());
        assertFalse(e.getMessage().contains("no encryption"), e.getMessage());
    }

    @Test
    void withoutAClientCertificateTheServerRefuses() {
        IOException e = refusedAtStart(storeYaml(url("localhost", verifyFull(pki.ca(), null))));
        assertTrue(e.getMessage().contains("requires a valid client certificate"), e.getMessage());
    }
}
