package io.stockade.proxy.etcd;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import io.stockade.policy.ClientTls;
import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Http;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.TestPki;
import io.stockade.testing.Tools;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The etcd fence store over TLS with client-certificate authentication, against a real etcd started with
 * {@code --cert-file/--key-file/--trusted-ca-file --client-cert-auth}: fenced writes work with the proxy's
 * certificate, and every way the TLS set-up can be wrong (no client certificate, another CA, a certificate for
 * another name) fails closed: the proxy starts, and each fenced write is refused with 503 and never reaches the
 * backend, as while etcd is unreachable. The etcd token verifier ({@code fence.verify: {kind: etcd, tls: ...}}) takes
 * the same options: it verifies a lock holder's token through TLS and fails closed (503, nothing written) when TLS
 * does not work.
 */
@RequiresTools(Tools.Tool.ETCD)
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

    @Test
    void httpsEndpointsWithoutATlsBlockSpeakTlsAgainstTheJvmsAuthorities() throws Exception {
        // jetcd speaks plain text unless given an SSL context, whatever the URL says; https:// now means TLS
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal"), """
                store:
                  type: etcd
                  endpoints: %s
                  prefix: %s
                  timeout: 2s
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: %s}
                """.formatted(etcd.endpoints(), prefix, dir.resolve("root")), Map.of());
        open.add(proxy);
        assertFailsClosed(proxy, "unable to find valid certification path");
    }

    // ---- the etcd verifier over TLS ----

    ProxyFixture verifyingProxy(String tls) throws Exception {
        String yaml = """
                store:
                  type: memory
                  journal: %s
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    fence:
                      verify:
                        kind: etcd
                        endpoints: %s
                        prefix: %slocks/
                        timeout: 2s
                        tls: %s
                    backend: {type: file, root: %s}
                """.formatted(dir.resolve("journal"), etcd.endpoints(), prefix, tls, dir.resolve("root"));
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal"), yaml, Map.of());
        open.add(proxy);
        return proxy;
    }

    /** A lock holder's client, over TLS with the proxy's certificate (etcd requires one). */
    Client lockClient() throws Exception {
        Client client = EtcdClients.open(List.of(URI.create(etcd.endpoints())), Duration.ofSeconds(5),
                new ClientTls(pki.ca(), proxyCert.cert(), proxyCert.key()), null, null, null, "test");
        open.add(client);
        return client;
    }

    /**
     * Takes the etcd lock {@code name} with etcd's lock API, as LockServiceVerifyIT does; the token is its revision.
     */
    static long lock(Client etcd, String name) throws Exception {
        long lease = etcd.getLeaseClient().grant(60).get(10, TimeUnit.SECONDS).getID();
        ByteSequence key = etcd.getLockClient().lock(ByteSequence.from(name, StandardCharsets.UTF_8), lease)
                .get(10, TimeUnit.SECONDS).getKey();
        return etcd.getKVClient().get(key).get(10, TimeUnit.SECONDS).getKvs().get(0).getCreateRevision();
    }

    @Test
    void theEtcdVerifierOverTlsAdmitsTheLockHoldersTokenAndRefusesAnInventedOne() throws Exception {
        long token = lock(lockClient(), prefix + "locks/files/a");
        ProxyFixture proxy = verifyingProxy(mutual(proxyCert, pki.ca()));

        Http.Response invented = put(proxy, "/files/a", "evil", Long.toString(Long.MAX_VALUE));
        assertEquals(403, invented.status(), invented.body());
        assertTrue(invented.body().contains("unverified-token"), invented.body());
        assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
        assertFalse(Files.exists(dir.resolve("root/files/a")), "the invented token's write reached the backend");

        Http.Response holder = put(proxy, "/files/a", "v", Long.toString(token));
        assertEquals(201, holder.status(), holder.body());
        assertEquals("v", Files.readString(dir.resolve("root/files/a")));
        assertEquals(token, proxy.server().store().get("files/a").orElseThrow().token());
    }

    @Test
    void theEtcdVerifierTrustingAnotherCaFailsClosed() throws Exception {
        long token = lock(lockClient(), prefix + "locks/files/a");
        TestPki other = TestPki.create(dir.resolve("other-ca"));
        ProxyFixture proxy = verifyingProxy(mutual(proxyCert, other.ca()));

        Http.Response r = put(proxy, "/files/a", "genuine but unverifiable", Long.toString(token));
        assertEquals(503, r.status(), r.body());
        assertTrue(r.body().contains("verifier-unavailable"), r.body());
        assertTrue(r.body().contains("TLS: ") && r.body().contains("unable to find valid certification path"),
                "the answer says why: " + r.body());
        assertTrue(r.header("Retry-After").isPresent(), r.headers().toString());
        assertEquals(Optional.empty(), proxy.server().store().get("files/a"));
        assertFalse(Files.exists(dir.resolve("root/files/a")), "the write reached the backend");
    }
}
