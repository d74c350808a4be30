package io.stockade.proxy.backend.http;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.RawAttempts;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.DifferentialOracle;
import io.stockade.proxy.testing.TargetGrammar;
import io.stockade.proxy.testing.TestUpstream;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

/**
 * The differential fuzzer of the http backend (the request-target review): hostile spellings of a few resources
 * ({@link TargetGrammar}) sent to a real proxy in front of a recording upstream, serialized and {@code if-match}
 * policies alike, judged by {@link DifferentialOracle} against what the upstream holds, named as a server that
 * percent-decodes its paths names it.
 * <p>
 * CI runs a fixed budget (300 tries per property, from {@code junit-platform.properties}); run longer on demand:
 * {@code mvn -pl policies,proxy verify -Dtest='*TargetFuzzIT' -Djqwik.tries.default=20000}.
 */
class HttpTargetFuzzIT {
    private static Path dir;
    private static TestUpstream upstream;
    private static ProxyFixture proxy;
    private static DifferentialOracle oracle;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-http-fuzz");
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("journal"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{path...}", "docs/{path}").http("${UPSTREAM}/store", "settle: 1ms")
                .policy("objects", "/objects/{key}", "objects/{key}").http("${UPSTREAM}/store", "conditional: if-match")
                .yaml(), Map.of("UPSTREAM", upstream.baseUri().toString().replaceAll("/$", "")));
        oracle = new DifferentialOracle(new DifferentialOracle.Storage() {
            @Override
            public Map<String, String> snapshot() {
                Map<String, String> out = new HashMap<>();
                upstream.contents().forEach((raw, body) -> out.merge(decode(raw), body, (a, b) -> {
                    throw new AssertionError("two upstream paths decode to " + decode(raw) + ": "
                            + upstream.contents().keySet());
                }));
                return out;
            }

            @Override
            public String scopeOf(String resource) {
                return resource.substring("/store/".length());
            }
        }, RawAttempts.storeFences(proxy));
    }

    /** The path as a server that percent-decodes each segment once ('+' a literal plus) names it. */
    static String decode(String raw) {
        return URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    @AfterContainer
    static void stop() {
        System.out.println("HttpTargetFuzzIT: " + (oracle == null ? "-" : oracle.summary()));
        if (proxy != null) {
            proxy.close();
        }
        if (upstream != null) {
            upstream.close();
        }
    }

    @Provide
    Arbitrary<TargetGrammar.Attempt> attempts() {
        return Arbitraries.oneOf(TargetGrammar.attempts("/docs", List.of("PUT", "PUT", "DELETE"), 2),
                TargetGrammar.attempts("/objects", List.of("PUT", "PUT", "DELETE"), 1));
    }

    @Property
    void noSpellingLandsAStaleWriteOrMissesTheFence(@ForAll("attempts") TargetGrammar.Attempt attempt)
            throws Exception {
        oracle.judge(attempt, HttpTargetFuzzIT::send);
    }

    static DifferentialOracle.Result send(TargetGrammar.Attempt attempt, String body) throws Exception {
        return RawAttempts.send(proxy, attempt, body);
    }
}
