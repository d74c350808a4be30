package io.stockade.proxy.backend.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A body cut off after bytes of it reached the storage is an unknown outcome, never "nothing was written" (the
 * hostile-world issue, item 2). The upstream is {@code rclone serve webdav}, which writes as it reads and keeps what
 * it got of a request cut off: the answers before the fix said "nothing was written" (400 incomplete-body, 413 over
 * {@code max-body-bytes}, 408 past {@code body-timeout}) while the stored file held the partial body. Now each is
 * 504 {@code unknown-outcome}, counted so, and the serialized scope is quarantined, so that no newer holder's write
 * is acknowledged while the partial one may still land; whatever the store then holds, the answer claimed nothing
 * it did not know. A body cut off before any byte of it left the proxy is still answered as not written.
 */
@RequiresTools(Tools.Tool.RCLONE)
class PartialBodyIT {
    private static final int BOUND = 200_000;
    private static Path dir;
    private static Process rclone;
    private static ProxyFixture proxy;

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-partial-body");
        Path root = Files.createDirectories(dir.resolve("webdav"));
        Files.createDirectories(root.resolve("docs"));
        int port = FreePorts.next();
        rclone = new ProcessBuilder("/usr/bin/rclone", "serve", "webdav", root.toString(), "--addr",
                "127.0.0.1:" + port, "--config", "/dev/null")
                .redirectErrorStream(true).redirectOutput(dir.resolve("rclone.log").toFile()).start();
        awaitListening(port);
        proxy = ProxyFixture.start(dir.resolve("journal"), TestPolicies.memoryStore()
                .policy("docs", "/docs/{path...}", "docs/{path}")
                .limits("max-body-bytes: " + BOUND, "body-timeout: 2s")
                .http("${UPSTREAM}", "timeout: 5s", "settle: 3s").yaml(),
                Map.of("UPSTREAM", "http://127.0.0.1:" + port));
        awaitOpen();
    }

    /** A serialized policy refuses writes for its settle time after start (a crashed run's write may still land). */
    private static void awaitOpen() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (Http.put(proxy.uri("/docs/warm-up"), "x", Map.of("Fencing-Token", "1")).status() == 503) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the policy did not open");
            }
            Thread.sleep(100);
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (proxy != null) {
            proxy.close();
        }
        if (rclone != null) {
            rclone.destroy();
            if (!rclone.waitFor(10, TimeUnit.SECONDS)) {
                rclone.destroyForcibly().waitFor();
            }
        }
    }

    private static void awaitListening(int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException e) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("rclone serve webdav did not listen on " + port + ": "
                            + Files.readString(dir.resolve("rclone.log")), e);
                }
                Thread.sleep(50);
            }
        }
    }

    private static Optional<String> stored(String name) throws IOException {
        Path file = dir.resolve("webdav").resolve("docs").resolve(name);
        return Files.exists(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }

    /** The head of a PUT of {@code /docs/<name>} with token {@code token}. */
    private static String head(String name, long token, String framing) {
        return "PUT /docs/" + name + " HTTP/1.1\r\nHost: x\r\nFencing-Token: " + token + "\r\n" + framing + "\r\n";
    }

    /** Sends {@code request} as it is, waits {@code stall} ms, and reads the answer (empty when none came). */
    private static String exchange(byte[] request, long stall, boolean close) throws Exception {
        try (Socket s = new Socket("127.0.0.1", proxy.server().port())) {
            s.setSoTimeout(20_000);
            OutputStream out = s.getOutputStream();
            out.write(request);
            out.flush();
            if (stall > 0) {
                Thread.sleep(stall);
            }
            if (close) {
                s.shutdownOutput();
            }
            InputStream in = s.getInputStream();
            java.io.ByteArrayOutputStream got = new java.io.ByteArrayOutputStream();
            byte[] buffer = new byte[4096];
            try {
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    got.write(buffer, 0, n);
                }
            } catch (IOException reset) {
                // what arrived before the reset is the answer
            }
            return got.toString(StandardCharsets.ISO_8859_1);
        } catch (IOException e) {
            return "";
        }
    }

    private static byte[] chunked(int chunks, int size) {
        StringBuilder body = new StringBuilder();
        for (int i = 0; i < chunks; i++) {
            body.append(Integer.toHexString(size)).append("\r\n").append("z".repeat(size)).append("\r\n");
        }
        return body.toString().getBytes(StandardCharsets.US_ASCII);
    }

    private static byte[] concat(String head, byte[] body) {
        byte[] h = head.getBytes(StandardCharsets.US_ASCII);
        byte[] out = new byte[h.length + body.length];
        System.arraycopy(h, 0, out, 0, h.length);
        System.arraycopy(body, 0, out, h.length, body.length);
        return out;
    }

    /** The holder's good version, then a cut-off write of {@code name}, then the next holder, quarantined. */
    private static void assertUnknownAndQuarantined(String name, String answer, long token, boolean answered)
            throws Exception {
        if (answered || !answer.isEmpty()) {
            // (a client that is still sending may see the connection reset before it reads the answer)
            assertTrue(answer.startsWith("HTTP/1.1 504"), "504, not a claim that nothing was written: " + answer);
            assertTrue(answer.contains("unknown-outcome") && answer.contains("bytes of it had already been sent"),
                    answer);
        }
        Http.Response next = Http.put(proxy.uri("/docs/" + name), "next holder", Map.of("Fencing-Token",
                Long.toString(token + 1)));
        assertEquals(503, next.status(), "the scope is quarantined while the partial write may still land: "
                + next.body());
        assertTrue(next.body().contains("scope-quarantined"), next.body());
    }

    @Test
    void aChunkedBodyOverMaxBodyBytesIsUnknownOnceBytesOfItReachedTheStore() throws Exception {
        assertEquals(201, Http.put(proxy.uri("/docs/big"), "good", Map.of("Fencing-Token", "5")).status());
        double before = proxy.server().metrics().count("docs", Outcome.UNKNOWN_OUTCOME);
        String answer = exchange(concat(head("big", 6, "Transfer-Encoding: chunked\r\n"),
                chunked(BOUND / 10_000 + 5, 10_000)), 0, false);
        assertUnknownAndQuarantined("big", answer, 6, true);
        assertEquals(before + 1, proxy.counted("docs", Outcome.UNKNOWN_OUTCOME, before + 1));
        // what the store kept is its business; the proxy never said "nothing was written" about it
        assertTrue(stored("big").isPresent());
    }

    @Test
    void aBodyStalledPastBodyTimeoutIsUnknownOnceBytesOfItReachedTheStore() throws Exception {
        assertEquals(201, Http.put(proxy.uri("/docs/slow"), "good", Map.of("Fencing-Token", "5")).status());
        double before = proxy.server().metrics().count("docs", Outcome.UNKNOWN_OUTCOME);
        String answer = exchange(concat(head("slow", 6, "Content-Length: 100000\r\n"),
                "s".repeat(40_000).getBytes(StandardCharsets.US_ASCII)), 0, false);
        assertEquals(before + 1, proxy.counted("docs", Outcome.UNKNOWN_OUTCOME, before + 1));
        assertUnknownAndQuarantined("slow", answer, 6, false);
    }

    @Test
    void aBodyCutOffByTheClientIsUnknownOnceBytesOfItReachedTheStore() throws Exception {
        assertEquals(201, Http.put(proxy.uri("/docs/cut"), "good", Map.of("Fencing-Token", "5")).status());
        double before = proxy.server().metrics().count("docs", Outcome.UNKNOWN_OUTCOME);
        exchange(concat(head("cut", 6, "Content-Length: 100000\r\n"),
                "c".repeat(33_000).getBytes(StandardCharsets.US_ASCII)), 0, true);
        assertEquals(before + 1, proxy.counted("docs", Outcome.UNKNOWN_OUTCOME, before + 1),
                "counted as unknown, not as a refusal that wrote nothing");
        Http.Response next = Http.put(proxy.uri("/docs/cut"), "next holder", Map.of("Fencing-Token", "7"));
        assertEquals(503, next.status(), next.body());
    }

    /** A body cut off before any byte of the request left the proxy (it fits the first buffer): not written. */
    @Test
    void aBodyCutOffBeforeAnyByteLeftTheProxyIsNotWritten() throws Exception {
        assertEquals(201, Http.put(proxy.uri("/docs/early"), "good", Map.of("Fencing-Token", "5")).status());
        String answer = exchange(concat(head("early", 6, "Content-Length: 100000\r\n"),
                "e".repeat(1_000).getBytes(StandardCharsets.US_ASCII)), 0, true);
        assertTrue(answer.isEmpty() || answer.startsWith("HTTP/1.1 400"), answer);
        assertEquals(Optional.of("good"), stored("early"));
        assertEquals(2, Http.put(proxy.uri("/docs/early"), "next", Map.of("Fencing-Token", "7")).status() / 100,
                "no quarantine: the outcome is known");
        assertEquals(List.of("next"), stored("early").map(List::of).orElse(List.of()));
    }
}
