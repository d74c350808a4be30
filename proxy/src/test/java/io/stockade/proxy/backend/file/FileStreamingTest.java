package io.stockade.proxy.backend.file;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.testing.PatternStream;
import io.stockade.testing.Jvm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A 200 MiB PUT and GET through a server running in a child JVM with a 64 MiB heap: if the backend held a
 * whole file in memory, the child would run out of heap and the round trip would fail.
 */
class FileStreamingTest {
    private static final long SIZE = 200L * 1024 * 1024;
    private static final long HEAP = 64L * 1024 * 1024;

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 5, unit = TimeUnit.MINUTES)
    void twoHundredMebibytesThroughASixtyFourMebibyteHeap() throws Exception {
        Path root = tmp.resolve("root");
        Path log = tmp.resolve("child.log");
        Process child = Jvm.java(List.of("-Xmx64m", "-XX:+ExitOnOutOfMemoryError"), FileTestServer.class.getName(),
                        root.toString())
                .redirectError(log.toFile())
                .start();
        try (BufferedReader fromChild = new BufferedReader(
                new InputStreamReader(child.getInputStream(), StandardCharsets.UTF_8));
             OutputStream toChild = child.getOutputStream();
             HttpClient client = HttpClient.newHttpClient()) {
            String first = fromChild.readLine();
            assertNotNull(first, () -> "child exited: " + read(log));
            assertTrue(first.startsWith("PORT "), first);
            URI uri = URI.create("http://127.0.0.1:" + first.substring(5).trim() + "/big/blob.bin");

            HttpResponse<String> put = client.send(HttpRequest.newBuilder(uri).header("Fencing-Token", "1")
                            .PUT(HttpRequest.BodyPublishers.fromPublisher(
                                    HttpRequest.BodyPublishers.ofInputStream(() -> new PatternStream(SIZE)), SIZE))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(201, put.statusCode(), () -> put.body() + read(log));
            try (InputStream stored = Files.newInputStream(root.resolve("big/blob.bin"))) {
                PatternStream.assertIsPattern(stored, SIZE, "the file written");
            }

            HttpResponse<Void> head = client.send(HttpRequest.newBuilder(uri)
                    .method("HEAD", HttpRequest.BodyPublishers.noBody()).build(),
                    HttpResponse.BodyHandlers.discarding());
            assertEquals(200, head.statusCode());
            assertEquals(SIZE, head.headers().firstValueAsLong("Content-Length").orElse(-1));

            HttpResponse<InputStream> get = client.send(HttpRequest.newBuilder(uri).GET().build(),
                    HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, get.statusCode());
            assertEquals(SIZE, get.headers().firstValueAsLong("Content-Length").orElse(-1));
            try (InputStream body = get.body()) {
                PatternStream.assertIsPattern(body, SIZE, "the file read back");
            }

            // The child really ran with the small heap, and is still alive after both transfers.
            toChild.write('\n');
            toChild.flush();
            String heap = fromChild.readLine();
            assertNotNull(heap, () -> "child died: " + read(log));
            long max = Long.parseLong(heap.replaceAll(".*max=(\\d+).*", "$1"));
            assertTrue(max <= HEAP, heap);
            assertTrue(child.isAlive(), () -> read(log));
        } finally {
            child.destroy();
            if (!child.waitFor(10, TimeUnit.SECONDS)) {
                child.destroyForcibly();
            }
        }
    }

    private static String read(Path log) {
        try {
            return Files.exists(log) ? Files.readString(log) : "";
        } catch (IOException e) {
            return e.toString();
        }
    }
}
