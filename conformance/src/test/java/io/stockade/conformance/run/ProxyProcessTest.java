package io.stockade.conformance.run;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** What a launched proxy prints at start, read as the suite reads it: IPv6 literals, wildcards, a management line. */
class ProxyProcessTest {
    @TempDir
    Path dir;

    private ProxyProcess launch(String printed) {
        return new ProxyProcess(List.of("sh", "-c", "printf '" + printed + "'; exec sleep 30"), dir.resolve("log"));
    }

    @Test
    void anIpv6ListenerAndAManagementListenerAreRead() {
        try (ProxyProcess p = launch("Stockade management (/metrics, /admin, /health) on http://[::1]:9091\\n"
                + "Stockade listening on http://[::1]:8081\\n")) {
            assertEquals(URI.create("http://[::1]:8081"), p.start(Duration.ofSeconds(10)));
            assertEquals(URI.create("http://[::1]:9091"), p.management());
        }
    }

    @Test
    void wildcardsAreReachedOnLoopbackAndNoManagementLineMeansNone() {
        try (ProxyProcess p = launch("Stockade listening on http://0.0.0.0:8082\\n")) {
            assertEquals(URI.create("http://127.0.0.1:8082"), p.start(Duration.ofSeconds(10)));
            assertNull(p.management());
        }
        try (ProxyProcess p = launch("Stockade listening on http://[::]:8083\\n")) {
            assertEquals(URI.create("http://[::1]:8083"), p.start(Duration.ofSeconds(10)));
        }
    }

    @Test
    void aProxyThatExitsBeforeItIsReadyIsReportedWithTheEndOfItsLog() {
        StringBuilder lines = new StringBuilder();
        for (int i = 1; i <= 40; i++) {
            lines.append("line ").append(i).append("\\n");
        }
        try (ProxyProcess p = new ProxyProcess(List.of("sh", "-c", "printf '" + lines
                + "policy p: cannot prepare the fence table\\n'; exit 1"), dir.resolve("log"))) {
            IllegalStateException e = assertThrows(IllegalStateException.class, () -> p.start(Duration.ofSeconds(10)));
            assertTrue(e.getMessage().startsWith("the proxy exited with 1 before it was ready"), e.getMessage());
            assertTrue(e.getMessage().endsWith("line 40\npolicy p: cannot prepare the fence table"), e.getMessage());
            assertTrue(e.getMessage().contains("line 12\n"), e.getMessage());
            assertFalse(e.getMessage().contains("line 11\n"), "30 lines, not the whole log: " + e.getMessage());
        }
    }
}
