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

import net.jqwik.api.Arbitraries;
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
    /**
     * A proxy with one policy in front of its own directory, and the judge held to that policy. The default
     * world runs the seeds; the configuration axis (the one-decider issue) adds {@code strict} ({@code max-advance:
     * 3}, {@code equal: reject}), {@code observe} and {@code allow} ({@code missing: allow}), both with
     * {@code max-advance: 3}; each try draws a world.
     */
    private record World(ProxyFixture proxy, MeaningOracle oracle) {
    }

    private static final Map<String, World> WORLDS = new TreeMap<>();
    private static final Map<String, List<String>> FENCES = Map.of(
            "default", List.of(),
            "strict", List.of("max-advance: 3", "equal: reject"),
            "observe", List.of("mode: observe", "max-advance: 3"),
            "allow", List.of("missing: allow", "max-advance: 3"));
    private static final Map<String, MeaningOracle.Policy> JUDGED = Map.of(
            "default", MeaningOracle.Policy.ENFORCE,
            "strict", new MeaningOracle.Policy(3, false, false, false, false),
            "observe", new MeaningOracle.Policy(3, false, true, true, false),
            "allow", new MeaningOracle.Policy(3, true, false, true, false));
    private static Path dir;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-file-meaning");
        for (String name : FENCES.keySet()) {
            WORLDS.put(name, world(name));
        }
    }

    private static World world(String name) throws Exception {
        Path root = dir.resolve("root-" + name);
        TestPolicies policies = TestPolicies.memoryStore().policy("docs", "/docs/{path...}", "docs/{path}");
        if (!FENCES.get(name).isEmpty()) {
            policies.fence(FENCES.get(name).toArray(String[]::new));
        }
        ProxyFixture proxy = ProxyFixture.start(dir.resolve("journal-" + name), policies.file("${ROOT}").yaml(),
                Map.of("ROOT", root.toString()));
        MeaningOracle oracle = new MeaningOracle("file " + name, JUDGED.get(name), new MeaningOracle.Storage() {
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
        return new World(proxy, oracle);
    }

    @AfterContainer
    static void stop() {
        for (Map.Entry<String, World> world : WORLDS.entrySet()) {
            world.getValue().oracle().writeReport(Path.of("target", "meaning-fuzz", "file-" + world.getKey()
                    + ".txt"));
            world.getValue().proxy().close();
        }
    }

    @Provide
    Arbitrary<MeaningGrammar.Request> requests() {
        return MeaningGrammar.file();
    }

    @Provide
    Arbitrary<String> worlds() {
        return Arbitraries.of(List.copyOf(FENCES.keySet()));
    }

    @Property(shrinking = ShrinkingMode.OFF)
    void noRequestChangesWhatItsFenceDidNotAdmit(@ForAll("requests") MeaningGrammar.Request request,
                                                 @ForAll("worlds") String world) throws Exception {
        World w = WORLDS.get(world);
        w.oracle().judge(request, (r, token) -> RawAttempts.sendMeaning(w.proxy(), r, token));
    }

    /** The issue's method-override reproductions and the WebDAV methods, against the directory. */
    @Example
    void theSeedsOfTheIssue() throws Exception {
        World w = WORLDS.get("default");
        for (Map.Entry<String, List<MeaningGrammar.Request>> sequence : MeaningSeeds.fileSequences().entrySet()) {
            for (MeaningGrammar.Request request : sequence.getValue()) {
                w.oracle().judge(request.asSeed(sequence.getKey()), (r, token) -> RawAttempts.sendMeaning(w.proxy(),
                        r, token));
            }
        }
    }
}
