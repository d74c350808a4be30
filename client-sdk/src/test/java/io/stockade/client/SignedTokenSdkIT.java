package io.stockade.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.StockadeServer;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The SDK against a real proxy (in-process {@code StockadeServer}) with {@code fence.verify}: leases from a real
 * PostgreSQL ({@code stockade_leases}), tokens signed by {@link TokenSigner} ({@code kind: hmac}) or checked in
 * the lease table the SDK wrote ({@code kind: postgres}). A writer that only makes up a token is refused.
 */
class SignedTokenSdkIT {
    static final String URL = PostgresLeaseIT.URL;
    static final String KEY = "0123456789abcdef0123456789abcdef-sdk-key";

    @TempDir
    Path dir;
    StockadeServer proxy;
    LeaseProvider leases;

    @AfterEach
    void stop() {
        if (leases != null) {
            leases.close();
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    private void startProxy(String verify) throws Exception {
        String yaml = """
                store:
                  type: memory
                  journal: ${ROOT}/journal
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    fence:
                      verify:
                %s
                    backend:
                      type: file
                      root: ${ROOT}/files
                """.formatted(verify.indent(8).stripTrailing());
        proxy = StockadeServer.start(PolicyLoader.parse(yaml, dir.resolve("policy.yaml"),
                Map.of("ROOT", dir.toString(), "FENCE_KEY", KEY, "PG", "jdbc:postgresql://127.0.0.1:5432/test"))
                .withPort(0));
    }

    private HttpRequest put(String name, String body) {
        return HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + proxy.port() + "/files/" + name))
                .PUT(HttpRequest.BodyPublishers.ofString(body)).build();
    }

    private String stored(String name) throws Exception {
        Path file = dir.resolve("files").resolve("files").resolve(name); // root, then the request path
        return Files.exists(file) ? Files.readString(file) : null;
    }

    @Test
    void signedBySdkPassesAndAnUnsignedInflatedTokenDoesNotRaiseTheFence() throws Exception {
        startProxy("kind: hmac\nkeys: [{id: k1, key: \"${FENCE_KEY}\"}]");
        leases = Leases.newBuilder().holderIdentity("signer").postgres(URL);
        String name = "sdk-" + UUID.randomUUID();
        String scope = "files/" + name;
        try (Lease lease = leases.acquire(scope, Duration.ofSeconds(15), Duration.ofSeconds(5))) {
            HttpClient plain = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1));
            HttpClient signed = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1))
                    .signed(scope, TokenSigner.hmacSha256("k1", KEY));

            // a hostile writer with no key: the real token, then an inflated one, both unsigned
            assertEquals(403, plain.send(put(name, "unsigned"), HttpResponse.BodyHandlers.ofString()).statusCode());
            HttpResponse<String> inflated = HttpClient.newHttpClient().send(HttpRequest.newBuilder(put(name, "evil"),
                    (n, v) -> true).header("Fencing-Token", Long.toString(Long.MAX_VALUE)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(403, inflated.statusCode(), inflated.body());
            assertEquals(null, stored(name));

            // a signer with the wrong key
            HttpClient wrongKey = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1))
                    .signed(scope, TokenSigner.hmacSha256("k1", "not-the-key-0123456789abcdef0123456789"));
            assertEquals(403, wrongKey.send(put(name, "wrong"), HttpResponse.BodyHandlers.ofString()).statusCode());
            // a signature for another scope
            HttpClient otherScope = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1))
                    .signed(scope + "-other", TokenSigner.hmacSha256("k1", KEY));
            assertEquals(403, otherScope.send(put(name, "other"), HttpResponse.BodyHandlers.ofString()).statusCode());

            HttpResponse<String> ok = signed.send(put(name, "v1"), HttpResponse.BodyHandlers.ofString());
            assertEquals(201, ok.statusCode(), ok.body());
            assertEquals("v1", stored(name));
        }
    }

    /** A policy with its own signature header ({@code fence.verify.header}): the signer names it. */
    @Test
    void aSignerSignsIntoThePolicysOwnHeader() throws Exception {
        startProxy("kind: hmac\nheader: X-Fence-Signature\nkeys: [{id: k1, key: \"${FENCE_KEY}\"}]");
        leases = Leases.newBuilder().holderIdentity("signer").postgres(URL);
        String name = "sdk-" + UUID.randomUUID();
        String scope = "files/" + name;
        try (Lease lease = leases.acquire(scope, Duration.ofSeconds(15), Duration.ofSeconds(5))) {
            // the default header is not what this policy reads
            HttpClient defaultHeader = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1))
                    .signed(scope, TokenSigner.hmacSha256("k1", KEY));
            HttpResponse<String> refused = defaultHeader.send(put(name, "v0"), HttpResponse.BodyHandlers.ofString());
            assertEquals(403, refused.statusCode(), refused.body());
            assertTrue(refused.body().contains("no X-Fence-Signature header"), refused.body());
            assertEquals(null, stored(name));

            HttpClient signed = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1))
                    .signed(scope, TokenSigner.hmacSha256("k1", KEY).withHeader("X-Fence-Signature"));
            HttpResponse<String> ok = signed.send(put(name, "v1"), HttpResponse.BodyHandlers.ofString());
            assertEquals(201, ok.statusCode(), ok.body());
            assertEquals("v1", stored(name));
        }
    }

    @Test
    void theSdksPostgresLeaseIsWhatThePostgresVerifierChecks() throws Exception {
        startProxy("kind: postgres\ndatasource: {url: \"${PG}\", user: postgres}");
        leases = Leases.newBuilder().holderIdentity("holder").postgres(URL);
        String name = "sdk-" + UUID.randomUUID();
        try (Lease lease = leases.acquire("files/" + name, Duration.ofSeconds(15), Duration.ofSeconds(5))) {
            HttpClient http = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(1));
            HttpResponse<String> inflated = HttpClient.newHttpClient().send(HttpRequest.newBuilder(put(name, "evil"),
                    (n, v) -> true).header("Fencing-Token", Long.toString(lease.token() + 1000)).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(403, inflated.statusCode(), inflated.body());
            assertTrue(inflated.body().contains("unverified-token"), inflated.body());
            HttpResponse<String> ok = http.send(put(name, "v1"), HttpResponse.BodyHandlers.ofString());
            assertEquals(201, ok.statusCode(), ok.body());
            assertEquals("v1", stored(name));
        }
    }
}
