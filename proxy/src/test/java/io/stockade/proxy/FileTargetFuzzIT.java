package io.stockade.proxy;

import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.store.FenceStores;
import io.stockade.proxy.testing.DifferentialOracle;
import io.stockade.proxy.testing.Http;
import io.stockade.proxy.testing.TargetGrammar;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The differential fuzzer of the file backend (issue 14): hostile spellings of a few resources
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
        proxy = ProxyFixture.start(dir.resolve("journal"), """
                store: {type: memory, journal: "${JOURNAL}"}
                policies:
                  - name: docs
                    match: {path: "/docs/{path...}"}
                    scope: docs/{path}
                    backend: {type: file, root: "${ROOT}"}
                """, Map.of("ROOT", root.toString()));
        FenceAdmin admin = FenceStores.admin(proxy.server().store()).orElseThrow();
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
        }, () -> {
            Map<String, Long> out = new HashMap<>();
            admin.scopes("", 1_000_000).forEach(e -> out.put(e.scope(), e.token()));
            return out;
        });
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
        oracle.judge(attempt, FuzzSend::raw);
    }

    /** Found by the property: a write where a directory stands was refused (409) only after raising the fence. */
    @Example
    void aWriteWhereADirectoryStandsIsRefusedBeforeTheFence() throws Exception {
        oracle.judge(new TargetGrammar.Attempt("PUT", "/docs/dirx/child", 3L), FuzzSend::raw);
        oracle.judge(new TargetGrammar.Attempt("PUT", "/docs/dirx", 5L), FuzzSend::raw);
        oracle.judge(new TargetGrammar.Attempt("DELETE", "/docs/dirx", 5L), FuzzSend::raw);
        oracle.judge(new TargetGrammar.Attempt("PUT", "/docs/dirx/child/below", 5L), FuzzSend::raw);
    }

    /** Sends an attempt over a raw socket, byte for byte. */
    static final class FuzzSend {
        private FuzzSend() {
        }

        static DifferentialOracle.Result raw(TargetGrammar.Attempt attempt, String body) throws Exception {
            Http.Response r = RawHttp.send(proxy.server().port(), attempt.method() + " " + attempt.target()
                    + " HTTP/1.1\r\nHost: fuzz\r\n" + (attempt.token() == null ? ""
                    : "Fencing-Token: " + attempt.token() + "\r\n")
                    + "Content-Length: " + body.length() + "\r\nConnection: close\r\n\r\n" + body);
            return new DifferentialOracle.Result(r.status(), r.body());
        }
    }
}
