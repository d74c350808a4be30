package io.stockade.proxy;

import io.stockade.proxy.testing.Http;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Request smuggling: framings a front proxy and Stockade could read differently are refused, so a write can never
 * be hidden inside another request's body and slip past the fence.
 */
class SmugglingIT {
    @TempDir
    Path dir;
    ProxyFixture proxy;
    Path root;

    @BeforeEach
    void start() throws Exception {
        root = dir.resolve("root");
        proxy = ProxyFixture.start(dir.resolve("j"), """
                store:
                  type: memory
                  journal: ${JOURNAL}
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    backend:
                      type: file
                      root: ${ROOT}
                """, Map.of("ROOT", root.toString()));
    }

    @AfterEach
    void stop() {
        proxy.close();
    }

    Http.Response raw(String request) throws Exception {
        return RawHttp.send(proxy.server().port(), request);
    }

    boolean written(String name) {
        return Files.exists(root.resolve("files").resolve(name));
    }

    @Test
    void contentLengthWithTransferEncodingIsRefused() throws Exception {
        Http.Response r = raw("PUT /files/a HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\nContent-Length: 3\r\n"
                + "Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertEquals(400, r.status());
        assertFalse(written("a"));
    }

    @Test
    void twoContentLengthsAreRefused() throws Exception {
        Http.Response r = raw("PUT /files/b HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\nContent-Length: 3\r\n"
                + "Content-Length: 5\r\nConnection: close\r\n\r\nabcde");
        assertEquals(400, r.status());
        assertFalse(written("b"));
    }

    @Test
    void unknownTransferCodingsAreRefused() throws Exception {
        Http.Response r = raw("PUT /files/c HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\n"
                + "Transfer-Encoding: gzip, chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertTrue(r.status() == 400 || r.status() == 501, "status " + r.status());
        assertFalse(written("c"));
    }

    @Test
    void whitespaceBeforeTheColonIsRefused() throws Exception {
        Http.Response r = raw("PUT /files/d HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\n"
                + "Transfer-Encoding : chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
        assertEquals(400, r.status());
        assertFalse(written("d"));
    }

    @Test
    void aRequestHiddenAfterABodyIsFencedOnItsOwn() throws Exception {
        // The second request follows the first's declared body on the same connection: it must be read as a
        // request of its own and fenced as one (here: no token, so 428), never written as part of the first.
        String answers = readAll("PUT /files/e HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\nContent-Length: 3\r\n\r\nabc"
                + "PUT /files/f HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nz");
        assertTrue(answers.startsWith("HTTP/1.1 201"), answers);
        assertTrue(answers.contains("HTTP/1.1 428"), "the second request must get its own answer: " + answers);
        assertEquals("abc", Files.readString(root.resolve("files/e")));
        assertFalse(written("f"), "the smuggled tokenless write must not land");
    }

    /** Sends bytes and reads every answer until the server closes the connection. */
    private String readAll(String request) throws Exception {
        try (java.net.Socket socket = new java.net.Socket("127.0.0.1", proxy.server().port())) {
            socket.setSoTimeout(10_000);
            socket.getOutputStream().write(request.getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
            socket.getOutputStream().flush();
            socket.shutdownOutput(); // Helidon closes a 'Connection: close' socket once the client stops sending
            return new String(socket.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.ISO_8859_1);
        }
    }
}
