package io.stockade.proxy.listener;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.Map;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.StockadeServer;
import io.stockade.testing.TestPki;

import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * TLS on the listener: fenced writes over HTTPS, plain HTTP refused on the TLS port, and client certificates
 * required when the policy says so. Key stores are made for each run from a {@link TestPki}.
 */
class TlsIT {
    static final String PASS = "changeit";

    @TempDir
    Path dir;

    @BeforeEach
    void keys() {
        // a test CA signs both certificates; each side trusts the CA
        TestPki pki = TestPki.create(dir.resolve("pki"));
        TestPki.keystore(pki.server("server"), dir.resolve("server.p12"), PASS);
        TestPki.keystore(pki.leaf("client", "DNS:client.stockade.test"), dir.resolve("client.p12"), PASS);
        pki.truststore(dir.resolve("server-trust.p12"), PASS);
        pki.truststore(dir.resolve("client-trust.p12"), PASS);
    }

    StockadeServer start(String clientAuth) throws Exception {
        Files.writeString(dir.resolve("pw"), PASS + "\n");
        String yaml = """
                server:
                  port: 0
                  tls:
                    keystore: %s
                    password-file: %s
                    truststore: %s
                    client-auth: %s
                store:
                  type: memory
                  journal: %s
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    backend:
                      type: file
                      root: %s
                """.formatted(dir.resolve("server.p12"), dir.resolve("pw"), dir.resolve("server-trust.p12"),
                clientAuth, dir.resolve("journal"), dir.resolve("root"));
        return StockadeServer.start(PolicyLoader.parse(yaml, dir.resolve("tls.yaml"), Map.of()));
    }

    HttpClient client(boolean withCertificate) throws Exception {
        TrustManagerFactory trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trust.init(load("client-trust.p12"));
        KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        keys.init(load("client.p12"), PASS.toCharArray());
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(withCertificate ? keys.getKeyManagers() : null, trust.getTrustManagers(), null);
        return HttpClient.newBuilder().sslContext(context).connectTimeout(Duration.ofSeconds(5))
                .version(HttpClient.Version.HTTP_1_1).build();
    }

    KeyStore load(String name) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve(name))) {
            store.load(in, PASS.toCharArray());
        }
        return store;
    }

    static HttpResponse<String> put(HttpClient client, URI uri, String body, String token) throws Exception {
        return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).header("Fencing-Token", token)
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void fencedWritesWorkOverHttps() throws Exception {
        try (StockadeServer server = start("none")) {
            URI uri = URI.create("https://127.0.0.1:" + server.port() + "/files/a");
            HttpClient client = client(false);
            assertEquals(201, put(client, uri, "v5", "5").statusCode());
            assertEquals(409, put(client, uri, "v4", "4").statusCode());
            assertEquals("v5", client.send(HttpRequest.newBuilder(uri).build(),
                    HttpResponse.BodyHandlers.ofString()).body());
        }
    }

    @Test
    void plainHttpOnTheTlsPortWritesNothing() throws Exception {
        try (StockadeServer server = start("none")) {
            URI plain = URI.create("http://127.0.0.1:" + server.port() + "/files/b");
            HttpClient client = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
            try {
                HttpResponse<String> r = put(client, plain, "v", "1");
                assertEquals(400, r.statusCode() / 100 * 100, "status " + r.statusCode());
            } catch (IOException refused) {
                // the TLS listener hangs up on plain HTTP: also a refusal
            }
            assertEquals(false, Files.exists(dir.resolve("root/files/b")));
        }
    }

    @Test
    void requiredClientCertificatesRefuseAClientWithoutOne() throws Exception {
        try (StockadeServer server = start("required")) {
            URI uri = URI.create("https://127.0.0.1:" + server.port() + "/files/c");
            assertThrows(IOException.class, () -> put(client(false), uri, "v", "1"));
            assertEquals(false, Files.exists(dir.resolve("root/files/c")));
            assertEquals(201, put(client(true), uri, "v", "1").statusCode());
        }
    }
}
