package io.stockade.proxy.backend.file;

import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.stream.Stream;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The file backend's edges from the request-target review: paths the file system cannot take, and what a crash leaves
 * behind.
 */
class FileBackendEdgesIT {
    @TempDir
    Path dir;

    ProxyFixture start(Path root) throws Exception {
        return ProxyFixture.start(dir.resolve("j"), TestPolicies.memoryStore()
                .policy("files", "/files/{path...}", "files/{path}").file("${ROOT}").yaml(),
                Map.of("ROOT", root.toString()));
    }

    /** Formerly: 503 storage-error with the 4 KB path echoed and a stack trace logged, after raising the fence. */
    @Test
    void aPathTooLongForTheFileSystemIs414BeforeTheFence() throws Exception {
        Path root = dir.resolve("root");
        try (ProxyFixture proxy = start(root)) {
            String deep = "/files" + "/a".repeat(2000);
            Http.Response r = RawHttp.send(proxy.server().port(), "PUT " + deep + " HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token: 7\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
            assertEquals(414, r.status(), r.body());
            assertTrue(r.body().contains("path-too-long"), r.body());
            assertFalse(r.body().contains("/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a"),
                    "the answer does not echo the path: " + r.body().length() + " bytes");
            assertTrue(r.headers().firstValue("Retry-After").isEmpty(), "nothing to retry");
            assertTrue(FenceStoresView.isEmpty(proxy), "no scope was fenced");
            try (Stream<Path> files = Files.walk(root)) {
                assertEquals(0, files.filter(Files::isRegularFile)
                        .filter(p -> !root.relativize(p).toString().startsWith(".stockade")).count());
            }
            // a long path that fits still works (few segments: every new directory is fsynced)
            String fits = "/files" + ("/" + "b".repeat(200)).repeat(17);
            assertEquals(201, RawHttp.send(proxy.server().port(), "PUT " + fits + " HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token: 7\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx").status());
        }
    }

    /** Formerly: temp files of uploads cut short by kill -9 stayed for ever. */
    @Test
    void tempFilesACrashLeftBehindAreSweptAtStart() throws Exception {
        Path root = dir.resolve("root");
        Path data = Files.createDirectories(root.resolve("files/x"));
        Path sidecars = Files.createDirectories(root.resolve(".stockade/tokens/files/x/y"));
        Path leftover = Files.writeString(data.resolve(".stockade-tmp-0f1e2d"), "half an upload");
        Path sidecarLeftover = Files.writeString(sidecars.resolve(".stockade-tmp-3c4b5a"), "7");
        Path kept = Files.writeString(data.resolve("y"), "data");
        FileTime earlier = FileTime.from(Instant.now().minusSeconds(60));
        Files.setLastModifiedTime(leftover, earlier);
        Files.setLastModifiedTime(sidecarLeftover, earlier);
        try (ProxyFixture proxy = start(root)) {
            long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
            while ((Files.exists(leftover) || Files.exists(sidecarLeftover)) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            assertFalse(Files.exists(leftover), "a temp file in the data tree was not swept");
            assertFalse(Files.exists(sidecarLeftover), "a temp file in the sidecar tree was not swept");
            assertEquals("data", Files.readString(kept));
            assertEquals("data", Http.get(proxy.uri("/files/x/y")).body());
        }
    }

    /** A view of the memory store's scopes. */
    static final class FenceStoresView {
        private FenceStoresView() {
        }

        static boolean isEmpty(ProxyFixture proxy) throws Exception {
            return io.stockade.proxy.store.FenceStores.admin(proxy.server().store()).orElseThrow()
                    .scopes("", 10).isEmpty();
        }
    }
}
