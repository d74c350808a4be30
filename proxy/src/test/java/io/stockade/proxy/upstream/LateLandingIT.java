package io.stockade.proxy.upstream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.testing.TestUpstream;
import io.stockade.testing.Http;
import io.stockade.testing.TcpRelay;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 46, item 1: a write the proxy answered 504 (outcome unknown) must not land after the scope's quarantine,
 * under a newer holder's write. The storage is cut from the proxy as a firewall's DROP cuts it ({@link
 * TcpRelay#freeze()}: the relay stops reading, the proxy's kernel keeps the unsent bytes); the cut heals for new
 * connections, the newer holder writes, and then the old connection's bytes may flow again. A proxy that closed the
 * timed-out connection gracefully leaves the rest of the request to its kernel, which delivers it once the network
 * heals: the old write lands after the new one (it did on main: applied v10, v12, then the 256 KiB body of token
 * 11). The proxy aborts (RST) the connection instead, so the storage only ever sees the request cut off.
 */
class LateLandingIT {
    /** settle is at least timeout: policies/README.md, "timeout and settle". */
    static final String POLICY = TestPolicies.docsOverHttp("timeout: 1s", "settle: 1s");

    @TempDir
    static Path dir;
    static TestUpstream upstream;
    static TcpRelay relay;
    static ProxyFixture proxy;

    @BeforeAll
    static void start() throws Exception {
        upstream = TestUpstream.start();
        relay = TcpRelay.to(upstream.port(), 4096);
        proxy = ProxyFixture.start(dir.resolve("j"), POLICY,
                Map.of("UPSTREAM", "http://127.0.0.1:" + relay.port()));
        proxy.awaitDocsOpen();
    }

    /** A failed case leaves no cut behind for the next. */
    @AfterEach
    void heal() {
        relay.thaw();
    }

    @AfterAll
    static void stop() {
        if (proxy != null) {
            proxy.close();
        }
        if (relay != null) {
            relay.close();
        }
        if (upstream != null) {
            upstream.close();
        }
    }

    @Test
    void aWriteAnswered504NeverLandsAfterTheNextHoldersWrite() throws Exception {
        assertEquals(201, Http.put(proxy.uri("/docs/a"), "v10", Map.of("Fencing-Token", "10")).status());

        relay.freeze();
        // 256 KiB: more than the relay's kernel and its one chunk take, less than the proxy's send buffer, so the
        // proxy's write completes and it waits for an answer that cannot come.
        byte[] old = filled(256 * 1024, '1');
        Http.Response unknown = Http.put(proxy.uri("/docs/a"), old, Map.of("Fencing-Token", "11"));
        assertEquals(504, unknown.status(), unknown.body());
        assertTrue(unknown.body().contains("unknown-outcome"), unknown.body());

        relay.admitNew(); // the cut heals for new connections; the old one's bytes are still held
        Http.Response next = putOnceOpen("/docs/a", "v12", 12);
        assertEquals(204, next.status(), next.body());
        assertEquals("v12", upstream.contentText("/docs/a").orElseThrow());

        relay.thaw(); // what the proxy's kernel still holds of token 11's request may flow now
        // The storage sees token 11's request head (it was in the chunk the relay held) and then either its end
        // (a graceful close: the kernel delivered the rest) or a reset: wait until it has handled it, either way.
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        while (upstream.received().stream().noneMatch(r -> "11".equals(r.header("Fencing-Token")))
                && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertTrue(upstream.received().stream().anyMatch(r -> "11".equals(r.header("Fencing-Token"))),
                "the held request head should reach the storage once the cut heals");
        assertTrue(upstream.awaitQuiet(Duration.ofSeconds(10)));

        assertEquals(List.of("v10", "v12"),
                upstream.appliedBodies("/docs/a").stream().map(LateLandingIT::shortly).toList(),
                "the storage's apply log: token 11's write must never land, least of all after token 12's");
        assertEquals("v12", upstream.contentText("/docs/a").orElseThrow());
    }

    @Test
    void aWriteBlockedByAnUpstreamThatStopsReadingIsAbortedAtTheTimeout() throws Exception {
        relay.freeze();
        // 8 MiB: more than every buffer on the way holds, so the proxy's write blocks until the proxy gives up.
        int length = 8 * 1024 * 1024;
        long started = System.nanoTime();
        int status = rawPut("/docs/b", 21, length);
        long tookMillis = (System.nanoTime() - started) / 1_000_000;
        assertEquals(504, status);
        assertTrue(tookMillis < 5_000, "answered after " + tookMillis + " ms; the timeout is 1 s");

        relay.thaw();
        assertTrue(upstream.awaitQuiet(Duration.ofSeconds(10)));
        assertTrue(upstream.applied("/docs/b").isEmpty(), "the cut-off write was applied");
        relay.admitNew();
        Http.Response next = putOnceOpen("/docs/b", "v22", 22);
        assertEquals(201, next.status(), next.body());
        assertFalse(upstream.appliedBodies("/docs/b").stream().anyMatch(b -> b != null && b.length() == length));
    }

    /** A PUT of {@code length} bytes written by a thread of its own (the proxy may answer before it read them). */
    private static int rawPut(String path, long token, int length) throws Exception {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), proxy.server().port())) {
            socket.setSoTimeout((int) Http.REQUEST_TIMEOUT.toMillis());
            OutputStream out = socket.getOutputStream();
            Thread writer = Thread.ofVirtual().start(() -> {
                try {
                    out.write(("PUT " + path + " HTTP/1.1\r\nHost: proxy\r\nFencing-Token: " + token
                            + "\r\nContent-Length: " + length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
                    byte[] chunk = filled(64 * 1024, 'b');
                    for (int sent = 0; sent < length; sent += chunk.length) {
                        out.write(chunk);
                    }
                } catch (IOException e) {
                    // the proxy answered and closed before the body's end
                }
            });
            InputStream in = socket.getInputStream();
            byte[] head = in.readNBytes(12);
            writer.interrupt();
            String line = new String(head, StandardCharsets.US_ASCII);
            assertTrue(line.startsWith("HTTP/1.1 "), "no answer: '" + line + "'");
            return Integer.parseInt(line.substring(9, 12));
        }
    }

    /** PUTs once the scope's quarantine has passed (503 until then), within 10 s. */
    private static Http.Response putOnceOpen(String path, String body, long token) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
        Http.Response r;
        do {
            r = Http.put(proxy.uri(path), body, Map.of("Fencing-Token", Long.toString(token)));
            if (r.status() != 503) {
                return r;
            }
            Thread.sleep(50);
        } while (System.nanoTime() < deadline);
        return r;
    }

    private static byte[] filled(int length, char c) {
        byte[] bytes = new byte[length];
        Arrays.fill(bytes, (byte) c);
        return bytes;
    }

    private static String shortly(String body) {
        return body == null || body.length() <= 16 ? String.valueOf(body) : body.length() + " bytes";
    }
}
