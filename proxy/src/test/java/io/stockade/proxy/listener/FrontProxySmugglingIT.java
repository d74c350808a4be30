package io.stockade.proxy.listener;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.testing.FrontProxy;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Request smuggling through a refused body, behind real front proxies: HAProxy with {@code http-reuse always} (server
 * connections shared between clients) and nginx with keep-alive connections to Stockade ({@code proxy_http_version
 * 1.1}, with and without request buffering), both from the Debian packages, in front of one in-process proxy. A stale
 * writer sends a refused write whose body hides a whole write, or the start of a request meant to swallow whatever the
 * front proxy sends next on the shared connection; then a second client writes with its own token and {@code
 * Authorization}. Whatever each front proxy makes of it, the hidden write never reaches the storage (the directory, the
 * recording upstream), no fence moves for it, and the second client's request is never stored as anyone's body. Skipped
 * when {@code haproxy} or {@code nginx} is not installed ({@code ./test.sh} installs both).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@RequiresTools({Tools.Tool.HAPROXY, Tools.Tool.NGINX})
class FrontProxySmugglingIT {
    static final String SECRET = "Bearer secret-of-the-next-client";

    @TempDir
    static Path dir;
    TestUpstream upstream;
    ProxyFixture proxy;
    FrontProxy haproxy;
    FrontProxy nginx;
    Path root;
    long nextToken = 10;

    @BeforeAll
    void start() throws Exception {
        root = dir.resolve("root");
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("j"), TestPolicies.memoryStore()
                .policy("files", "/files/{path...}", "files/{path}").file("${ROOT}")
                .policy("up", "/up/{path...}", "up/{path}").http("${UPSTREAM}", "settle: 1ms")
                .yaml(), Map.of("ROOT", root.toString(), "UPSTREAM", upstream.baseUri().toString()));
        haproxy = FrontProxy.haproxy(dir.resolve("haproxy"), proxy.server().port());
        nginx = FrontProxy.nginx(dir.resolve("nginx"), proxy.server().port());
    }

    @AfterAll
    void stop() {
        for (AutoCloseable c : new AutoCloseable[] {haproxy, nginx, proxy, upstream}) {
            try {
                if (c != null) {
                    c.close();
                }
            } catch (Exception e) {
                // keep closing the others
            }
        }
    }

    /** The front doors: name and port. */
    Stream<Object[]> fronts() {
        return Stream.of(
                new Object[] {"haproxy http-reuse always", haproxy.port(0)},
                new Object[] {"nginx keepalive, buffered", nginx.port(0)},
                new Object[] {"nginx keepalive, unbuffered", nginx.port(1)});
    }

    @BeforeEach
    void fresh() {
        nextToken += 10;
    }

    // ------------------------------------------------------------------------------------------------ tests

    /** A stale write whose body is a whole write with a higher token, with and without Expect: 100-continue. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("fronts")
    void aWriteHiddenInARefusedBodyNeverRuns(String front, int port) throws Exception {
        for (String base : List.of("/files/", "/up/")) {
            for (boolean expect : List.of(true, false)) {
                String id = tag(front) + (expect ? "-e" : "-n") + (base.equals("/up/") ? "-u" : "-f");
                String target = base + "target-" + id;
                String evil = base + "evil-" + id;
                long token = nextToken++;
                assertEquals(201, status(request(port, put(target, token, "good", ""))), front);

                String hidden = put(evil, 999_999, "EVIL", "");
                String stale = "PUT " + target + " HTTP/1.1\r\nHost: x\r\nFencing-Token: " + (token - 1) + "\r\n"
                        + (expect ? "Expect: 100-continue\r\n" : "") + "Content-Length: " + hidden.length()
                        + "\r\n\r\n" + hidden;
                Answer refused = request(port, stale);
                assertEquals(409, refused.status(), front + " " + id + ": " + refused.text());

                // more traffic over the front proxy's server connections, so that any left-over bytes would be read
                for (int i = 0; i < 3; i++) {
                    assertEquals(200, status(request(port, "GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n")));
                }
                assertNothingOf(evil, front + " " + id);
                assertEquals(token, highest(scopeOf(target)), "the refusal moved the fence");
            }
        }
    }

    /**
     * A stale write whose body is only the start of a request with a large Content-Length: on a shared server
     * connection, the next client's request would become that request's body. The next client here writes with its
     * own token and an Authorization header right after.
     */
    @ParameterizedTest(name = "{0}")
    @MethodSource("fronts")
    void aRefusedBodyThatIsARequestPrefixCannotTakeTheNextClientsRequest(String front, int port) throws Exception {
        for (boolean expect : List.of(true, false)) {
            String id = tag(front) + (expect ? "-e" : "-n");
            String target = "/files/target-" + id;
            String stolen = "/files/stolen-" + id;
            long token = nextToken++;
            assertEquals(201, status(request(port, put(target, token, "good", ""))));

            String prefix = "PUT " + stolen + " HTTP/1.1\r\nHost: x\r\nFencing-Token: 999999\r\nContent-Length: 400"
                    + "\r\n\r\n";
            Answer refused = request(port, "PUT " + target + " HTTP/1.1\r\nHost: x\r\nFencing-Token: " + (token - 1)
                    + "\r\n" + (expect ? "Expect: 100-continue\r\n" : "") + "Content-Length: " + prefix.length()
                    + "\r\n\r\n" + prefix);
            assertEquals(409, refused.status(), front + " " + id + ": " + refused.text());

            // the next client, through the same front proxy
            String victim = "/files/victim-" + id;
            Answer next = request(port, put(victim, 5, "mine", "Authorization: " + SECRET + "\r\n"));
            assertEquals(201, next.status(), front + " " + id + ": " + next.text());
            assertEquals("mine", Files.readString(file(victim)));

            assertNothingOf(stolen, front + " " + id);
            assertFalse(everythingStored().contains(SECRET),
                    front + " " + id + ": the next client's request was stored");
        }
    }

    /** nginx's default proxy_http_version 1.0 (docs/replicas.md once left it out): a clear 505, nothing written. */
    @org.junit.jupiter.api.Test
    void nginxSpeakingHttp10GetsAClear505() throws Exception {
        Answer a = request(nginx.port(2), put("/files/via-http10", 1, "x", ""));
        assertEquals(505, a.status(), a.text());
        assertTrue(a.text().contains("http-version-not-supported"), a.text());
        assertFalse(Files.exists(file("/files/via-http10")));
        assertEquals(-1, highest("files/via-http10"));
    }

    /** Chunk extensions and trailer fields through each front proxy: whatever it forwards, the write lands once. */
    @ParameterizedTest(name = "{0}")
    @MethodSource("fronts")
    void aValidChunkedBodyWithExtensionsAndTrailersIsWritten(String front, int port) throws Exception {
        String path = "/files/chunked-" + tag(front);
        Answer a = request(port, "PUT " + path + " HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\n"
                + "Transfer-Encoding: chunked\r\n"
                + "\r\n5;a=b\r\nhello\r\n6;q=\"x\"\r\n world\r\n0\r\nX-Checksum: abc\r\n\r\n");
        assertEquals(201, a.status(), front + ": " + a.text());
        assertEquals("hello world", Files.readString(file(path)));
    }

    // ---------------------------------------------------------------------------------------------- helpers

    static String tag(String front) {
        return front.replaceAll("[^a-z]+", "");
    }

    static String put(String path, long token, String body, String extraHeaders) {
        return "PUT " + path + " HTTP/1.1\r\nHost: x\r\nFencing-Token: " + token + "\r\n" + extraHeaders
                + "Content-Length: " + body.length() + "\r\n\r\n" + body;
    }

    Path file(String path) {
        return root.resolve(path.substring(1));
    }

    static String scopeOf(String path) {
        return path.substring(1);
    }

    long highest(String scope) throws Exception {
        return proxy.server().store().get(scope).map(FenceState::token).orElse(-1L);
    }

    /** Nothing of a hidden write anywhere: no file, no upstream request, no fence. */
    void assertNothingOf(String path, String what) throws Exception {
        assertFalse(Files.exists(file(path)), what + ": the hidden write ran");
        assertTrue(upstream.received().stream().noneMatch(r -> r.path().equals(path)),
                what + ": the hidden write reached the upstream");
        assertEquals(-1, highest(scopeOf(path)), what + ": the hidden write's token raised a fence");
    }

    String everythingStored() throws IOException {
        StringBuilder all = new StringBuilder();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path p : files.filter(Files::isRegularFile).toList()) {
                all.append(Files.readString(p, StandardCharsets.ISO_8859_1)).append('\n');
            }
        }
        upstream.received().forEach(r -> all.append(r.headers()).append('\n'));
        upstream.applied().forEach(w -> all.append(w.bodyText()).append('\n'));
        return all.toString();
    }

    static int status(Answer a) {
        return a.status();
    }

    /** The final answer to one request on a fresh client connection (interim 1xx answers skipped). */
    record Answer(int status, String text) {
    }

    static Answer request(int port, String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(10_000);
            s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            InputStream in = s.getInputStream();
            while (true) {
                String head = readHead(in);
                int status = Integer.parseInt(head.substring(9, 12));
                String lower = head.toLowerCase(java.util.Locale.ROOT);
                if (status / 100 == 1) {
                    continue;
                }
                String body;
                int cl = lower.indexOf("\r\ncontent-length:");
                if (cl >= 0) {
                    int eol = lower.indexOf("\r\n", cl + 2);
                    int n = Integer.parseInt(lower.substring(cl + 17, eol < 0 ? lower.length() : eol).trim());
                    body = new String(in.readNBytes(n), StandardCharsets.ISO_8859_1);
                } else if (lower.contains("transfer-encoding: chunked")) {
                    body = readChunked(in);
                } else {
                    body = new String(in.readAllBytes(), StandardCharsets.ISO_8859_1);
                }
                return new Answer(status, head + body);
            }
        }
    }

    private static String readHead(InputStream in) throws IOException {
        ByteArrayOutputStream b = new ByteArrayOutputStream();
        int c;
        while ((c = in.read()) >= 0) {
            b.write(c);
            byte[] a = b.toByteArray();
            int n = a.length;
            if (n >= 4 && a[n - 4] == '\r' && a[n - 3] == '\n' && a[n - 2] == '\r' && a[n - 1] == '\n') {
                return b.toString(StandardCharsets.ISO_8859_1);
            }
        }
        throw new IOException("connection closed before an answer: '" + b.toString(StandardCharsets.ISO_8859_1) + "'");
    }

    private static String readChunked(InputStream in) throws IOException {
        StringBuilder body = new StringBuilder();
        while (true) {
            String line = readLine(in);
            int n = Integer.parseInt(line.split(";")[0].trim(), 16);
            if (n == 0) {
                while (!readLine(in).isEmpty()) {
                    // trailers
                }
                return body.toString();
            }
            body.append(new String(in.readNBytes(n), StandardCharsets.ISO_8859_1));
            readLine(in);
        }
    }

    private static String readLine(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0 && c != '\n') {
            if (c != '\r') {
                b.append((char) c);
            }
        }
        return b.toString();
    }
}
