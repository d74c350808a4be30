package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import io.stockade.proxy.testing.RawHttp;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every path trick, sent over a raw socket so the server receives it as written, is refused with 400
 * {@code bad-path} for every method, and nothing appears outside the root (nor in the reserved tree).
 */
class FilePathSafetyTest {
    @TempDir
    Path tmp;
    Path root;
    Path outside;
    FileTestServer server;

    @BeforeEach
    void start() throws IOException {
        root = tmp.resolve("root");
        outside = tmp.resolve("outside");
        Files.createDirectories(outside);
        Files.writeString(outside.resolve("secret"), "secret");
        server = new FileTestServer(root);
        Files.createDirectories(root.resolve("files"));
    }

    @AfterEach
    void stop() throws IOException {
        server.close();
    }

    private List<String> snapshot() throws IOException {
        try (Stream<Path> s = Files.walk(tmp)) {
            return s.filter(p -> !p.startsWith(root.resolve("files")) || p.equals(root.resolve("files")))
                    .map(p -> tmp.relativize(p).toString()).sorted().toList();
        }
    }

    private void assertRefused(String rawPath, String why) throws IOException {
        List<String> before = snapshot();
        String secret = Files.readString(outside.resolve("secret"));
        for (String method : new String[]{"PUT", "GET", "HEAD", "DELETE"}) {
            for (boolean fenced : new boolean[]{false, true}) {
                String[] raw = fenced ? new String[]{"Fencing-Token: 9"} : new String[0];
                Http.Response r = RawHttp.send(server.port(), method, rawPath,
                        method.equals("PUT") ? "pwned" : null, raw);
                String what = method + (fenced ? " (fenced) " : " ") + rawPath;
                assertEquals(400, r.status(), what + ": " + r.body());
                if (why != null && !method.equals("HEAD")) {
                    assertTrue(r.body().contains("\"type\":\"urn:stockade:problem:bad-path\""), what + ": " + r.body());
                    assertTrue(r.body().contains(why), what + " should say '" + why + "': " + r.body());
                }
            }
        }
        assertEquals(before, snapshot(), "nothing written outside the data tree of " + rawPath);
        assertEquals(secret, Files.readString(outside.resolve("secret")));
        try (Stream<Path> s = Files.walk(root.resolve("files"))) {
            assertTrue(s.noneMatch(p -> Files.isRegularFile(p, LinkOption.NOFOLLOW_LINKS)
                            && !p.toString().contains("keep")),
                    "no file written under /files by " + rawPath);
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files/../x", "/files/../../outside/secret", "/files/a/../../x", "/../outside/secret"})
    void dotDotSegments(String path) throws IOException {
        assertRefused(path, "is '..'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files/%2e%2e/x", "/files/%2E%2E/x", "/files/.%2e/x",
            "/files/%2e%2e/%2e%2e/outside/secret"})
    void encodedDotDotSegments(String path) throws IOException {
        assertRefused(path, "is '..'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files/./x", "/files/%2e/x", "/./files/x"})
    void dotSegments(String path) throws IOException {
        assertRefused(path, "is '.'");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files//x", "/files/x/", "//files/x"})
    void emptySegments(String path) throws IOException {
        assertRefused(path, "empty");
    }

    @Test
    void rootItself() throws IOException {
        assertRefused("/", "names no file");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files/a%2Fb", "/files/a%2fb", "/files/..%2F..%2Foutside%2Fsecret"})
    void encodedSlash(String path) throws IOException {
        assertRefused(path, "encoded slash");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files/a%5Cb", "/files/a%5cb", "/files/..%5C..%5Coutside%5Csecret"})
    void encodedBackslash(String path) throws IOException {
        assertRefused(path, "encoded backslash");
    }

    @Test
    void nul() throws IOException {
        assertRefused("/files/a%00b", "control character (U+0000)");
    }

    @ParameterizedTest
    @ValueSource(strings = {"/files/a%zzb", "/files/a%2", "/files/a%ff"})
    void malformedEncoding(String path) throws IOException {
        // Helidon itself refuses a malformed escape before routing (400 without a body); the backend's own
        // decoder refuses it too if it ever gets that far.
        assertRefused(path, null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"/.stockade/tokens/x", "/.stockade/tokens/files/x/.stockade-token", "/%2estockade/tokens/x",
            "/.STOCKADE/tokens/x", "/files/.stockade/x", "/files/.stockade-tmp-1234", "/.stockade"})
    void reservedNames(String path) throws IOException {
        assertRefused(path, "reserved");
    }

    @Test
    void overLongSegment() throws IOException {
        assertRefused("/files/" + "a".repeat(256), "longer than 255 bytes");
    }

    @Test
    void symlinkInsideRootPointingOutside() throws IOException {
        Files.createSymbolicLink(root.resolve("files/link"), outside);
        assertRefused("/files/link/secret", "outside the root");
        assertRefused("/files/link/new", "outside the root");
        assertRefused("/files/link/deeper/new", "outside the root");
        assertFalse(Files.exists(outside.resolve("new")));
        assertFalse(Files.exists(outside.resolve("deeper")));
    }

    @Test
    void symlinkAtTheTarget() throws IOException {
        Files.createSymbolicLink(root.resolve("files/t"), outside.resolve("secret"));
        assertRefused("/files/t", "target is a symbolic link");
        assertTrue(Files.isSymbolicLink(root.resolve("files/t")), "not replaced, not deleted");
        // a link to a file inside the root is refused at the target too
        Files.writeString(root.resolve("files/keep"), "keep");
        Files.createSymbolicLink(root.resolve("files/t2"), root.resolve("files/keep"));
        assertRefused("/files/t2", "target is a symbolic link");
        assertEquals("keep", Files.readString(root.resolve("files/keep")));
    }

    @Test
    void danglingSymlinkOnThePath() throws IOException {
        Files.createSymbolicLink(root.resolve("files/gone"), tmp.resolve("nowhere"));
        assertRefused("/files/gone/x", "dangling symbolic link");
        assertFalse(Files.exists(tmp.resolve("nowhere")));
    }

    @Test
    void symlinkIntoTheReservedTree() throws IOException {
        Files.createSymbolicLink(root.resolve("files/sneaky"), root.resolve(".stockade/tokens"));
        assertRefused("/files/sneaky/x", "reserved");
    }

    @Test
    void symlinkStayingInsideTheRootIsOneFileWithOneSidecar() throws IOException {
        Files.createSymbolicLink(root.resolve("alias"), root.resolve("files"));
        Http.Response r = RawHttp.send(server.port(), "PUT", "/alias/doc", "via alias", "Fencing-Token: 5");
        assertEquals(201, r.status(), r.body());
        assertEquals("via alias", Files.readString(root.resolve("files/doc")));
        assertTrue(Files.exists(root.resolve(".stockade/tokens/files/doc/.stockade-token")));
        // the other name sees the same fence
        Http.Response stale = RawHttp.send(server.port(), "PUT", "/files/doc", "zombie", "Fencing-Token: 4");
        assertEquals(409, stale.status(), stale.body());
        assertEquals("via alias", Files.readString(root.resolve("files/doc")));
    }

    @Test
    void encodedButHarmlessNamesAreFine() throws IOException {
        Http.Response r = RawHttp.send(server.port(), "PUT", "/files/..x/%2e..y/a.b", "ok");
        assertEquals(201, r.status(), r.body());
        assertEquals("ok", Files.readString(root.resolve("files/..x/...y/a.b")));
    }
}
