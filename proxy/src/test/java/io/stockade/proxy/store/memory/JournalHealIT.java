package io.stockade.proxy.store.memory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.StockadeServer;
import io.stockade.proxy.TestPolicies;
import io.stockade.testing.Http;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.ScratchFilesystem;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 46, item 4, on real filesystems the test makes (as root): the journal on a full {@code tmpfs} fails, the
 * replica refuses writes (503) and goes unready, and past {@code heal-within} its liveness goes DOWN; once space is
 * freed the journal heals by itself, without a restart, and every acknowledged fence holds. On main the replica
 * stayed failed after the space was freed (503 for every write, liveness 200) until someone restarted it. On an
 * {@code ext4} the kernel turns read-only after an error ({@code errors=remount-ro}), the journal cannot heal in
 * place: liveness goes DOWN, and the restart it asks for (after the filesystem is checked and mounted again) finds
 * every acknowledged fence.
 */
@RequiresTools(Tools.Tool.SCRATCH_FILESYSTEM)
class JournalHealIT {
    private static final String POLICY = TestPolicies.on("""
            store:
              type: memory
              journal: ${JOURNAL}
              heal-within: 1s
            """).policy("files", "/files/{name}", "files/{name}").file("${ROOT}").yaml();

    @TempDir
    Path dir;

    @Test
    void aFullDiskRefusesWritesThenTheJournalHealsWithoutARestartKeepingEveryAcknowledgedFence() throws Exception {
        Path root = Files.createDirectories(dir.resolve("data"));
        Map<String, Long> acked = new LinkedHashMap<>();
        try (ScratchFilesystem fs = ScratchFilesystem.tmpfs(dir.resolve("fs"), 512 * 1024)) {
            Path journal = fs.path().resolve("journal");
            try (ProxyFixture proxy = ProxyFixture.start(journal, POLICY, Map.of("ROOT", root.toString()))) {
                for (int i = 0; i < 20; i++) {
                    put(proxy, "k" + i, i + 1, acked);
                }
                fs.fill();
                // Writes of new scopes each need a journal record: the first that needs a block of its own fails.
                int refusedAt = -1;
                for (int i = 0; i < 5_000 && refusedAt < 0; i++) {
                    Http.Response r = put(proxy, "n" + i, 1, acked);
                    if (r.status() == 503) {
                        assertTrue(r.body().contains("store-unavailable"), r.body());
                        assertFalse(Files.exists(root.resolve("files/n" + i)),
                                "a write answered 503 reached the storage");
                        refusedAt = i;
                    }
                }
                assertTrue(refusedAt >= 0, "the journal never met the full disk");
                proxy.awaitReady(503);
                Http.Response live = awaitStatus(proxy, StockadeServer.LIVE, 503);
                assertTrue(live.body().contains("has not healed within heal-within"), live.body());
                assertTrue(live.body().contains("No space left on device"), live.body());
                assertEquals(503, Http.put(proxy.uri("/files/k0"), "x", Map.of("Fencing-Token", "99")).status());
                assertEquals("body of k0 at 1", Files.readString(root.resolve("files/k0")));

                fs.free();
                Http.Response resumed = awaitWrite(proxy, "after", 1);
                assertEquals(201, resumed.status(), resumed.body());
                acked.put("after", 1L);
                assertEquals(200, awaitStatus(proxy, StockadeServer.LIVE, 200).status());
                proxy.awaitReady(200);
                assertTrue(Http.get(proxy.uri("/metrics")).body().contains("stockade_store_journal_heals 1.0"));
                assertEveryAcknowledgedFenceHolds(proxy, root, acked);
            }
            // and after a restart, from the healed journal
            try (ProxyFixture proxy = ProxyFixture.start(journal, POLICY, Map.of("ROOT", root.toString()))) {
                assertEveryAcknowledgedFenceHolds(proxy, root, acked);
            }
        }
    }

    @Test
    void aFilesystemTurnedReadOnlyTakesLivenessDownAndTheRestartFindsEveryAcknowledgedFence() throws Exception {
        Path root = Files.createDirectories(dir.resolve("data"));
        Map<String, Long> acked = new LinkedHashMap<>();
        try (ScratchFilesystem fs = ScratchFilesystem.ext4(dir.resolve("ext4.img"), dir.resolve("fs"), 16 << 20)) {
            Path journal = fs.path().resolve("journal");
            try (ProxyFixture proxy = ProxyFixture.start(journal, POLICY, Map.of("ROOT", root.toString()))) {
                for (int i = 0; i < 20; i++) {
                    put(proxy, "k" + i, i + 1, acked);
                }
                fs.failReadOnly();
                Http.Response refused = put(proxy, "n0", 1, acked);
                assertEquals(503, refused.status(), refused.body());
                assertFalse(Files.exists(root.resolve("files/n0")), "a write answered 503 reached the storage");
                Http.Response live = awaitStatus(proxy, StockadeServer.LIVE, 503);
                assertTrue(live.body().contains("Read-only file system"), live.body());
                proxy.awaitReady(503);
            }
            fs.remount(); // what the platform's restart of the replica comes with: the filesystem checked, mounted
            try (ProxyFixture proxy = ProxyFixture.start(journal, POLICY, Map.of("ROOT", root.toString()))) {
                assertEquals(200, Http.get(proxy.uri(StockadeServer.LIVE)).status());
                assertEveryAcknowledgedFenceHolds(proxy, root, acked);
                assertEquals(201, put(proxy, "n0", 1, acked).status());
            }
        }
    }

    /** A PUT of {@code body of <name> at <token>}, noted in {@code acked} when acknowledged (2xx). */
    private static Http.Response put(ProxyFixture proxy, String name, long token, Map<String, Long> acked)
            throws Exception {
        Http.Response r = Http.put(proxy.uri("/files/" + name), "body of " + name + " at " + token,
                Map.of("Fencing-Token", Long.toString(token)));
        if (r.status() / 100 == 2) {
            acked.put(name, token);
        }
        return r;
    }

    /** Each acknowledged scope refuses the token below its own (409), and its file is the acknowledged write's. */
    private static void assertEveryAcknowledgedFenceHolds(ProxyFixture proxy, Path root, Map<String, Long> acked)
            throws Exception {
        for (Map.Entry<String, Long> e : acked.entrySet()) {
            long token = e.getValue();
            if (token == 0) {
                continue;
            }
            Http.Response stale = Http.put(proxy.uri("/files/" + e.getKey()), "stale",
                    Map.of("Fencing-Token", Long.toString(token - 1)));
            assertEquals(409, stale.status(), e.getKey() + ": " + stale.body());
            assertEquals("body of " + e.getKey() + " at " + token,
                    Files.readString(root.resolve("files/" + e.getKey())));
        }
    }

    private static Http.Response awaitStatus(ProxyFixture proxy, String path, int status) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        Http.Response r = Http.get(proxy.uri(path));
        while (r.status() != status && System.nanoTime() < deadline) {
            Thread.sleep(50);
            r = Http.get(proxy.uri(path));
        }
        assertEquals(status, r.status(), path + ": " + r.body());
        return r;
    }

    /** PUTs until the write is taken (503 while the journal heals), within 20 s. */
    private static Http.Response awaitWrite(ProxyFixture proxy, String name, long token) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        Http.Response r;
        do {
            r = Http.put(proxy.uri("/files/" + name), "body of " + name + " at " + token,
                    Map.of("Fencing-Token", Long.toString(token)));
            if (r.status() != 503) {
                return r;
            }
            Thread.sleep(50);
        } while (System.nanoTime() < deadline);
        return r;
    }
}
