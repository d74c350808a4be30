package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.RawAttempts;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.MeaningGrammar;
import io.stockade.proxy.testing.MeaningOracle;
import io.stockade.proxy.testing.MeaningSeeds;

import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The meaning fuzzer of the file backend (the default-deny issue): requests from {@link MeaningGrammar#file()} —
 * WebDAV, unknown and lower-case methods, a {@code Destination}, method overrides and URL rewrites, {@code _method},
 * {@code Connection} naming a header, tokens of every kind — sent to a proxy in front of a directory. The file
 * backend's table is methods only ({@code GET}, {@code HEAD}, {@code PUT}, {@code DELETE}); it relays no header, so
 * a header must not make it act on anything but the request's own file. {@link MeaningOracle} reads the directory
 * (every file but the backend's {@code .stockade} sidecars) and the proxy's store before and after each request.
 * <p>
 * CI runs a fixed budget (300 tries per property, from {@code junit-platform.properties}); run longer on demand:
 * {@code mvn -pl policies,proxy verify -Dtest=none -Dit.test='*MeaningFuzzIT' -Djqwik.tries.default=5000}.
 */
class FileMeaningFuzzIT {
    private static Path dir;
    private static ProxyFixture proxy;
    private static MeaningOracle oracle;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-file-meaning");
        Path root = dir.resolve("root");
        proxy = ProxyFixture.start(dir.resolve("journal"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{path...}", "docs/{path}").file("${ROOT}").yaml(),
                Map.of("ROOT", root.toString()));
        oracle = new MeaningOracle("file", new MeaningOracle.Storage() {
            @Override
            public Map<String, String> snapshot() throws IOException {
                Map<String, String> out = new TreeMap<>();
                if (!Files.exists(root)) {
                    return out;
                }
                try (Stream<Path> files = Files.walk(root)) {
                    for (Path file : files.filter(Files::isRegularFile).toList()) {
                        String relative = root.relativize(file).toString();
                        if (!relative.startsWith(".stockade") && !relative.contains("/.stockade")) {
                            out.put(relative, Files.readString(file));
                        }
                    }
                }
                return out;
            }

            @Override
            public String scopeOf(String resource) {
                return resource; // the file docs/a under the root is the path /docs/a, the scope docs/a
            }
        }, RawAttempts.storeFences(proxy)::snapshot, RawAttempts.decisions(proxy, "docs"));
    }

    @AfterContainer
    static void stop() {
        if (oracle != null) {
            oracle.writeReport(Path.of("target", "meaning-fuzz", "file.txt"));
        }
        if (proxy != null) {
            proxy.close();
        }
    }

    @Provide
    Arbitrary<MeaningGrammar.Request> requests() {
        return MeaningGrammar.file();
    }

    @Property(shrinking = ShrinkingMode.OFF)
    void noRequestChangesWhatItsFenceDidNotAdmit(@ForAll("requests") MeaningGrammar.Request request)
            throws Exception {
        oracle.judge(request, FileMeaningFuzzIT::send);
    }

    /** The issue's method-override reproductions and the WebDAV methods, against the directory. */
    @Example
    void theSeedsOfTheIssue() throws Exception {
        for (Map.Entry<String, List<MeaningGrammar.Request>> sequence : MeaningSeeds.fileSequences().entrySet()) {
            for (MeaningGrammar.Request request : sequence.getValue()) {
                oracle.judge(request.asSeed(sequence.getKey()), FileMeaningFuzzIT::send);
            }
        }
    }

    static MeaningOracle.Answer send(MeaningGrammar.Request request, Long token) throws Exception {
        return RawAttempts.sendMeaning(proxy, request, token);
    }
}
