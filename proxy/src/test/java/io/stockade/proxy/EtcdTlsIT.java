package io.stockade.proxy;

import io.stockade.proxy.testing.EtcdServer;
import io.stockade.proxy.testing.Http;
import io.stockade.proxy.testing.TestPki;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The etcd fence store over TLS with client-certificate authentication, against a real etcd started with
 * {@code --cert-file/--key-file/--trusted-ca-file --client-cert-auth}: fenced writes work with the proxy's
 * certificate, and every way the TLS set-up can be wrong (no client certificate, another CA, a certificate for
 * another name) fails closed: the proxy starts, and each fenced write is refused with 503 and never reaches the
 * backend, as while etcd is unreachable.
 */
class EtcdTlsIT {
    @TempDir
    static Path pkiDir;
    static TestPki pki;
    static TestPki.Leaf proxyCert;
    static EtcdServer etcd;

    @TempDir
    Path dir;
    final String prefix = "/tls/" + UUID.randomUUID() + "/";
    final List<AutoCloseable> open = new ArrayList<>();

    @BeforeAll
    static void startEtcd() {
        Assumptions.assumeTrue(EtcdServer.available(), "etcd is not installed (apt-get install -y etcd-server)");
        pki = TestPki.create(pkiDir.resolve("ca"));
        proxyCert = pki.leaf("proxy", "DNS:proxy.stockade.test");
        etcd = EtcdServer.singleTls(pki.server("etcd"), true);
    }

    @AfterAll
    static void stopEtcd() {
        if (etcd != null) {
            etcd.close();
        }
    }

    @AfterEach
    void close() throws Exception {
        for (AutoCloseable c : open.reversed()) {
            c.close();
        }
    }

    ProxyFixture proxy(String endpoints, String tls) throws Exception {
        String yaml = """
                store:
                  type: etcd
                  endpoints: %s
                  prefix: %s
                  timeout: 2s
                  tls: %s
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: %s}
                """.formatted(endpoints, prefix, tls, dir.resolve("root"));
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal"), yaml, Map.of());
        open.add(proxy);
        return proxy;
    }

    static Http.Response put(ProxyFixture proxy, String path, String body, String token) throws Exception {
        return Http.put(proxy.uri(path), body, Map.of("Fencing-Token", token));
    }

    String mutual(TestPki.Leaf client, Path ca) {
        return "{ca: %s, cert: %s, key: %s}".formatted(ca, client.cert(), client.key());
    }

    void assertFailsClosed(ProxyFixture proxy, String why) throws Exception {
        Http.Response r = put(proxy, "/files/a", "zombie?", "5");
        assertEquals(503, r.status(), r.body());
        if (why != null) { // etcd's refusal of a client certificate may also read as a reset connection
            assertTrue(r.body().contains("TLS: ") && r.body().contains(why), "the answer says why: " + r.body());
        }
        assertTrue(r.body().contains("urn:stockade:problem:store-unavailable"), r.body());
        assertTrue(r.header("Retry-After").isPresent(), r.headers().toString());
        assertFalse(Files.exists(dir.resolve("root/files/a")), "the write reached the backend");
    }

    @Test
    void fencedWritesWorkWithTheProxysClientCertificate() throws Exception {
        ProxyFixture proxy = proxy(etcd.endpoints(), mutual(proxyCert, pki.ca()));
        assertTrue(etcd.endpoints().startsWith("https://"), etcd.endpoints());

        assertEquals(201, put(proxy, "/files/a", "v5", "5").status());
        assertEquals(409, put(proxy, "/files/a", "v4", "4").status());
        assertEquals("v5", Files.readString(dir.resolve("root/files/a")));

        // the fence is in etcd: a second proxy (its own empty cache) refuses the stale token too
        ProxyFixture second = proxy(etcd.endpoints(), mutual(proxyCert, pki.ca()));
        Http.Response stale = put(second, "/files/a", "v4", "4");
        assertEquals(409, stale.status(), stale.body());
        assertTrue(stale.body().contains("\"highest\":5"), stale.body());
    }

    @Test
    void withoutAClientCertificateEtcdRefusesAndTheWriteFailsClosed() throws Exception {
        assertFailsClosed(proxy(etcd.endpoints(), "{ca: " + pki.ca() + "}"), null);
    }

    @Test
    void aProxyTrustingAnotherCaFailsClosed() throws Exception {
        TestPki other = TestPki.create(dir.resolve("other-ca"));
        assertFailsClosed(proxy(etcd.endpoints(), mutual(proxyCert, other.ca())),
                "unable to find valid certification path");
    }

    @Test
    void aClientCertificateOfAnotherCaIsRefusedByEtcd() throws Exception {
        TestPki other = TestPki.create(dir.resolve("other-ca"));
        assertFailsClosed(proxy(etcd.endpoints(), mutual(other.leaf("foreign", "DNS:proxy.stockade.test"),
                pki.ca())), null);
    }

    @Test
    void anEtcdWhoseCertificateNamesAnotherHostFailsClosed() throws Exception {
        try (EtcdServer elsewhere = EtcdServer.singleTls(pki.leaf("etcd-elsewhere", "DNS:elsewhere.example"),
                true)) {
            assertFailsClosed(proxy(elsewhere.endpoints(), mutual(proxyCert, pki.ca())),
                    "No subject alternative names matching IP address 127.0.0.1");
        }
    }
}
