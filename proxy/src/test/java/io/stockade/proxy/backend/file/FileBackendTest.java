package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.stockade.policy.Policy;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class FileBackendTest {
    @TempDir
    Path tmp;
    Path root;
    FileTestServer server;
    HttpClient client;

    @BeforeEach
    void start() throws IOException {
        root = tmp.resolve("root");
        server = new FileTestServer(root);
        client = HttpClient.newHttpClient();
    }

    @AfterEach
    void stop() {
        client.close();
        server.close();
    }

    private URI uri(String path) {
        return URI.create("http://127.0.0.1:" + server.port() + path);
    }

    private HttpResponse<String> put(String path, String body, Long token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).PUT(HttpRequest.BodyPublishers.ofString(body));
        if (token != null) {
            b.header("Fencing-Token", token.toString());
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> delete(String path, Long token) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).DELETE();
        if (token != null) {
            b.header("Fencing-Token", token.toString());
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> get(String path, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri(path)).GET();
        if (headers.length > 0) {
            b.headers(headers);
        }
        return client.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private HttpResponse<String> head(String path) throws Exception {
        return client.send(HttpRequest.newBuilder(uri(path)).method("HEAD", HttpRequest.BodyPublishers.noBody())
                .build(), HttpResponse.BodyHandlers.ofString());
    }

    private Path sidecar(String relative) {
        return root.resolve(".stockade/tokens").resolve(relative).resolve(".stockade-token");
    }

    private static void assertProblem(HttpResponse<String> r, int status, String type) {
        assertEquals(status, r.statusCode(), r.body());
        assertEquals("application/problem+json", r.headers().firstValue("Content-Type").orElse(null));
        assertTrue(r.body().contains("\"type\":\"urn:stockade:problem:" + type + "\""), r.body());
    }

    private Stream<Path> tempFiles() throws IOException {
        return Files.walk(root).filter(p -> p.getFileName().toString().startsWith(".stockade-tmp"));
    }

    @Test
    void createsTheRoot() {
        assertTrue(Files.isDirectory(root));
        assertTrue(Files.isDirectory(root.resolve(".stockade/tokens")));
    }

    @Test
    void putGetHeadDeleteRoundTrip() throws Exception {
        assertEquals(201, put("/files/a/b.txt", "hello", null).statusCode());
        assertEquals("hello", Files.readString(root.resolve("files/a/b.txt")));

        HttpResponse<String> g = get("/files/a/b.txt");
        assertEquals(200, g.statusCode());
        assertEquals("hello", g.body());
        assertEquals("application/octet-stream", g.headers().firstValue("Content-Type").orElseThrow());
        assertEquals("5", g.headers().firstValue("Content-Length").orElseThrow());
        String etag = g.headers().firstValue("ETag").orElseThrow();
        assertTrue(etag.startsWith("\"") && etag.endsWith("\""), etag);
        assertTrue(g.headers().firstValue("Last-Modified").isPresent());

        HttpResponse<String> h = head("/files/a/b.txt");
        assertEquals(200, h.statusCode());
        assertEquals("5", h.headers().firstValue("Content-Length").orElseThrow());
        assertEquals(etag, h.headers().firstValue("ETag").orElseThrow());
        assertEquals("", h.body());

        assertEquals(304, get("/files/a/b.txt", "If-None-Match", etag).statusCode());

        assertEquals(204, put("/files/a/b.txt", "hello again", null).statusCode());
        HttpResponse<String> g2 = get("/files/a/b.txt");
        assertEquals("hello again", g2.body());
        assertNotEquals(etag, g2.headers().firstValue("ETag").orElseThrow());
        assertEquals(200, get("/files/a/b.txt", "If-None-Match", etag).statusCode());

        assertEquals(204, delete("/files/a/b.txt", null).statusCode());
        assertFalse(Files.exists(root.resolve("files/a/b.txt")));
        assertProblem(get("/files/a/b.txt"), 404, "not-found");
        HttpResponse<String> h404 = head("/files/a/b.txt");
        assertEquals(404, h404.statusCode());
        assertEquals("", h404.body(), "no body for HEAD");
        assertProblem(delete("/files/a/b.txt", null), 404, "not-found");
        assertEquals(0, tempFiles().count());
        // unfenced writes never touch the sidecar tree
        assertFalse(Files.exists(sidecar("files/a/b.txt")));
    }

    @Test
    void emptyBodyAndNonAsciiNames() throws Exception {
        assertEquals(201, put("/files/empty", "", null).statusCode());
        assertEquals(0, Files.size(root.resolve("files/empty")));
        assertEquals("0", get("/files/empty").headers().firstValue("Content-Length").orElseThrow());

        assertEquals(201, put("/files/caf%C3%A9%20menu+1.txt", "x", null).statusCode());
        assertEquals("x", Files.readString(root.resolve("files/café menu+1.txt")));
    }

    @Test
    void fencedWritesKeepTheTokenBesideTheData() throws Exception {
        assertEquals(201, put("/files/doc", "v5", 5L).statusCode());
        assertEquals("token=5\ndeleted=false\n", Files.readString(sidecar("files/doc")));
        assertEquals(new WriteResult.Answered(201), server.results.poll(5, TimeUnit.SECONDS));

        assertEquals(204, put("/files/doc", "v5b", 5L).statusCode(), "equal token accepted by default");
        assertEquals(204, put("/files/doc", "v6", 6L).statusCode());
        assertEquals("token=6\ndeleted=false\n", Files.readString(sidecar("files/doc")));

        // The store was reset and admitted a lower token: the sidecar still says no.
        HttpResponse<String> stale = put("/files/doc", "zombie", 4L);
        assertEquals(409, stale.statusCode());
        assertEquals("stale highest=6", stale.body());
        assertEquals("v6", Files.readString(root.resolve("files/doc")));
        assertEquals("token=6\ndeleted=false\n", Files.readString(sidecar("files/doc")));
        assertEquals(0, tempFiles().count());
    }

    @Test
    void deleteLeavesATombstoneThatFencesLaterWrites() throws Exception {
        assertEquals(201, put("/files/doc", "v5", 5L).statusCode());
        assertEquals(204, delete("/files/doc", 7L).statusCode());
        assertFalse(Files.exists(root.resolve("files/doc")));
        assertEquals("token=7\ndeleted=true\n", Files.readString(sidecar("files/doc")));
        assertProblem(get("/files/doc"), 404, "not-found");

        // A zombie with token 6 cannot recreate it, nor delete it again.
        HttpResponse<String> zombie = put("/files/doc", "zombie", 6L);
        assertEquals(409, zombie.statusCode());
        assertEquals("stale highest=7", zombie.body());
        assertFalse(Files.exists(root.resolve("files/doc")));
        assertEquals(409, delete("/files/doc", 6L).statusCode());

        // The holder of token 7 (or later) can.
        assertEquals(201, put("/files/doc", "v7", 7L).statusCode());
        assertEquals("token=7\ndeleted=false\n", Files.readString(sidecar("files/doc")));

        // A fenced delete of a file that does not exist still leaves its tombstone.
        assertProblem(delete("/files/never", 3L), 404, "not-found");
        assertEquals("token=3\ndeleted=true\n", Files.readString(sidecar("files/never")));
        assertEquals(409, put("/files/never", "late", 2L).statusCode());
    }

    @Test
    void aTombstonedFileCanBecomeADirectory() throws Exception {
        assertEquals(201, put("/files/a", "file", 1L).statusCode());
        assertEquals(204, delete("/files/a", 2L).statusCode());
        assertEquals(201, put("/files/a/b", "nested", 3L).statusCode());
        assertEquals("token=2\ndeleted=true\n", Files.readString(sidecar("files/a")));
        assertEquals("token=3\ndeleted=false\n", Files.readString(sidecar("files/a/b")));
    }

    @Test
    void equalTokenRejectedWhenThePolicySaysSo() throws Exception {
        server.close();
        server = new FileTestServer(root, Policy.EqualToken.REJECT);
        assertEquals(201, put("/files/doc", "v5", 5L).statusCode());
        assertEquals("stale highest=5", put("/files/doc", "again", 5L).body());
        assertEquals(204, put("/files/doc", "v6", 6L).statusCode());
    }

    @Test
    void unfencedWritesIgnoreTheSidecar() throws Exception {
        assertEquals(201, put("/files/doc", "v9", 9L).statusCode());
        // observe/off mode or an allowed tokenless write: forwarded, sidecar neither read nor written
        assertEquals(204, put("/files/doc", "unfenced", null).statusCode());
        assertEquals("unfenced", Files.readString(root.resolve("files/doc")));
        assertEquals("token=9\ndeleted=false\n", Files.readString(sidecar("files/doc")));
        assertEquals(204, delete("/files/doc", null).statusCode());
        assertEquals("token=9\ndeleted=false\n", Files.readString(sidecar("files/doc")));
    }

    @Test
    void otherMethodsAre405WithAllow() throws Exception {
        for (String method : new String[]{"POST", "PATCH", "OPTIONS"}) {
            HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri("/files/x"))
                    .method(method, HttpRequest.BodyPublishers.ofString("x")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertProblem(r, 405, "method-not-allowed");
            assertEquals("GET, HEAD, PUT, DELETE", r.headers().firstValue("Allow").orElse(null));
        }
        // a fenced POST is refused the same way in admit(), before any fence question: write() never runs
        HttpResponse<String> r = client.send(HttpRequest.newBuilder(uri("/files/x")).header("Fencing-Token", "1")
                .POST(HttpRequest.BodyPublishers.ofString("x")).build(), HttpResponse.BodyHandlers.ofString());
        assertProblem(r, 405, "method-not-allowed");
        assertNull(server.results.poll(200, TimeUnit.MILLISECONDS), "write() ran for a refused method");
        assertFalse(Files.exists(root.resolve("files/x")));
    }

    @Test
    void directoriesAreNotFiles() throws Exception {
        assertEquals(201, put("/files/dir/child", "x", null).statusCode());
        assertProblem(put("/files/dir", "x", null), 409, "not-a-file");
        assertProblem(put("/files/dir", "x", 1L), 409, "not-a-file");
        assertProblem(delete("/files/dir", null), 409, "not-a-file");
        assertProblem(get("/files/dir"), 404, "not-found");
        assertProblem(put("/files/dir/child/grandchild", "x", null), 409, "not-a-file");
        assertTrue(Files.isDirectory(root.resolve("files/dir")));
        assertEquals(0, tempFiles().count());
    }

    @Test
    void interruptedUploadLeavesTheOldFile() throws Exception {
        assertEquals(201, put("/files/doc", "old content", 1L).statusCode());
        // The handler records a result after its answer is sent: take this one, or it may land after a clear().
        assertEquals(new WriteResult.Answered(201), server.results.poll(5, TimeUnit.SECONDS));

        Http.Response r = RawHttp.sendCutShort(server.port(), "/files/doc", 100_000, 1000, "Fencing-Token: 2");
        WriteResult result = server.results.poll(10, TimeUnit.SECONDS);
        // a refusal the pipeline answers and counts as one, never as an accepted write
        assertInstanceOf(WriteResult.Refused.class, result);
        assertEquals("urn:stockade:problem:incomplete-body", ((WriteResult.Refused) result).problem().type());
        // The client only half-closed: the answer still reaches it.
        assertEquals(400, r.status(), r.body());
        assertTrue(r.body().contains("\"type\":\"urn:stockade:problem:incomplete-body\""), r.body());
        assertEquals("old content", Files.readString(root.resolve("files/doc")));
        assertEquals("token=1\ndeleted=false\n", Files.readString(sidecar("files/doc")), "sidecar untouched");
        assertEquals(0, tempFiles().count());

        // unfenced too, and on a new file
        RawHttp.sendCutShort(server.port(), "/files/new", 100_000, 10);
        assertEquals(0, waitForNoTempFiles());
        assertFalse(Files.exists(root.resolve("files/new")));
        assertEquals("old content", get("/files/doc").body());
    }

    private long waitForNoTempFiles() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        long n;
        while ((n = tempFiles().count()) > 0 && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        return n;
    }

    @Test
    void storageErrorsAre503WithoutStackTraces() throws Exception {
        // A file where the sidecar tree needs a directory: every fenced write under /blocked fails on disk.
        Files.writeString(root.resolve(".stockade/tokens/blocked"), "in the way");
        HttpResponse<String> r = put("/blocked/doc", "x", 1L);
        assertProblem(r, 503, "storage-error");
        assertFalse(r.body().contains("Exception"), r.body());
        assertFalse(r.body().contains(root.toString()), r.body());
        assertFalse(r.body().contains("\tat "), r.body());
        assertFalse(Files.exists(root.resolve("blocked/doc")), "the data is not written without its token");
        assertEquals(0, tempFiles().count());

        // A corrupt sidecar fails closed.
        Path sc = sidecar("files/c");
        Files.createDirectories(sc.getParent());
        Files.writeString(sc, "token=banana\n");
        assertProblem(put("/files/c", "x", 1L), 503, "storage-error");
        assertFalse(Files.exists(root.resolve("files/c")));
    }

    @Test
    void etagIsStrongAndChangesWithEveryWrite() throws Exception {
        put("/files/e", "same", null);
        String first = get("/files/e").headers().firstValue("ETag").orElseThrow();
        assertEquals(first, get("/files/e").headers().firstValue("ETag").orElseThrow(), "stable between reads");
        put("/files/e", "same", null);
        String second = get("/files/e").headers().firstValue("ETag").orElseThrow();
        assertNotNull(second);
        assertFalse(second.startsWith("W/"));
        assertNotEquals(first, second, "a rewrite is a new file");
        String s = new String(Files.readAllBytes(root.resolve("files/e")), StandardCharsets.UTF_8);
        assertEquals("same", s);
    }

    @Test
    void writeResultOfAFencedPutIsAnswered() throws Exception {
        put("/files/w", "x", 3L);
        assertInstanceOf(WriteResult.Answered.class, server.results.poll(5, TimeUnit.SECONDS));
    }
}
