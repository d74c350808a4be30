package io.stockade.proxy.upstream;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.StockadeServer;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;
import io.stockade.testing.TestPki;

import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * TLS from the proxy to its upstreams, against real HTTPS servers with certificates of a test CA
 * ({@link TestPki}): the http backend (a {@link TestUpstream} over HTTPS, with and without required client
 * certificates) and the s3 backend (s3proxy on its secure endpoint). Each refusal is checked to have left nothing
 * in the storage and no quarantine behind: a handshake that fails has sent no byte of the request.
 */
class UpstreamTlsIT {
    @TempDir
    static Path pkiDir;
    static TestPki pki;
    static TestPki.Leaf server;
    static TestPki.Leaf proxyCert;

    @TempDir
    Path dir;
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    static void pki() {
        pki = TestPki.create(pkiDir.resolve("ca"));
        server = pki.server("upstream");
        proxyCert = pki.leaf("proxy", "DNS:proxy.stockade.test");
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    TestUpstream upstream(TestPki.Leaf cert, boolean clientAuthRequired) {
        TestUpstream upstream = TestUpstream.startHttps(TestPki.sslContext(cert), clientAuthRequired);
        open.add(upstream);
        return upstream;
    }

    /** A proxy in front of {@code url}; {@code tls} is the backend's tls block in flow style, or null. */
    ProxyFixture proxy(URI url, String tls) throws Exception {
        String yaml = TestPolicies.memoryStore().policy("docs", "/docs/{path...}", "docs/{path}")
                .http(url.toString(), tls == null ? new String[] {"settle: 100ms"}
                        : new String[] {"settle: 100ms", "tls: " + tls}).yaml();
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal-" + open.size()), yaml, Map.of());
        open.add(proxy);
        Thread.sleep(150); // a serialized HTTP policy opens after its settle time
        return proxy;
    }

    static Http.Response put(ProxyFixture proxy, String path, String body, String token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", token));
    }

    /** A refusal before anything was sent: 502, nothing stored, no quarantine, the same token still welcome. */
    static void assertRefusedBeforeSending(ProxyFixture proxy, TestUpstream upstream, String expected)
            throws Exception {
        Http.Response r = put(proxy, "/docs/a", "zombie?", "5");
        assertEquals(502, r.status(), r.body());
        assertTrue(r.body().contains("urn:stockade:problem:upstream-unreachable"), r.body());
        assertTrue(r.body().contains("TLS handshake"), r.body());
        assertTrue(r.body().contains(expected), r.body());
        assertEquals(0, upstream.requestCount(), "the upstream received a request");
        Http.Response again = put(proxy, "/docs/a", "zombie?", "5");
        assertEquals(502, again.status(), "same holder, same token: refused again the same way, not 503/409: "
                + again.body());
        assertEquals(0, proxy.server().metrics().count("docs", Outcome.QUARANTINED));
        assertEquals(0, upstream.requestCount());
    }

    /**
     * The upstream refused the proxy's client certificate. With TLS 1.3 the proxy learns it after its part of the
     * handshake, when it may already be writing the request: if it reads the server's alert it knows nothing was
     * taken (502); if the connection breaks first it cannot tell and answers as for any unknown outcome (504,
     * quarantine). Either way nothing lands.
     */
    static void assertRefusedForItsCertificate(ProxyFixture proxy, TestUpstream upstream) throws Exception {
        Http.Response r = put(proxy, "/docs/a", "zombie?", "5");
        assertTrue(r.status() == 502 || r.status() == 504, r.status() + " " + r.body());
        assertEquals(0, upstream.requestCount(), "the upstream received a request");
        assertTrue(upstream.contentText("/docs/a").isEmpty());
    }

    @Test
    void withTheCaConfiguredFencedWritesGoThroughHttps() throws Exception {
        TestUpstream upstream = upstream(server, false);
        ProxyFixture proxy = proxy(upstream.baseUri(), "{ca: " + pki.ca() + "}");

        assertEquals(201, put(proxy, "/docs/a", "v5", "5").status());
        assertEquals(409, put(proxy, "/docs/a", "v4", "4").status());
        assertEquals("v5", upstream.contentText("/docs/a").orElseThrow());
        assertEquals("v5", Http.get(proxy.uri("/docs/a")).body());
    }

    @Test
    void withoutTheCaTheJdkDefaultsRefuseTheUpstreamAnd502() throws Exception {
        TestUpstream upstream = upstream(server, false);
        ProxyFixture proxy = proxy(upstream.baseUri(), null);

        assertRefusedBeforeSending(proxy, upstream, "unable to find valid certification path");
    }

    @Test
    void aCertificateForAnotherNameIsRefusedEvenFromTheTrustedCa() throws Exception {
        TestUpstream upstream = upstream(pki.leaf("elsewhere", "DNS:elsewhere.example"), false);
        ProxyFixture proxy = proxy(upstream.baseUri(), "{ca: " + pki.ca() + "}");

        assertRefusedBeforeSending(proxy, upstream, "No subject alternative names matching IP address 127.0.0.1");
    }

    @Test
    void aCertificateFromAnotherCaIsRefused() throws Exception {
        TestPki other = TestPki.create(dir.resolve("other-ca"));
        TestUpstream upstream = upstream(other.server("impostor"), false);
        ProxyFixture proxy = proxy(upstream.baseUri(), "{ca: " + pki.ca() + "}");

        assertRefusedBeforeSending(proxy, upstream, "unable to find valid certification path");
    }

    @Test
    void anUpstreamRequiringClientCertificatesTakesTheProxysAndRefusesNone() throws Exception {
        TestUpstream upstream = upstream(server, true);

        ProxyFixture without = proxy(upstream.baseUri(), "{ca: " + pki.ca() + "}");
        assertRefusedForItsCertificate(without, upstream);

        ProxyFixture with = proxy(upstream.baseUri(), "{ca: %s, cert: %s, key: %s}".formatted(pki.ca(),
                proxyCert.cert(), proxyCert.key()));
        assertEquals(201, put(with, "/docs/a", "v5", "5").status());
        assertEquals("v5", upstream.contentText("/docs/a").orElseThrow());
        assertEquals(1, upstream.requestCount());
    }

    @Test
    void aClientCertificateFromAnotherCaIsRefusedByTheUpstream() throws Exception {
        TestUpstream upstream = upstream(server, true);
        TestPki.Leaf foreign = TestPki.create(dir.resolve("other-ca")).leaf("foreign", "DNS:proxy.stockade.test");
        ProxyFixture proxy = proxy(upstream.baseUri(), "{ca: %s, cert: %s, key: %s}".formatted(pki.ca(),
                foreign.cert(), foreign.key()));

        assertRefusedForItsCertificate(proxy, upstream);
    }

    @Test
    void aKeyThatIsNotTheCertificatesStopsTheStartNamingTheFile() throws Exception {
        TestUpstream upstream = upstream(server, false);
        String yaml = """
                store: {type: memory, journal: %s}
                policies:
                  - name: docs
                    match: {path: "/docs/{path...}"}
                    scope: docs/{path}
                    backend:
                      type: http
                      url: %s
                      tls: {ca: %s, cert: %s, key: %s}
                """.formatted(dir.resolve("journal"), upstream.baseUri(), pki.ca(), proxyCert.cert(), server.key());
        IOException e = assertThrows(IOException.class,
                () -> StockadeServer.start(PolicyLoader.parse(yaml, dir.resolve("p.yaml"), Map.of()).withPort(0)));
        assertTrue(e.getMessage().contains("tls.key: " + server.key() + " is not the private key of the"
                + " certificate in " + proxyCert.cert()), e.getMessage());
    }

    // ---- the s3 backend's upstream ----

    /** s3proxy on its secure endpoint only, with the test CA's certificate. */
    S3Proxy s3proxy() throws Exception {
        Path keystore = TestPki.keystore(server, dir.resolve("s3proxy.p12"), "changeit");
        BlobStoreContext blobs = ContextBuilder.newBuilder("transient").credentials("identity", "credential")
                .overrides(new Properties()).build(BlobStoreContext.class);
        open.add(blobs::close);
        S3Proxy s3proxy = S3Proxy.builder()
                .blobStore(blobs.getBlobStore())
                .awsAuthentication(AuthenticationType.AWS_V4, S3Fixture.UPSTREAM_KEY, S3Fixture.UPSTREAM_SECRET)
                .secureEndpoint(URI.create("https://127.0.0.1:0"))
                .keyStore(keystore.toString(), "changeit")
                .ignoreUnknownHeaders(true)
                .build();
        s3proxy.start();
        open.add(s3proxy::stop);
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!s3proxy.getState().equals("STARTED") && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        blobs.getBlobStore().createContainerInLocation(null, "bucket");
        return s3proxy;
    }

    ProxyFixture s3Proxy(S3Proxy s3proxy, String tls) throws Exception {
        List<String> options = new ArrayList<>(List.of("access-key: " + S3Fixture.UPSTREAM_KEY,
                "secret-key: " + S3Fixture.UPSTREAM_SECRET, "auth: none", "timeout: 10s"));
        if (tls != null) {
            options.add("tls: " + tls);
        }
        String yaml = TestPolicies.memoryStore().policy("s3", "/{path...}", "s3").backend("s3",
                "endpoint: https://127.0.0.1:" + s3proxy.getSecurePort(), options.toArray(String[]::new)).yaml();
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal-" + open.size()), yaml, Map.of());
        open.add(proxy);
        return proxy;
    }

    static void putObject(ProxyFixture proxy, String key, String body, long token) {
        try (S3Client s3 = S3Fixture.client(proxy.uri(""), "any", "any")) {
            s3.putObject(b -> b.bucket("bucket").key(key).overrideConfiguration(o -> o.putHeader("Fencing-Token",
                    Long.toString(token))), RequestBody.fromString(body));
        }
    }

    @Test
    void theS3BackendReachesAnHttpsEndpointWithTheCaConfiguredAndOnlyThen() throws Exception {
        S3Proxy s3proxy = s3proxy();
        ProxyFixture trusting = s3Proxy(s3proxy, "{ca: " + pki.ca() + "}");
        putObject(trusting, "k", "v5", 5);
        S3Exception stale = assertThrows(S3Exception.class, () -> putObject(trusting, "k", "v4", 4));
        assertEquals(412, stale.statusCode());

        ProxyFixture defaults = s3Proxy(s3proxy, null);
        S3Exception refused = assertThrows(S3Exception.class, () -> putObject(defaults, "k", "zombie", 9));
        // the atomic class reads the object's token first (HEAD): the fence cannot be decided, 503
        assertEquals(503, refused.statusCode(), refused.getMessage());
        assertTrue(refused.getMessage().contains("unable to find valid certification path"), refused.getMessage());
        try (S3Client s3 = S3Fixture.client(trusting.uri(""), "any", "any")) {
            assertEquals("v5", s3.getObjectAsBytes(b -> b.bucket("bucket").key("k")).asUtf8String());
        }
    }
}
