package io.stockade.proxy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.conformance.check.History;
import io.stockade.conformance.check.HistoryChecker;
import io.stockade.proxy.testing.Racers;
import io.stockade.proxy.testing.TestUpstream;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Sixteen writers race on one scope with interleaved tokens: most write with the current lease's token, some
 * take the lease over (a higher token), some are zombies (a token below the current one). The history of what
 * each writer was told is checked against what the storage holds.
 */
class RacingWritersIT {
    static final int WRITERS = 16;
    static final int OPS_PER_WRITER = 25;

    @TempDir
    Path dir;

    @Test
    void noStaleWriteLandsThroughTheHttpBackend() throws Exception {
        String yaml = TestPolicies.docsOverHttp("settle: 50ms");
        try (TestUpstream upstream = TestUpstream.start();
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml,
                     Map.of("UPSTREAM", upstream.baseUri().toString()))) {
            Thread.sleep(100);
            History history = race(proxy.uri("/docs/race"));
            String last = upstream.contentText("/docs/race").orElseThrow();
            HistoryChecker.Result result = HistoryChecker.check(history, Map.of("docs/race", last),
                    Map.of("docs/race", upstream.appliedBodies("/docs/race")));
            assertTrue(result.ok(), result.toString());
        }
    }

    @Test
    void noStaleWriteLandsThroughTheFileBackend() throws Exception {
        String yaml = TestPolicies.memoryStore()
                .policy("files", "/files/{path...}", "files/{path}").file("${ROOT}").yaml();
        Path root = dir.resolve("root");
        try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), yaml, Map.of("ROOT", root.toString()))) {
            History history = race(proxy.uri("/files/race.txt"));
            String last = Files.readString(root.resolve("files/race.txt"));
            // A directory keeps no order of past writes: the checker judges the final state by tokens alone.
            HistoryChecker.Result result = HistoryChecker.check(history, Map.of("files/race.txt", last), null);
            assertTrue(result.ok(), result.toString());
        }
    }

    /** Runs the writers against one URI and returns their history. */
    static History race(URI target) throws Exception {
        String scope = target.getPath().substring(1);
        History history = new History();
        AtomicLong lease = new AtomicLong(1);
        Racers.race(history, WRITERS, OPS_PER_WRITER, (writer, n) -> {
            long token = Racers.token(lease);
            return new Racers.Write(scope, target, token, "w" + writer + "-n" + n + "-t" + token);
        });
        return history;
    }
}
