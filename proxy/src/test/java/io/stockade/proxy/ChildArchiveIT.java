package io.stockade.proxy;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import io.stockade.testing.ChildProxy;
import io.stockade.testing.Http;
import io.stockade.testing.Jvm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * test-tools' class-data archive for child JVMs (its {@code ChildArchive}): after the first child proxy of a test
 * JVM, a training child writes the archive, and the children started after it take the proxy's classes from it
 * (the suite's CI time: a child's start on ~40 % less CPU). A child on the jarred class path and the archive still
 * serves as before.
 */
class ChildArchiveIT {

    @TempDir
    Path dir;

    @Test
    void childrenStartedAfterTheTrainingTakeTheProxysClassesFromTheArchive() throws Exception {
        Path config = dir.resolve("stockade.yaml");
        Files.writeString(config, TestPolicies.memoryStore()
                .policy("files", "/files/{path...}", "files/{path}").file(dir.resolve("files").toString())
                .server("host: 127.0.0.1", "port: 0")
                .yaml().replace("${JOURNAL}", dir.resolve("journal").toString()));
        try (ChildProxy first = ChildProxy.start(config, List.of("-Xmx128m"))) {
            int status = Http.put(first.baseUri().resolve("/files/a"), "1", Map.of("Fencing-Token", "1")).status();
            assertTrue(status / 100 == 2, "first write: " + status);
        }
        long deadline = System.nanoTime() + 120_000_000_000L;  // the training: a proxy's start, two requests, its exit
        while (Jvm.java("Unused").command().stream().noneMatch(a -> a.startsWith("-XX:SharedArchiveFile="))) {
            assertTrue(System.nanoTime() < deadline, "no archive for the children within 120 s: "
                    + Jvm.java("Unused").command());
            Thread.sleep(100);
        }
        try (ChildProxy second = ChildProxy.start(config, List.of("-Xmx128m", "-Xlog:class+load=info"))) {
            URI a = second.baseUri().resolve("/files/a");
            assertEquals("1", Http.get(a).body(), "the child on the archive serves what the first one wrote");
            String log = second.log();
            assertTrue(log.contains("io.helidon.webserver.LoomServer source: shared objects file (top)"),
                    "Helidon's server class from the archive; class loading as logged:\n"
                            + log.lines().filter(l -> l.contains("LoomServer")).toList());
            assertTrue(log.contains("io.stockade.proxy.Main source: shared objects file (top)"),
                    "the proxy's Main (a jarred target/classes) from the archive");
        }
    }
}
