package io.stockade.proxy.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.stockade.testing.ChildProxy;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class ChildProxyTest {

    private static final String FAKE = FakeProxyMain.class.getName();

    @TempDir
    Path dir;

    private Path config(String mode) throws Exception {
        return Files.writeString(dir.resolve(mode + ".conf"), mode + "\n");
    }

    @Test
    void startsWaitsForReadinessAndStopsGracefully() throws Exception {
        ChildProxy child = ChildProxy.start(FAKE, config("serve"), List.of("-Dstockade.test=yes", "-Xmx64m"));
        try (child) {
            assertTrue(child.isAlive());
            assertTrue(child.pid() > 0);
            assertEquals("127.0.0.1", child.baseUri().getHost());
            Http.Response r = Http.get(child.baseUri().resolve("/anything"));
            assertEquals(200, r.status());
            assertEquals("fake " + child.pid(), r.body());
            assertTrue(child.log().contains("stockade.test=yes"), child.log());
        }
        assertFalse(child.isAlive());
        assertTrue(child.log().contains("shutdown hook ran"), "close() sends SIGTERM first: " + child.log());
        child.close(); // idempotent
    }

    @Test
    void kill9SkipsShutdownHooks() throws Exception {
        try (ChildProxy child = ChildProxy.start(FAKE, config("serve"), List.of())) {
            child.kill9();
            assertFalse(child.isAlive());
            assertEquals(137, child.process().exitValue());
            assertFalse(child.log().contains("shutdown hook ran"), child.log());
        }
    }

    @Test
    void earlyExitThrowsWithTheLogTail() throws Exception {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ChildProxy.start(FAKE, config("crash"), List.of()));
        assertTrue(e.getMessage().contains("exited with 3"), e.getMessage());
        assertTrue(e.getMessage().contains("fake: config is broken"), e.getMessage());
        assertTrue(e.getMessage().contains("fake: line 60"), e.getMessage());
        assertFalse(e.getMessage().contains("fake: line 10\n"), "only the last 50 lines: " + e.getMessage());
    }

    @Test
    void notReadyInTimeThrowsAndKillsTheChild() throws Exception {
        IllegalStateException e = assertThrows(IllegalStateException.class,
                () -> ChildProxy.start(FAKE, config("silent"), List.of(), Duration.ofSeconds(2)));
        assertTrue(e.getMessage().contains("not ready within"), e.getMessage());
        assertTrue(ProcessHandle.current().children().noneMatch(p ->
                p.info().commandLine().orElse("").contains("silent.conf")), "the child was killed");
    }
}
