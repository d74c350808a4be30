package io.stockade.proxy.verify;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.SSLContext;

import io.stockade.proxy.VerifiedJobs;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;
import io.stockade.testing.TestPki;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsServer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify: {kind: kubernetes}} through a real proxy and the file backend, against an in-process stand-in
 * of the Kubernetes Lease API: there is no Kubernetes API server on this machine (no kind, minikube or k3s), so
 * {@link LeaseApi} serves {@code GET /apis/coordination.k8s.io/v1/namespaces/NS/leases/NAME} with Lease and
 * {@code Status} bodies shaped as a real API server returns them (as the client SDK's {@code LeaseApiServer} does),
 * and answers 401 unless the request carries the service account's bearer token. What a Lease holds is what the
 * SDK's Kubernetes provider writes: the token is {@code spec.leaseTransitions}, a released Lease has an empty
 * {@code holderIdentity}.
 */
class KubernetesLeaseVerifyIT {
    static final String NS = "jobs";
    static final String SA_TOKEN = "eyJhbGciOiJSUzI1NiJ9.sa-token-of-the-proxy.sig";
    static final DateTimeFormatter MICRO_TIME =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSSX").withZone(ZoneOffset.UTC);
    /** The genuine holder's token: distinctive, so the test can tell it never reaches a refused client. */
    static final long HELD = 4711;

    @TempDir
    Path dir;
    LeaseApi api;
    Path tokenFile;
    VerifiedJobs jobs;

    @BeforeEach
    void start() throws Exception {
        api = new LeaseApi();
        tokenFile = dir.resolve("token");
        Files.writeString(tokenFile, SA_TOKEN + "\n");
        jobs = new VerifiedJobs(dir, SA_TOKEN);
        start("http://127.0.0.1:" + api.port(), "{}");
    }

    /**
     * (Re)starts the proxy, its verifier asking {@code apiServer}, with {@code tls} (a flow mapping, or {}). Over TLS
     * the timeout is 10 s: the JVM's first handshake took over 1 s on a loaded machine (load 15 on 2 cores), and
     * what those tests check is the certificate, not the timeout.
     */
    void start(String apiServer, String tls) throws Exception {
        jobs.start("""
                kind: kubernetes
                api-server: ${API_SERVER}
                namespace: jobs
                prefix: lease-
                token-file: ${TOKEN_FILE}
                cache: {enabled: false}
                """ + (tls.equals("{}") ? "timeout: 1s" : "tls: " + tls + "\ntimeout: 10s"),
                Map.of("API_SERVER", apiServer, "TOKEN_FILE", tokenFile.toString()));
    }

    @AfterEach
    void stop() {
        jobs.close();
        api.close();
    }

    /** A 403 for a token other than the holder's: the answer must not tell the holder's token. */
    void assertRefused(Http.Response r, String id, String reason) throws Exception {
        jobs.assertRefused(r, id, reason, Long.toString(HELD), Optional.empty(), Optional.empty());
    }

    /** A 403 for the token the Lease has (the client sent it, so the answer may echo it). */
    void assertRefusedHoldersToken(Http.Response r, String id, String reason) throws Exception {
        jobs.assertRefused(r, id, reason, null, Optional.empty(), Optional.empty());
    }

    @Test
    void theHoldersTokenWrites() throws Exception {
        api.lease("lease-job-a", "worker-1", 15, Instant.now(), HELD);
        assertEquals(201, jobs.put("a", "v1", HELD).status());
        assertEquals(Optional.of("v1"), jobs.stored("a"));
        assertEquals(Optional.of(HELD), jobs.fence("a"));
        assertTrue(jobs.put("a", "v2", HELD).status() / 100 == 2, "the holder keeps writing");
        assertEquals(Optional.of("v2"), jobs.stored("a"));
        assertEquals(List.of("GET /apis/coordination.k8s.io/v1/namespaces/jobs/leases/lease-job-a auth=Bearer "
                + SA_TOKEN), api.requests.subList(0, 1));
    }

    @Test
    void anInventedOrInflatedTokenIsRefusedAndDoesNotRaiseTheFence() throws Exception {
        api.lease("lease-job-b", "worker-1", 15, Instant.now(), HELD);
        for (long forged : List.of(Long.MAX_VALUE, HELD + 1, 1L)) {
            assertRefused(jobs.put("b", "evil", forged), "b", "not the token of the holder of Lease 'lease-job-b'");
        }
        // the genuine holder is not locked out
        assertEquals(201, jobs.put("b", "honest", HELD).status());
        assertEquals(Optional.of("honest"), jobs.stored("b"));
    }

    /**
     * With the default cache a verdict lasts only while the Lease is still the holder's by a contender's clock up to
     * {@code clock-skew} ahead: {@code renewTime + leaseDurationSeconds - clock-skew - now}, less the margin.
     */
    @Test
    void theDefaultCacheRemembersAVerdictOnlyWhileTheLeaseLasts() throws Exception {
        jobs.close();
        jobs.start("""
                kind: kubernetes
                api-server: ${API_SERVER}
                namespace: jobs
                prefix: lease-
                token-file: ${TOKEN_FILE}
                timeout: 1s
                """, Map.of("API_SERVER", "http://127.0.0.1:" + api.port(), "TOKEN_FILE", tokenFile.toString()));
        // 15 s from a renewal 2 s ago, less the 5 s clock-skew: 8 s left, remembered
        api.lease("lease-job-f", "worker-1", 15, Instant.now().minusSeconds(2), HELD);
        // 15 s from a renewal 12 s ago: held by the proxy's clock within clock-skew, but a contender whose clock is
        // 5 s ahead may already have taken it: genuine, never remembered
        api.lease("lease-job-g", "worker-1", 15, Instant.now().minusSeconds(12), HELD);
        for (String id : List.of("f", "g")) {
            assertEquals(201, jobs.put(id, "v1", HELD).status());
            assertEquals(2, jobs.put(id, "v2", HELD).status() / 100);
            assertEquals(Optional.of("v2"), jobs.stored(id));
        }
        String prefix = "GET /apis/coordination.k8s.io/v1/namespaces/jobs/leases/lease-job-";
        List<String> asked = List.copyOf(api.requests);
        assertEquals(1, asked.stream().filter(r -> r.startsWith(prefix + "f ")).count(), "remembered: " + asked);
        assertEquals(2, asked.stream().filter(r -> r.startsWith(prefix + "g ")).count(), "looked up again: " + asked);
    }

    @Test
    void anExpiredLeaseIsRefused() throws Exception {
        // renewed a minute ago for 15 s: past the default clock-skew of 5 s
        api.lease("lease-job-c", "worker-1", 15, Instant.now().minusSeconds(60), HELD);
        assertRefusedHoldersToken(jobs.put("c", "late", HELD), "c",
                "Lease 'lease-job-c' in namespace jobs expired: nobody holds it");
    }

    @Test
    void aReleasedLeaseIsRefused() throws Exception {
        api.lease("lease-job-r", "", 1, Instant.now(), HELD); // what the SDK's release leaves
        assertRefusedHoldersToken(jobs.put("r", "after", HELD), "r", "was released: nobody holds it");
    }

    @Test
    void aMissingLeaseIsRefused() throws Exception {
        assertRefused(jobs.put("d", "x", 1), "d", "no Lease 'lease-job-d' in namespace jobs: nobody holds it");
    }

    @Test
    void aScopeThatIsNoLeaseNameIsRefusedWithoutAsking() throws Exception {
        assertRefused(jobs.put("Upper_Case", "x", 1), "Upper_Case", "'lease-job-Upper_Case' cannot be a Lease name");
        assertEquals(List.of(), api.requests);
    }

    @Test
    void aRejectedServiceAccountTokenIs503AndARotatedOneIsReadAtOnce() throws Exception {
        api.lease("lease-job-e", "worker-1", 15, Instant.now(), HELD);
        Files.writeString(tokenFile, "expired-token\n");
        jobs.assertUnavailable(jobs.put("e", "x", HELD), "e");
        assertTrue(api.requests.getLast().endsWith("auth=Bearer expired-token"), api.requests.toString());
        Files.writeString(tokenFile, SA_TOKEN + "\n"); // the kubelet rotated it
        assertEquals(201, jobs.put("e", "x", HELD).status());
    }

    @Test
    void anApiServerErrorIs503() throws Exception {
        api.lease("lease-job-f", "worker-1", 15, Instant.now(), HELD);
        api.failWith = 500;
        Http.Response r = jobs.put("f", "x", HELD);
        jobs.assertUnavailable(r, "f");
        assertTrue(r.body().contains("HTTP 500"), r.body());
    }

    @Test
    void anApiServerThatIsDownIs503() throws Exception {
        int closedPort = FreePorts.next(); // nothing listens there: the ports of a test JVM's own block
        start("http://127.0.0.1:" + closedPort, "{}");
        jobs.assertUnavailable(jobs.put("g", "x", 1), "g");
    }

    /**
     * Over HTTPS, as a real API server speaks: the proxy trusts the cluster CA given as {@code tls.ca}; a server
     * whose certificate another CA signed is refused (503, nothing written), never trusted.
     */
    @Test
    void overHttpsTheApiServerIsVerifiedAgainstTheGivenCa() throws Exception {
        TestPki cluster = TestPki.create(dir.resolve("cluster-ca"));
        try (LeaseApi https = new LeaseApi(TestPki.sslContext(cluster.server("apiserver")))) {
            https.lease("lease-job-h", "worker-1", 15, Instant.now(), HELD);
            start("https://127.0.0.1:" + https.port(), "{ca: \"" + cluster.ca() + "\"}");
            assertEquals(201, jobs.put("h", "over-tls", HELD).status());
            assertEquals(Optional.of("over-tls"), jobs.stored("h"));

            TestPki other = TestPki.create(dir.resolve("other-ca"));
            start("https://127.0.0.1:" + https.port(), "{ca: \"" + other.ca() + "\"}");
            Http.Response r = jobs.put("i", "x", 1);
            jobs.assertUnavailable(r, "i");
        }
    }

    /** The Lease API of a Kubernetes API server, GET only, as it answers (see the class comment). */
    static final class LeaseApi implements AutoCloseable {
        private static final Pattern PATH =
                Pattern.compile("/apis/coordination\\.k8s\\.io/v1/namespaces/([^/]+)/leases/([^/]+)");
        final List<String> requests = new CopyOnWriteArrayList<>();
        final Map<String, String> leases = new ConcurrentHashMap<>();
        volatile int failWith;
        private final HttpServer server;
        private int version = 1000;

        LeaseApi() throws IOException {
            this(null);
        }

        /** Over HTTPS when {@code tls} is given. */
        LeaseApi(SSLContext tls) throws IOException {
            InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), 0);
            if (tls == null) {
                server = HttpServer.create(address, 0);
            } else {
                HttpsServer https = HttpsServer.create(address, 0);
                https.setHttpsConfigurator(new HttpsConfigurator(tls));
                server = https;
            }
            server.createContext("/", this::handle);
            server.start();
        }

        int port() {
            return server.getAddress().getPort();
        }

        /** A Lease as the SDK's Kubernetes provider writes it, renewed at {@code renewed}. */
        synchronized void lease(String name, String holder, int durationSeconds, Instant renewed, long transitions) {
            String time = MICRO_TIME.format(renewed);
            leases.put(name, """
                    {"kind":"Lease","apiVersion":"coordination.k8s.io/v1","metadata":{"name":"%s","namespace":"%s",\
                    "uid":"9c1f0b8e-3f2a-4d7e-9a57-2b8f3c1d0e4f","resourceVersion":"%d",\
                    "creationTimestamp":"2026-11-30T10:00:00Z","managedFields":[{"manager":"stockade-client",\
                    "operation":"Update","apiVersion":"coordination.k8s.io/v1","time":"2026-11-30T10:00:00Z"}]},\
                    "spec":{"holderIdentity":"%s","leaseDurationSeconds":%d,"acquireTime":"%s","renewTime":"%s",\
                    "leaseTransitions":%d}}""".formatted(name, NS, ++version, holder, durationSeconds, time, time,
                    transitions));
        }

        private void handle(HttpExchange ex) throws IOException {
            String auth = ex.getRequestHeaders().getFirst("Authorization");
            requests.add(ex.getRequestMethod() + " " + ex.getRequestURI().getPath() + " auth=" + auth);
            Matcher m = PATH.matcher(ex.getRequestURI().getPath());
            if (!("Bearer " + SA_TOKEN).equals(auth)) {
                send(ex, 401, status(401, "Unauthorized", "Unauthorized"));
            } else if (failWith != 0) {
                send(ex, failWith, status(failWith, "InternalError", "etcdserver: request timed out"));
            } else if (!ex.getRequestMethod().equals("GET")) {
                send(ex, 405, status(405, "MethodNotAllowed", "the server does not allow this method"));
            } else if (!m.matches() || !m.group(1).equals(NS) || !leases.containsKey(m.group(2))) {
                String name = m.matches() ? m.group(2) : "";
                send(ex, 404, status(404, "NotFound", "leases.coordination.k8s.io \"" + name + "\" not found"));
            } else {
                send(ex, 200, leases.get(m.group(2)));
            }
        }

        private static String status(int code, String reason, String message) {
            return "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\""
                    + message.replace("\"", "\\\"") + "\",\"reason\":\"" + reason + "\",\"code\":" + code + "}";
        }

        private static void send(HttpExchange ex, int code, String body) throws IOException {
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            ex.getResponseHeaders().set("Content-Type", "application/json");
            ex.sendResponseHeaders(code, bytes.length);
            ex.getResponseBody().write(bytes);
            ex.close();
        }

        @Override
        public void close() {
            server.stop(0);
        }
    }
}
