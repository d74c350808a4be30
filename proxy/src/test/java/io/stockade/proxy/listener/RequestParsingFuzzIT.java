package io.stockade.proxy.listener;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.ReceivedRequest;
import io.stockade.proxy.testing.TestUpstream;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Request-parsing fuzzing: hostile raw HTTP/1.1 requests, built from the pieces parsers get wrong
 * (odd methods, paths with encoded dots, slashes and NUL, header names and values with control and 8-bit bytes,
 * duplicate and conflicting {@code Content-Length}/{@code Transfer-Encoding}, bad chunk sizes, truncated bodies,
 * pipelined requests, odd tokens), sent over raw sockets to a real proxy in front of a recording upstream.
 * <p>
 * Properties, after every request: no answer is a 500, and a 5xx is only one the proxy or its parser means (501
 * unknown coding, 502/503/504 from the proxy's own refusals, 505 version); the proxy still answers its health
 * check; and every fenced-method request the upstream ever received carried exactly one valid token that was not
 * below a token the upstream had already received for that path (no unfenced or stale write got through).
 */
class RequestParsingFuzzIT {
    private static final Set<String> FENCED = Set.of("PUT", "POST", "PATCH", "DELETE");
    private static final Set<Integer> ALLOWED_5XX = Set.of(501, 502, 503, 504, 505);
    private static final Pattern STATUS_LINE = Pattern.compile("HTTP/1\\.[01] (\\d{3}) ");
    private static final Pattern TOKEN = Pattern.compile("0|[1-9][0-9]{0,18}");

    private static Path dir;
    private static TestUpstream upstream;
    private static ProxyFixture proxy;
    /** How many of the upstream's received requests were checked, and the highest token per path so far. */
    private static int checked;
    private static final Map<String, Long> highest = new HashMap<>();

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-fuzz");
        upstream = TestUpstream.start();
        proxy = ProxyFixture.start(dir.resolve("journal"), TestPolicies.memoryStore()
                .server("limits: {max-header-bytes: 8KiB, header-timeout: 1s, read-timeout: 1s}")
                .policy("docs", "/docs/{path...}", "docs/{path}").http("${UPSTREAM}", "settle: 1ms")
                .limits("max-body-bytes: 4KiB", "body-timeout: 2s").yaml(),
                Map.of("UPSTREAM", upstream.baseUri().toString()));
    }

    @AfterContainer
    static void stop() {
        if (proxy != null) {
            proxy.close();
            upstream.close();
        }
    }

    @Property(tries = 400)
    void hostileRequestsNeverGet500NorAnUnfencedWrite(@ForAll("requests") String request) throws Exception {
        String answers = exchange(request);
        Matcher m = STATUS_LINE.matcher(answers);
        while (m.find()) {
            int status = Integer.parseInt(m.group(1));
            if (status == 500 || status >= 500 && !ALLOWED_5XX.contains(status)) {
                fail("status " + status + " for " + escape(request) + "\n-> " + escape(answers));
            }
        }
        assertTrue(exchange("GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                .startsWith("HTTP/1.1 200"), "the proxy must stay up after " + escape(request));
        assertUpstreamSawOnlyWinningTokens(request);
    }

    /** Found by the property: Helidon's parser answered a method with a NUL byte with 500. */
    @Example
    void aMethodWithANulByteIsABadRequestNotA500() throws Exception {
        String answer = exchange("P\0T /docs/a HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
        assertTrue(answer.startsWith("HTTP/1.1 400"), escape(answer));
        assertTrue(answer.contains("application/problem+json"), escape(answer));
    }

    /** Every fenced request the upstream received had one valid token, never below one it had received before. */
    private static void assertUpstreamSawOnlyWinningTokens(String request) {
        List<ReceivedRequest> received = upstream.received();
        for (; checked < received.size(); checked++) {
            ReceivedRequest r = received.get(checked);
            if (!FENCED.contains(r.method().toUpperCase(Locale.ROOT))) {
                continue;
            }
            List<String> tokens = r.headers().getOrDefault("fencing-token", List.of());
            assertEquals(1, tokens.size(), "upstream got " + r.method() + " " + r.path() + " with tokens " + tokens
                    + " after " + escape(request));
            String token = tokens.getFirst();
            assertTrue(TOKEN.matcher(token).matches(), "upstream got token '" + token + "' after " + escape(request));
            long value = Long.parseLong(token);
            Long before = highest.get(r.path());
            assertTrue(before == null || value >= before, "upstream got token " + value + " for " + r.path()
                    + " after " + before + " (a stale write), after " + escape(request));
            highest.merge(r.path(), value, Math::max);
        }
    }

    /** Sends the bytes, half-closes, and reads every answer until the proxy closes (or 5 s pass). */
    private static String exchange(String request) throws IOException {
        try (Socket s = new Socket("127.0.0.1", proxy.server().port())) {
            s.setSoTimeout(5000);
            try {
                s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
                s.getOutputStream().flush();
                s.shutdownOutput();
            } catch (IOException closedEarly) {
                // the proxy may refuse and close before all was sent
            }
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            InputStream in = s.getInputStream();
            byte[] buf = new byte[8192];
            try {
                for (int n; (n = in.read(buf)) >= 0; ) {
                    all.write(buf, 0, n);
                }
            } catch (SocketTimeoutException | java.net.SocketException e) {
                // take what came
            }
            return all.toString(StandardCharsets.ISO_8859_1);
        }
    }

    // ------------------------------------------------------------------ generators

    @Provide
    Arbitrary<String> requests() {
        Arbitrary<String> one = Combinators.combine(methods(), paths(), versions(), headerBlocks(), bodies(), eols())
                .as((method, path, version, headers, body, eol) -> method + " " + path + " " + version + eol
                        + headers.replace("\r\n", eol) + eol + body);
        return Arbitraries.oneOf(one, one.list().ofMinSize(2).ofMaxSize(3).map(l -> String.join("", l)));
    }

    private Arbitrary<String> methods() {
        return Arbitraries.oneOf(
                Arbitraries.of("PUT", "PUT", "PUT", "POST", "PATCH", "DELETE", "GET", "HEAD", "OPTIONS", "TRACE",
                        "put", "Put", "CONNECT", "PUT ", " PUT", "P\0T", "PROPFIND", ""),
                Arbitraries.strings().withCharRange('!', '~').ofMinLength(1).ofMaxLength(8));
    }

    private Arbitrary<String> paths() {
        Arbitrary<String> segment = Arbitraries.oneOf(
                Arbitraries.of("a", "b", "a", "%2e", "%2E%2E", "..", ".", "", "%2f", "%2F", "%00", "%", "%zz",
                        "a%20b", "%252e", "~", "\\", "a;b", "%c0%ae", "\u00e9", "a\tb", "a b", "%0d%0a"),
                Arbitraries.strings().withCharRange(' ', '\u00ff').ofMaxLength(6));
        Arbitrary<String> tail = segment.list().ofMinSize(1).ofMaxSize(4).map(l -> String.join("/", l));
        return Arbitraries.oneOf(
                tail.map(t -> "/docs/" + t),
                tail.map(t -> "/docs/" + t),
                tail.map(t -> "/docs/" + t + "?x=1&Fencing-Token=9"),
                tail.map(t -> "http://x/docs/" + t),
                tail.map(t -> "//docs/" + t),
                Arbitraries.of("*", "/", "/docs", "/docs/", "/health/live", "/metrics", "docs/a", ""));
    }

    private Arbitrary<String> versions() {
        return Arbitraries.of("HTTP/1.1", "HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/2.0", "HTTP/1.2", "http/1.1",
                "HTTP/1.1 x", "");
    }

    private Arbitrary<String> eols() {
        return Arbitraries.of("\r\n", "\r\n", "\r\n", "\r\n", "\n");
    }

    private Arbitrary<String> headerBlocks() {
        Arbitrary<String> line = Arbitraries.oneOf(
                tokens().map(t -> "Fencing-Token: " + t),
                tokens().map(t -> "fencing-token:" + t),
                lengths().map(l -> "Content-Length: " + l),
                Arbitraries.of("chunked", "chunked", "Chunked", "gzip, chunked", "chunked, chunked", "identity",
                        " chunked", "chunked ", "x").map(c -> "Transfer-Encoding: " + c),
                Arbitraries.of("Host: x", "Host: x", "Host:", "Host: a b", "Connection: close",
                        "Connection: keep-alive, Upgrade", "Upgrade: h2c", "Expect: 100-continue",
                        "Transfer-Encoding : chunked", " Fencing-Token: 5", "X-Fold: a\r\n b", "Fencing-Token",
                        ": empty", "X\0Y: z", "Content-Type: text/plain", "Forwarded: for=x"),
                Combinators.combine(
                        Arbitraries.strings().withCharRange('\0', '\u00ff').ofMinLength(1).ofMaxLength(8),
                        Arbitraries.strings().withCharRange('\0', '\u00ff').ofMaxLength(16))
                        .as((name, value) -> name.replace("\r", "").replace("\n", "") + ": "
                                + value.replace("\r", "").replace("\n", "")));
        return line.list().ofMaxSize(7).map(lines -> {
            StringBuilder b = new StringBuilder();
            lines.forEach(l -> b.append(l).append("\r\n"));
            return b.toString();
        });
    }

    private Arbitrary<String> tokens() {
        return Arbitraries.oneOf(
                Arbitraries.longs().between(0, 60).map(String::valueOf),
                Arbitraries.longs().between(0, 60).map(String::valueOf),
                Arbitraries.longs().map(String::valueOf),
                Arbitraries.of("", " 5", "5 ", "+5", "-1", "05", "5, 6", "9223372036854775807", "9223372036854775808",
                        "1e3", "0x10", "\u0665", "5\0"));
    }

    private Arbitrary<String> lengths() {
        return Arbitraries.oneOf(
                Arbitraries.integers().between(0, 40).map(String::valueOf),
                Arbitraries.of("", "-1", "+3", "3, 3", "3, 4", "0x10", "99999999999999999999", "5000", " 3", "3 "));
    }

    private Arbitrary<String> bodies() {
        Arbitrary<String> data = Arbitraries.strings().withChars("abcxyz0123456789\r\n;").ofMaxLength(40);
        Arbitrary<String> chunkSize = Arbitraries.oneOf(
                Arbitraries.integers().between(0, 20).map(Integer::toHexString),
                Arbitraries.of("ffffffffffffffff", "-1", "0x5", "5;ext=1", " 5", "", "g", "2000"));
        Arbitrary<String> chunk = Combinators.combine(chunkSize, data).as((size, d) -> size + "\r\n" + d + "\r\n");
        return Arbitraries.oneOf(
                data,
                chunk.list().ofMaxSize(3).map(l -> String.join("", l) + "0\r\n\r\n"),
                chunk.list().ofMaxSize(3).map(l -> String.join("", l)),
                Arbitraries.just(""),
                Arbitraries.just("x".repeat(5000)));
    }

    private static String escape(String s) {
        StringBuilder b = new StringBuilder();
        for (char c : s.toCharArray()) {
            b.append(c >= 0x20 && c < 0x7f ? String.valueOf(c) : String.format("\\x%02x", (int) c));
        }
        return b.length() > 600 ? b.substring(0, 600) + "..." : b.toString();
    }
}
