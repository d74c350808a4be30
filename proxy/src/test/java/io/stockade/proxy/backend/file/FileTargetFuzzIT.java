package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.RawAttempts;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.DifferentialOracle;
import io.stockade.proxy.testing.TargetGrammar;

import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The differential fuzzer of the file backend (the request-target review): hostile spellings of a few resources
 * ({@link TargetGrammar}) sent to a real proxy in front of a directory, judged by {@link DifferentialOracle}
 * against the files the directory holds (read directly, named by their paths under the root).
 * <p>
 * CI runs a fixed budget (300 tries per property, from {@code junit-platform.properties}); run longer on demand:
 * {@code mvn -pl policies,proxy verify -Dtest='*TargetFuzzIT' -Djqwik.tries.default=20000}.
 */
class FileTargetFuzzIT {
    private static Path dir;
    private static ProxyFixture proxy;
    private static DifferentialOracle oracle;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-file-fuzz");
        Path root = dir.resolve("root");
        proxy = ProxyFixture.start(dir.resolve("journal"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{path...}", "docs/{path}").file("${ROOT}").yaml(),
                Map.of("ROOT", root.toString()));
        oracle = new DifferentialOracle(new DifferentialOracle.Storage() {
            @Override
            public Map<String, String> snapshot() throws IOException {
                Map<String, String> out = new HashMap<>();
                try (Stream<Path> files = Files.walk(root)) {
                    for (Path file : files.filter(Files::isRegularFile).toList()) {
                        String relative = root.relativize(file).toString();
                        if (!relative.startsWith(".stockade")) {
                            out.put(relative, Files.readString(file));
                        }
                    }
                }
                return out;
            }

            @Override
            public String scopeOf(String resource) {
                return resource;
            }
        }, RawAttempts.storeFences(proxy));
    }

    @AfterContainer
    static void stop() {
        System.out.println("FileTargetFuzzIT: " + (oracle == null ? "-" : oracle.summary()));
        if (proxy != null) {
            proxy.close();
        }
    }

    @Provide
    Arbitrary<TargetGrammar.Attempt> attempts() {
        return TargetGrammar.attempts("/docs", List.of("PUT", "PUT", "DELETE"), 2);
    }

    @Property
    void noSpellingLandsAStaleWriteOrMissesTheFence(@ForAll("attempts") TargetGrammar.Attempt attempt)
            throws Exception {
        oracle.judge(attempt, FileTargetFuzzIT::send);
    }

    /** Found by the property: a write where a directory stands was refused (409) only after raising the fence. */
    @Example
    void aWriteWhereADirectoryStandsIsRefusedBeforeTheFence() throws Exception {
        oracle.judge(new TargetGrammar.Attempt("PUT", "/docs/dirx/child", 3L), FileTargetFuzzIT::send);
        oracle.judge(new TargetGrammar.Attempt("PUT", "/docs/dirx", 5L), FileTargetFuzzIT::send);
        oracle.judge(new TargetGrammar.Attempt("DELETE", "/docs/dirx", 5L), FileTargetFuzzIT::send);
        oracle.judge(new TargetGrammar.Attempt("PUT", "/docs/dirx/child/below", 5L), FileTargetFuzzIT::send);
    }

    static DifferentialOracle.Result send(TargetGrammar.Attempt attempt, String body) throws Exception {
        return RawAttempts.send(proxy, attempt, body);
    }
}
