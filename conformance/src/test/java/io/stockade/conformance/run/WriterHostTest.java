package io.stockade.conformance.run;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import io.stockade.conformance.Scenario;
import io.stockade.conformance.lease.CounterLeaseServer;
import io.stockade.conformance.storage.PlainHttpStore;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which runs keep their writers as OS processes, and a writer on a thread of this JVM: the same loop and the same
 * lines as a writer process, written to a real directory through plain HTTP, and stopped on request.
 */
class WriterHostTest {

    @Test
    void onlyScenariosThatSignalNoWriterRunThemAsThreads() {
        for (Scenario s : Scenario.values()) {
            boolean threads = s == Scenario.TIMEOUT || s == Scenario.LOST_RESPONSE;
            assertEquals(!threads, Writers.ownProcesses(s, null), s.id());
            assertTrue(Writers.ownProcesses(s, "class:com.example.Mine:x"), s.id() + ": a user's lease class");
        }
        assertFalse(Writers.ownProcesses(Scenario.TIMEOUT, "redis:1000:{lock}:redis://127.0.0.1:6379"));
    }

    @Test
    void aThreadWriterReportsTheLinesOfAWriterProcessAndStops(@TempDir Path dir) throws Exception {
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch exited = new CountDownLatch(1);
        try (CounterLeaseServer leases = CounterLeaseServer.start(Duration.ofSeconds(2), 1);
             PlainHttpStore store = PlainHttpStore.start(dir)) {
            WriterHost w = WriterHost.thread("w1", List.of("--name", "w1", "--lease", leases.spec(),
                    "--url", store.baseUri().toString().replaceAll("/$", "") + "/k", "--work-ms", "10",
                    "--pace-ms", "10"), Map.of(), lines::add, exited::countDown);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (lines.stream().filter(l -> l.startsWith("DONE ")).count() < 3 && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThrows(IllegalStateException.class, w::pid, "a thread has no process to signal");
            w.stop();
            assertTrue(w.waitFor(10, TimeUnit.SECONDS), "stopped after its current write");
            assertTrue(exited.await(5, TimeUnit.SECONDS));
            assertFalse(w.isAlive());
        }
        List<String> seen = List.copyOf(lines);
        assertTrue(seen.getFirst().startsWith("LEASE w1.t1 1 "), seen.toString());
        assertTrue(seen.getLast().startsWith("EXIT "), seen.toString());
        List<String> done = seen.stream().filter(l -> l.startsWith("DONE ")).toList();
        assertTrue(done.size() >= 3 && done.stream().allMatch(l -> l.split(" ")[2].startsWith("2")), seen.toString());
        String last = seen.stream().filter(l -> l.startsWith("INVOKE ")).reduce((a, b) -> b).orElseThrow();
        assertEquals(last.split(" ")[4], Files.readString(dir.resolve("k")), "the last value written is stored");
    }
}
