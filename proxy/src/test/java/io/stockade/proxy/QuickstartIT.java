package io.stockade.proxy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;

import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The README's curl session, against the README's own policy file (its data directory moved to a temp dir). */
class QuickstartIT {
    @TempDir
    Path dir;

    @Test
    void theReadmeSessionBehavesAsDocumented() throws Exception {
        String yaml = Files.readString(Path.of("../policies/examples/quickstart.yaml"))
                .replace("./stockade-data", dir.toString());
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("unused"), yaml, Map.of())) {
            var uri = proxy.uri("/files/report.txt");
            assertEquals(201, Http.put(uri, "v5", Map.of("Fencing-Token", "5")).status());

            Http.Response stale = Http.put(uri, "v4", Map.of("Fencing-Token", "4"));
            assertEquals(409, stale.status());
            assertTrue(stale.body().contains("\"scope\":\"files/report.txt\""), stale.body());
            assertTrue(stale.body().contains("\"token\":4") && stale.body().contains("\"highest\":5"), stale.body());

            assertEquals(428, Http.put(uri, "v?", Map.of()).status());
            assertEquals(400, Http.put(uri, "v?", Map.of("Fencing-Token", "5x")).status());
            assertEquals("v5", Http.get(uri).body());
            assertTrue(Files.exists(dir.resolve("journal")), "the journal lives where the example says");
        }
    }
}
