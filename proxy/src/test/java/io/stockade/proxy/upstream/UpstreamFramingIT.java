package io.stockade.proxy.upstream;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.ScriptedUpstream;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * How the proxy's upstream client frames answers and writes request lines (RFC 9112): answers with no body by
 * definition (304, 204, any answer to HEAD) are relayed at once whatever their headers say, and a long request
 * target goes out whole. Before the proxy had its own client, a 304 without {@code Content-Length} hung for the
 * read timeout (30 s) and a key of ~1 KB went upstream as NUL bytes (S3 as real tools use it).
 */
class UpstreamFramingIT {
    @TempDir
    Path dir;
    ScriptedUpstream upstream;
    ProxyFixture proxy;

    @BeforeEach
    void start() throws Exception {
        upstream = new ScriptedUpstream();
        proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{name}", "docs/{name}")
                .http("http://127.0.0.1:${PORT}", "settle: 1ms", "timeout: 20s").yaml(),
                Map.of("PORT", Integer.toString(upstream.port())));
    }

    @AfterEach
    void stop() throws IOException {
        proxy.close();
        upstream.close();
    }

    @Test
    void answersWithoutABodyByDefinitionAreRelayedAtOnceAndTheConnectionIsReused() throws Exception {
        upstream.answer = "HTTP/1.1 304 Not Modified\r\nETag: \"v1\"\r\nCache-Control: max-age=5\r\n\r\n";
        long start = System.nanoTime();
        Http.Response r = Http.get(proxy.uri("/docs/a"), Map.of("If-None-Match", "\"v1\""));
        assertEquals(304, r.status());
        assertEquals("\"v1\"", r.headers().firstValue("ETag").orElse(null));
        assertEquals("", r.body());
        upstream.answer = "HTTP/1.1 200 OK\r\nContent-Length: 12345\r\nETag: \"v1\"\r\n\r\n";
        Http.Response head = Http.send("HEAD", proxy.uri("/docs/a"), java.net.http.HttpRequest.BodyPublishers.noBody(),
                Map.of());
        assertEquals(200, head.status());
        assertEquals("12345", head.headers().firstValue("Content-Length").orElse(null),
                "a HEAD answer names the length of the body it does not carry");
        upstream.answer = "HTTP/1.1 204 No Content\r\nX-Seen: yes\r\n\r\n";
        assertEquals(204, Http.get(proxy.uri("/docs/a"), Map.of()).status());
        assertTrue(Duration.ofNanos(System.nanoTime() - start).compareTo(Duration.ofSeconds(5)) < 0,
                "three bodiless answers took " + Duration.ofNanos(System.nanoTime() - start));
        assertEquals(1, upstream.connections.size(), "the keep-alive connection was reused for all three");
    }

    /**
     * An upstream that sends more than its Content-Length (here a whole second answer after the body): the extra
     * bytes never become the answer to the next request on that connection. Large bodies are read straight from
     * the socket (the relay's one buffer); a first version of that stopped exactly at the frame, pooled the
     * connection with the extra answer unread, and the next GET got it (20 times out of 20, found in review).
     */
    @ParameterizedTest
    @ValueSource(ints = {100, 64 * 1024, 300 * 1024})
    void bytesPastTheContentLengthNeverBecomeTheNextAnswer(int size) throws Exception {
        String body = "b".repeat(size);
        upstream.answer = "HTTP/1.1 200 OK\r\nContent-Length: " + size + "\r\n\r\n" + body
                + "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!";
        for (int i = 0; i < 10; i++) {
            Http.Response first = Http.get(proxy.uri("/docs/a"));
            assertEquals(200, first.status());
            assertTrue(body.equals(first.body()), "the first answer, exactly its Content-Length: "
                    + first.body().length() + " characters, "
                    + first.body().substring(0, Math.min(20, first.body().length())));
            Http.Response second = Http.get(proxy.uri("/docs/a"));
            assertEquals(200, second.status());
            assertTrue(body.equals(second.body()), "the upstream's extra bytes became the next answer: "
                    + second.body().substring(0, Math.min(20, second.body().length())));
        }
    }

    @Test
    void aLongRequestTargetGoesOutWhole() throws Exception {
        upstream.answer = "HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n";
        String name = "k".repeat(3000);
        Http.Response r = Http.put(proxy.uri("/docs/" + name + "?q=" + "v".repeat(2000)), "x",
                Map.of("Fencing-Token", "1"));
        assertEquals(201, r.status(), r.body());
        String line = upstream.requestLines.getLast();
        assertEquals("PUT /docs/" + name + "?q=" + "v".repeat(2000) + " HTTP/1.1", line);
    }

    @Test
    void aBodyCutShortByTheUpstreamIsNeverRelayedAsComplete() throws Exception {
        upstream.answer = "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\nonly twenty bytes...";
        upstream.closeAfterAnswer = true;
        try {
            Http.Response r = Http.get(proxy.uri("/docs/a"), Map.of());
            assertTrue(r.status() != 200 || r.body().length() != 100, "a truncated body relayed as complete");
        } catch (IOException expected) {
            // the client saw the answer cut off: right
        }
    }

    @Test
    void aLongS3KeyGoesUpstreamWhole() throws Exception {
        try (S3Fixture s3 = S3Fixture.start(dir.resolve("s3j"))) {
            S3Client direct = s3.direct();
            direct.createBucket(b -> b.bucket("longkeys"));
            S3Client client = s3.client();
            String key = "d/" + "k".repeat(1020); // 1022 bytes: S3 allows 1024
            client.putObject(b -> b.bucket("longkeys").key(key).overrideConfiguration(o -> o.putHeader(
                    "Fencing-Token", "4")), RequestBody.fromString("long"));
            assertEquals("long", direct.getObjectAsBytes(b -> b.bucket("longkeys").key(key)).asUtf8String());
            String etag = direct.headObject(b -> b.bucket("longkeys").key(key)).eTag();
            long start = System.nanoTime();
            S3Exception notModified = org.junit.jupiter.api.Assertions.assertThrows(S3Exception.class,
                    () -> client.getObject(b -> b.bucket("longkeys").key(key).ifNoneMatch(etag)).close());
            assertEquals(304, notModified.statusCode());
            assertTrue(Duration.ofNanos(System.nanoTime() - start).compareTo(Duration.ofSeconds(5)) < 0,
                    "the 304 took " + Duration.ofNanos(System.nanoTime() - start));
        }
    }

    /**
     * S3 as real tools use it, defect 2: an S3 store's error without a body reaches the client as an S3 error, never a
     * 500.
     */
    @Test
    void anS3StoreErrorWithoutABodyIsAnS3Error() throws Exception {
        try (ProxyFixture s3 = ProxyFixture.start(dir.resolve("s3j"), TestPolicies.memoryStore()
                .policy("s3", "/{path...}", "s3").backend("s3", "endpoint: \"http://127.0.0.1:${PORT}\"",
                        "access-key: k", "secret-key: s", "auth: none").yaml(),
                        Map.of("PORT", Integer.toString(upstream.port())))) {
            upstream.answer = "HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n";
            upstream.closeAfterAnswer = true;
            Http.Response r = Http.get(s3.uri("/bucket/key"), Map.of());
            assertEquals(400, r.status(), r.body());
            assertTrue(r.body().contains("<Code>InvalidRequest</Code>") && r.body().contains("without a body"),
                    r.body());
            upstream.answer = "HTTP/1.1 403 Forbidden\r\nContent-Length: 0\r\n\r\n";
            upstream.closeAfterAnswer = false;
            Http.Response denied = Http.get(s3.uri("/bucket/key"), Map.of());
            assertEquals(403, denied.status(), denied.body());
            assertTrue(denied.body().contains("<Code>AccessDenied</Code>"), denied.body());
        }
    }
}
