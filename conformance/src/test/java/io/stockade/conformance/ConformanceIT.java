package io.stockade.conformance;

import io.stockade.conformance.storage.PlainHttpStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The suite in this repository's CI: every scenario against the real proxy (a child process the suite launches,
 * so it can kill -9 it) in front of the file backend and in front of an HTTP upstream, each with its paired control,
 * which must see a stale write land. Short budget: one fault cycle per run.
 * {@code -Dconformance.scenarios=pause,delay} narrows it.
 */
class ConformanceIT {

    private static Scenario[] scenarios() {
        String s = System.getProperty("conformance.scenarios");
        return s == null || s.isBlank() ? Scenario.values()
                : Arrays.stream(s.split(",")).map(Scenario::parse).toArray(Scenario[]::new);
    }

    private static List<String> launch(Path policy) {
        String java = ProcessHandle.current().info().command().orElse("java");
        return List.of(java, "-cp", System.getProperty("java.class.path"), "io.stockade.proxy.Main",
                "--config", policy.toString());
    }

    private static String yamlList(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (String i : items) {
            b.append(b.length() > 1 ? ", " : "").append('"').append(i.replace("\\", "\\\\").replace("\"", "\\\""))
                    .append('"');
        }
        return b.append(']').toString();
    }

    private static void assertEveryScenarioPassedAndEveryControlCaught(Conformance.Result r) {
        System.out.println(io.stockade.conformance.report.Reports.table(r.scenarios()));
        System.out.println(io.stockade.conformance.report.Reports.details(r.scenarios()));
        r.assertPassed();
        for (ScenarioResult s : r.scenarios()) {
            assertEquals(Verdict.PASS, s.verdict(), s.scenario().id());
            assertFalse(s.control().check().ok(), s.scenario().id() + ": the control must see a stale write land");
            assertTrue(s.proxied().faultsEffective() > 0, s.scenario().id());
            assertTrue(s.proxied().handoffs() > 0, s.scenario().id());
            if (s.scenario() != Scenario.TIMEOUT) {   // there the zombie hears nothing: it timed out first
                assertTrue(s.proxied().history().ops().stream().anyMatch(o -> o.status() == 409),
                        s.scenario().id() + ": the proxy must have refused the zombie's write with 409");
            }
        }
    }

    @Test
    void fileBackendPassesEveryScenarioAndItsControlFails(@TempDir Path dir) throws Exception {
        Path root = dir.resolve("files");
        Path policy = dir.resolve("stockade.yaml");
        Files.writeString(policy, """
                server:
                  port: 0
                store:
                  type: memory
                  journal: %s
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                      methods: [GET, HEAD, PUT, DELETE]
                    scope: files/{path}
                    fence:
                      methods: [PUT, DELETE]
                    backend:
                      type: file
                      root: %s
                """.formatted(dir.resolve("journal"), root));
        Path targetFile = dir.resolve("target.yaml");
        Files.writeString(targetFile, """
                name: file
                proxy:
                  path: /files/{key}
                  launch: %s
                read:
                  directory: %s
                  file: files/{key}
                control:
                  directory: %s
                  file: files/{key}
                lease:
                  ttl: 1s
                """.formatted(yamlList(launch(policy)), root, root));
        Conformance.Result r = Conformance.of(Target.load(targetFile)).scenarios(scenarios())
                .duration(Duration.ofSeconds(1)).workDir(dir.resolve("work")).run();
        assertEveryScenarioPassedAndEveryControlCaught(r);
    }

    @Test
    void httpBackendPassesEveryScenarioAndItsControlFails(@TempDir Path dir) throws Exception {
        try (PlainHttpStore upstream = PlainHttpStore.start(dir.resolve("upstream"))) {
            Path policy = dir.resolve("stockade.yaml");
            Files.writeString(policy, """
                    server:
                      port: 0
                    store:
                      type: memory
                      journal: %s
                    policies:
                      - name: docs
                        match:
                          path: /docs/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: docs/{path}
                        fence:
                          methods: [PUT, DELETE]
                        backend:
                          type: http
                          url: %s
                          conditional: none
                          timeout: 10s
                          settle: 1s
                    """.formatted(dir.resolve("journal"), upstream.baseUri()));
            Path targetFile = dir.resolve("target.yaml");
            Files.writeString(targetFile, """
                    name: http
                    proxy:
                      path: /docs/{key}
                      launch: %s
                    read:
                      url: %s
                      path: /docs/{key}
                    control:
                      url: %s
                      path: /docs/{key}
                    """.formatted(yamlList(launch(policy)), upstream.baseUri(), upstream.baseUri()));
            Conformance.Result r = Conformance.of(Target.load(targetFile)).scenarios(scenarios())
                    .duration(Duration.ofSeconds(1)).workDir(dir.resolve("work")).run();
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }
}
