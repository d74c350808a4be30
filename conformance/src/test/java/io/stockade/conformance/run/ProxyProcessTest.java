package io.stockade.conformance.run;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

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
}
