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
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import io.stockade.testing.TestPki;

import io.helidon.common.tls.TlsClientAuth;
import io.helidon.webserver.WebServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Why the proxy's TLS listener stays on NIO while a plaintext one runs on Helidon's plain sockets
 * ({@code useNio(false)}): Helidon 4.5.0's plain-socket listener lets a TLS client without a certificate in where the
 * listener requires one. A bare Helidon WebServer shows it, beside the same listener on NIO refusing that client.
 * When this test fails on a new Helidon, the finding is fixed there: a TLS listener may then move to plain sockets
 * too (StockadeServer's {@code useNio}, docs/benchmarks.md). {@code TlsIT} checks the proxy's own TLS listener
 * refuses the client.
 */
class HelidonPlainSocketTlsFindingIT {
    static final String PASS = "changeit";

    @TempDir
    Path dir;

    @Test
    void helidonsPlainSocketListenerLetsAClientWithoutARequiredCertificateIn() throws Exception {
        TestPki pki = TestPki.create(dir.resolve("pki"));
        TestPki.keystore(pki.server("server"), dir.resolve("server.p12"), PASS);
        pki.truststore(dir.resolve("trust.p12"), PASS);
        SSLContext serverContext = context(load("server.p12"), load("trust.p12"));
        SSLContext anonymous = context(null, load("trust.p12"));
        HttpClient client = HttpClient.newBuilder().sslContext(anonymous).connectTimeout(Duration.ofSeconds(5))
                .version(HttpClient.Version.HTTP_1_1).build();

        WebServer nio = start(serverContext, true);
        try {
            URI uri = URI.create("https://127.0.0.1:" + nio.port() + "/");
            assertThrows(IOException.class, () -> get(client, uri), "NIO: a client without a certificate refused");
        } finally {
            nio.stop();
        }
        WebServer plain = start(serverContext, false);
        try {
            URI uri = URI.create("https://127.0.0.1:" + plain.port() + "/");
            assertEquals(200, get(client, uri).statusCode(), "plain sockets let it in (the Helidon finding); if it is"
                    + " refused now, Helidon fixed it: see this class's javadoc");
        } finally {
            plain.stop();
        }
    }

    private static WebServer start(SSLContext context, boolean useNio) {
        return WebServer.builder().host("127.0.0.1").port(0).useNio(useNio)
                .tls(t -> t.sslContext(context).clientAuth(TlsClientAuth.REQUIRED))
                .routing(r -> r.get("/", (req, res) -> res.send("in")))
                .build().start();
    }

    private static HttpResponse<String> get(HttpClient client, URI uri) throws Exception {
        return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(10)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static SSLContext context(KeyStore keys, KeyStore trust) throws Exception {
        TrustManagerFactory t = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        t.init(trust);
        KeyManagerFactory k = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        if (keys != null) {
            k.init(keys, PASS.toCharArray());
        }
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(keys == null ? null : k.getKeyManagers(), t.getTrustManagers(), null);
        return context;
    }

    private KeyStore load(String name) throws Exception {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(dir.resolve(name))) {
            store.load(in, PASS.toCharArray());
        }
        return store;
    }
}
