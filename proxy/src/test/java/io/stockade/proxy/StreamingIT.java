package io.stockade.proxy;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.stockade.proxy.testing.PatternStream;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.Http;
import io.stockade.testing.Jvm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Bodies stream both ways: a 512 MiB PUT passes through a proxy whose heap is 128 MiB (the body four times the
 * heap), to an HTTP upstream and
 * into the file backend, and the file comes back out through the proxy byte for byte; a single 256 MiB chunk
 * passes through a 96 MiB heap. What arrives is compared with the pattern sent: the file and the bytes read back
 * byte for byte, the upstream's body (which it does not keep) by length and CRC32C ({@link PatternStream} says why
 * not SHA-256).
 */
class StreamingIT {
    /** The body: four times the proxy's heap (1 GiB through 256 MiB before; the same ratio at half the time). */
    static final long BODY = 512L << 20;

    @TempDir
    Path dir;

    @Test
    void aBodyFourTimesTheHeapStreamsBothWays() throws Exception {
        try (TestUpstream upstream = TestUpstream.start().discardBodies(true)) {
            Path config = dir.resolve("stockade.yaml");
            Files.writeString(config, """
                    server:
                      port: 0
                    store:
                      type: memory
                      journal: %s
                    policies:
                      - name: blobs
                        match:
                          path: /blobs/{id}
                        scope: blobs/{id}
                        backend:
                          type: http
                          url: %s
                          settle: 100ms
                          timeout: 120s
                      - name: files
                        match:
                          path: /files/{path...}
                        scope: files/{path}
                        backend:
                          type: file
                          root: %s
                    """.formatted(dir.resolve("journal"), upstream.baseUri(), dir.resolve("files")));
            try (ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx128m", Jvm.FULL_JIT))) {
                Thread.sleep(200);
                int status = putPattern(proxy.baseUri().resolve("/blobs/big"), BODY);
                assertEquals(201, status, proxy.log());
                assertEquals(BODY, upstream.bytesReceived("/blobs/big"));
                assertEquals(PatternStream.crc32c(BODY), upstream.crc32c("/blobs/big"));

                assertEquals(201, putPattern(proxy.baseUri().resolve("/files/big.bin"), BODY), proxy.log());
                try (InputStream stored = Files.newInputStream(dir.resolve("files/files/big.bin"))) {
                    PatternStream.assertIsPattern(stored, BODY, "the file the file backend wrote");
                }

                HttpResponse<InputStream> back = Http.client().send(
                        HttpRequest.newBuilder(proxy.baseUri().resolve("/files/big.bin"))
                                .timeout(Duration.ofMinutes(2)).build(),
                        HttpResponse.BodyHandlers.ofInputStream());
                assertEquals(200, back.statusCode());
                try (InputStream in = back.body()) {
                    PatternStream.assertIsPattern(in, BODY, "the file read back through the proxy");
                }
            }
        }
    }

    /**
     * One chunk larger than the heap: Helidon's chunk reader holds a whole chunk in memory, so before RequestFraming
     * passed chunks on in pieces of at most 256 KiB this ran the proxy out of heap (every connection suffered).
     */
    @Test
    void oneChunkLargerThanTheHeapStreamsThrough() throws Exception {
        long size = 256L << 20;
        try (TestUpstream upstream = TestUpstream.start().discardBodies(true)) {
            Path config = dir.resolve("stockade.yaml");
            Files.writeString(config, """
                    server:
                      port: 0
                    store:
                      type: memory
                      journal: %s
                    policies:
                      - name: blobs
                        match:
                          path: /blobs/{id}
                        scope: blobs/{id}
                        backend:
                          type: http
                          url: %s
                          settle: 100ms
                          timeout: 120s
                    """.formatted(dir.resolve("journal"), upstream.baseUri()));
            try (ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx96m"));
                 java.net.Socket socket = new java.net.Socket(proxy.baseUri().getHost(), proxy.baseUri().getPort())) {
                socket.setSoTimeout(120_000);
                var out = new java.io.BufferedOutputStream(socket.getOutputStream(), 1 << 16);
                out.write(("PUT /blobs/one-chunk HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\nConnection: close\r\n"
                        + "Transfer-Encoding: chunked\r\n\r\n" + Long.toHexString(size) + ";name=value\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                new PatternStream(size).transferTo(out);
                out.write("\r\n0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
                out.flush();
                String answer = new String(socket.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
                assertEquals("HTTP/1.1 201", answer.substring(0, 12), answer + proxy.log());
                assertEquals(size, upstream.bytesReceived("/blobs/one-chunk"));
                assertEquals(PatternStream.crc32c(size), upstream.crc32c("/blobs/one-chunk"));
            }
        }
    }

    private static int putPattern(URI uri, long size) throws Exception {
        HttpRequest request = HttpRequest.newBuilder(uri)
                .timeout(Duration.ofMinutes(2))
                .header("Fencing-Token", "1")
                .PUT(HttpRequest.BodyPublishers.fromPublisher(
                        HttpRequest.BodyPublishers.ofInputStream(() -> new PatternStream(size)), size))
                .build();
        return Http.client().send(request, HttpResponse.BodyHandlers.ofString()).statusCode();
    }
}
