package io.stockade.proxy.token;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.testing.Http;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whatever a client puts in the token header (random bytes, random numbers, nothing, several headers), the proxy
 * answers 400, 428, 409 or 2xx: never a 500, never a hang.
 */
class TokenHeaderPropertyIT {
    private static final Set<Integer> ALLOWED = Set.of(400, 428, 409, 200, 201, 204);
    private static Path dir;
    private static ProxyFixture proxy;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-prop");
        proxy = ProxyFixture.start(dir.resolve("journal"), TestPolicies.memoryStore()
                .policy("files", "/files/{path...}", "files/{path}").file("${ROOT}").yaml(),
                Map.of("ROOT", dir.resolve("root").toString()));
    }

    @AfterContainer
    static void stop() {
        if (proxy != null) { // null when a test filter selected no property of this class
            proxy.close();
        }
    }

    @Property(tries = 300)
    void randomHeaderBytesGetOnlyDefinedAnswers(@ForAll("headerValues") String value, @ForAll("scopes") String scope)
            throws Exception {
        assertAllowed(value == null ? "" : "Fencing-Token: " + value + "\r\n", scope);
    }

    @Property(tries = 200)
    void randomNumbersGetOnlyDefinedAnswers(@ForAll long number, @ForAll("scopes") String scope) throws Exception {
        assertAllowed("Fencing-Token: " + number + "\r\n", scope);
    }

    @Property(tries = 100)
    void severalHeadersGetOnlyDefinedAnswers(@ForAll("digits") String a, @ForAll("digits") String b,
                                             @ForAll("scopes") String scope) throws Exception {
        assertAllowed("Fencing-Token: " + a + "\r\nFencing-Token: " + b + "\r\n", scope);
    }

    private static void assertAllowed(String tokenLines, String scope) throws Exception {
        byte[] head = ("PUT /files/" + scope + " HTTP/1.1\r\nHost: x\r\n" + tokenLines
                + "Content-Length: 1\r\nConnection: close\r\n\r\nx").getBytes(StandardCharsets.ISO_8859_1);
        Http.Response r = RawHttp.send(proxy.server().port(), new String(head, StandardCharsets.ISO_8859_1));
        assertTrue(ALLOWED.contains(r.status()),
                "header lines " + escape(tokenLines) + " -> " + r.status() + " " + r.body());
    }

    @Provide
    Arbitrary<String> headerValues() {
        return Arbitraries.oneOf(
                Arbitraries.strings().all().ofMaxLength(40),
                Arbitraries.strings().withCharRange((char) 0x20, (char) 0xff).ofMaxLength(25),
                Arbitraries.strings().numeric().ofMaxLength(22),
                Arbitraries.strings().withChars("0123456789 +-.xe\t").ofMaxLength(21),
                Arbitraries.just(null));
    }

    @Provide
    Arbitrary<String> digits() {
        return Arbitraries.strings().numeric().ofMinLength(1).ofMaxLength(19);
    }

    @Provide
    Arbitrary<String> scopes() {
        return Arbitraries.of("a", "b", "c");
    }

    private static String escape(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            b.append(c >= 0x20 && c < 0x7f ? String.valueOf(c) : String.format("\\u%04x", (int) c));
        }
        return b.toString();
    }
}
