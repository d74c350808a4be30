package io.stockade.proxy;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import io.stockade.testing.ChildProxy;
import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The hostile-load soak: a proxy with a 64 MiB heap takes, all at once and for a bounded time, a flood of new scopes
 * with huge names up to the store's bound, slow and abandoned bodies, headers that trickle, malformed requests and
 * tokens — and, through it all, a steady stream of legitimate fenced writes from several writers, each followed by a
 * zombie of itself with the token before. Afterwards: every acknowledged write is what its file holds, no zombie
 * write landed, no answer was a 500, liveness and readiness never failed, the process never restarted, and a
 * restart with the same heap replays and keeps every fence.
 * <p>
 * Bounded: {@code -Dsoak.seconds=N} (default 20; docs/operations.md has the figures of a long run and the command).
 */
class HostileLoadIT {
    private static final int WRITERS = 4;
    private static final String HUGE = "h".repeat(3990);

    @TempDir
    Path dir;

    /** What every answer came to, by kind of client. */
    private final ConcurrentMap<String, AtomicLong> answers = new ConcurrentHashMap<>();
    private final List<String> violations = java.util.Collections.synchronizedList(new ArrayList<>());

    private void count(String kind, int status) {
        answers.computeIfAbsent(kind + " " + status, k -> new AtomicLong()).incrementAndGet();
        if (status == 500) {
            violations.add(kind + " got a 500");
        }
    }

    @Test
    void theProxyComesThroughHostileLoadWithEveryAcknowledgedWriteAndNoStaleOne() throws Exception {
        long seconds = Long.getLong("soak.seconds", 20);
        Path files = dir.resolve("files");
        Path config = dir.resolve("stockade.yaml");
        Files.writeString(config, """
                server:
                  host: 127.0.0.1
                  port: 0
                  limits: {header-timeout: 2s, read-timeout: 2s, max-header-bytes: 16KiB}
                store: {type: memory, journal: %s}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    limits: {max-body-bytes: 1MiB, body-timeout: 2s}
                    backend: {type: file, root: %s}
                  - name: flood
                    match: {path: "/flood/{name}"}
                    scope: flood/{name}
                    backend: {type: http, url: "http://127.0.0.1:%d", settle: 100ms}
                """.formatted(dir.resolve("journal"), files, FreePorts.next()));
        ConcurrentMap<Integer, String> acknowledged = new ConcurrentHashMap<>();
        ConcurrentMap<Integer, Long> tokens = new ConcurrentHashMap<>();
        try (ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx64m"))) {
            Thread.sleep(200); // past the flood policy's settle after start
            URI base = proxy.baseUri();
            int port = base.getPort();
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            ExecutorService pool = Executors.newFixedThreadPool(WRITERS + 8);
            List<Future<?>> running = new ArrayList<>();
            try {
                for (int w = 0; w < WRITERS; w++) {
                    int writer = w;
                    running.add(pool.submit(() -> legitimateWriter(base, writer, end, acknowledged, tokens)));
                }
                running.add(pool.submit(() -> flood(base, end)));
                running.add(pool.submit(() -> abandonedBodies(port, end)));
                running.add(pool.submit(() -> trickledBodies(port, end)));
                running.add(pool.submit(() -> trickledHeaders(port, end)));
                running.add(pool.submit(() -> malformed(port, end)));
                running.add(pool.submit(() -> badTokens(base, end)));
                running.add(pool.submit(() -> watch(base, end)));
                for (Future<?> f : running) {
                    f.get(seconds + 120, TimeUnit.SECONDS);
                }
            } finally {
                pool.shutdownNow();
            }
            assertTrue(proxy.isAlive(), "the proxy exited:\n" + proxy.log());
            assertFalse(proxy.log().contains("OutOfMemoryError"), "no OutOfMemoryError");
            System.out.println("hostile load, " + seconds + " s: " + new java.util.TreeMap<>(answers));
        }
        assertEquals(List.of(), violations);
        for (int w = 0; w < WRITERS; w++) {
            String last = acknowledged.get(w);
            if (last != null) {
                assertEquals(last, Files.readString(files.resolve("files/w" + w)), "writer " + w + "'s last"
                        + " acknowledged write is what its file holds");
            }
        }
        assertTrue(answers.getOrDefault("flood 503", new AtomicLong()).get() > 0
                || answers.getOrDefault("flood 502", new AtomicLong()).get() > 100, "the flood ran: " + answers);
        // a restart with the same heap replays, and every fence holds
        try (ChildProxy restarted = ChildProxy.start(config, List.of("-Xmx64m"))) {
            for (int w = 0; w < WRITERS; w++) {
                Long token = tokens.get(w);
                if (token != null && token > 1) {
                    Http.Response stale = Http.put(restarted.baseUri().resolve("/files/w" + w), "zombie",
                            Map.of("Fencing-Token", Long.toString(token - 1)));
                    assertEquals(409, stale.status(), "writer " + w + ": " + stale.body());
                }
            }
        }
    }

    /**
     * One writer of its own file: each round a new holder (token + 1) writes, then a zombie of the holder before
     * writes with its old token, which must never land.
     */
    private Void legitimateWriter(URI base, int writer, long end, ConcurrentMap<Integer, String> acknowledged,
                                  ConcurrentMap<Integer, Long> tokens) throws Exception {
        URI uri = base.resolve("/files/w" + writer);
        long token = 1;
        for (int n = 0; System.nanoTime() < end; n++) {
            token++;
            String body = "w" + writer + "-t" + token + "-n" + n;
            Http.Response r = Http.put(uri, body, Map.of("Fencing-Token", Long.toString(token)));
            count("writer", r.status());
            if (r.status() / 100 == 2) {
                acknowledged.put(writer, body);
                tokens.put(writer, token);
            } else if (r.status() != 503) {
                violations.add("writer " + writer + " token " + token + ": " + r.status() + " " + r.body());
            }
            Http.Response zombie = Http.put(uri, "zombie-" + n, Map.of("Fencing-Token", Long.toString(token - 1)));
            count("zombie", zombie.status());
            if (zombie.status() / 100 == 2) {
                violations.add("a zombie write with token " + (token - 1) + " landed on writer " + writer);
            }
        }
        return null;
    }

    /** New scopes with 4000-byte names, as fast as they are answered: up to the store's bound, then 503. */
    private Void flood(URI base, long end) throws Exception {
        for (int n = 0; System.nanoTime() < end; n++) {
            Http.Response r = Http.put(base.resolve("/flood/" + HUGE + n), "x", Map.of("Fencing-Token", "1"));
            count("flood", r.status());
            if (r.status() != 502 && r.status() != 503) {
                violations.add("flood: " + r.status());
            }
        }
        return null;
    }

    /** Bodies declared long and cut off: the connection closed after a few bytes. */
    private Void abandonedBodies(int port, long end) throws Exception {
        for (int n = 0; System.nanoTime() < end; n++) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.getOutputStream().write(("PUT /files/abandoned" + (n % 7) + " HTTP/1.1\r\nHost: x\r\nFencing-Token: "
                        + (n + 1) + "\r\nContent-Length: 100000\r\n\r\n" + "a".repeat(1000))
                        .getBytes(StandardCharsets.US_ASCII));
            }
            answers.computeIfAbsent("abandoned sent", k -> new AtomicLong()).incrementAndGet();
            Thread.sleep(20);
        }
        return null;
    }

    /** Bodies that trickle, one byte every 200 ms, past the policy's body-timeout (2 s): 408 or a closed connection. */
    private Void trickledBodies(int port, long end) throws Exception {
        while (System.nanoTime() < end) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(10_000);
                OutputStream out = s.getOutputStream();
                out.write(("PUT /files/trickled HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\nContent-Length: 50\r\n\r\n")
                        .getBytes(StandardCharsets.US_ASCII));
                try {
                    for (int i = 0; i < 50 && System.nanoTime() < end; i++) {
                        out.write('t');
                        out.flush();
                        Thread.sleep(200);
                    }
                    count("trickled body", status(s.getInputStream()));
                } catch (IOException closed) {
                    answers.computeIfAbsent("trickled body closed", k -> new AtomicLong()).incrementAndGet();
                }
            }
        }
        return null;
    }

    /** Headers that trickle (slowloris): the listener's header-timeout closes them. */
    private Void trickledHeaders(int port, long end) throws Exception {
        while (System.nanoTime() < end) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(10_000);
                OutputStream out = s.getOutputStream();
                try {
                    for (char c : "PUT /files/slow HTTP/1.1\r\nHost: x\r\nX-Slow: ".toCharArray()) {
                        out.write(c);
                        out.flush();
                        Thread.sleep(150);
                        if (System.nanoTime() > end) {
                            break;
                        }
                    }
                    answers.computeIfAbsent("trickled headers not closed", k -> new AtomicLong()).incrementAndGet();
                } catch (IOException closed) {
                    answers.computeIfAbsent("trickled headers closed", k -> new AtomicLong()).incrementAndGet();
                }
            }
        }
        return null;
    }

    /** Bytes that are no request, broken chunked framing, requests in other versions, huge headers. */
    private Void malformed(int port, long end) throws Exception {
        Random random = new Random(42);
        List<String> requests = List.of(
                "GARBAGE\r\n\r\n",
                "PUT /files/m HTTP/1.1\r\nHost: x\r\nFencing-Token: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                        + "zz\r\nab\r\n",
                "PUT /files/m HTTP/1.0\r\nFencing-Token: 3\r\nContent-Length: 1\r\n\r\nx",
                "PUT /files/../etc/passwd HTTP/1.1\r\nHost: x\r\nFencing-Token: 3\r\nContent-Length: 1\r\n\r\nx",
                "PUT /files/m HTTP/1.1\r\nHost: x\r\nX-Big: " + "b".repeat(20_000) + "\r\nContent-Length: 1\r\n\r\nx",
                "PUT /files/m HTTP/1.1\r\nHost: x\r\nFencing-Token: 3\r\nContent-Length: 1\r\n"
                        + "Content-Length: 2\r\n\r\nxy",
                "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n");
        while (System.nanoTime() < end) {
            String request = random.nextInt(4) == 0 ? randomBytes(random) : requests.get(random.nextInt(
                    requests.size()));
            try (Socket s = new Socket("127.0.0.1", port)) {
                s.setSoTimeout(10_000);
                s.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
                s.shutdownOutput();
                count("malformed", status(s.getInputStream()));
            } catch (IOException e) {
                answers.computeIfAbsent("malformed closed", k -> new AtomicLong()).incrementAndGet();
            }
        }
        return null;
    }

    private static String randomBytes(Random random) {
        byte[] b = new byte[1 + random.nextInt(300)];
        random.nextBytes(b);
        return new String(b, StandardCharsets.ISO_8859_1) + "\r\n\r\n";
    }

    /** Tokens that are no tokens, on the writers' own files: 400, never a write. */
    private Void badTokens(URI base, long end) throws Exception {
        List<String> bad = List.of("5x", "-1", "99999999999999999999", "0x10", "1 2", "+4", "1.0", "07");
        for (int n = 0; System.nanoTime() < end; n++) {
            Http.Response r = Http.put(base.resolve("/files/w" + (n % WRITERS)), "bad-token",
                    Map.of("Fencing-Token", bad.get(n % bad.size())));
            count("bad token", r.status());
            if (r.status() != 400) {
                violations.add("token '" + bad.get(n % bad.size()) + "': " + r.status());
            }
        }
        return null;
    }

    /** Liveness and readiness, twice a second: never down (no bound here makes the proxy unready). */
    private Void watch(URI base, long end) throws Exception {
        AtomicInteger down = new AtomicInteger();
        while (System.nanoTime() < end) {
            for (String path : List.of("/health/live", "/health/ready")) {
                Http.Response r = Http.get(base.resolve(path));
                count(path, r.status());
                if (r.status() != 200) {
                    down.incrementAndGet();
                    violations.add(path + ": " + r.status() + " " + r.body());
                }
            }
            Thread.sleep(500);
        }
        return null;
    }

    /** The status of the first answer on a connection, or -1 when it was closed without one. */
    private static int status(InputStream in) throws IOException {
        byte[] head = in.readNBytes(12);
        String line = new String(head, StandardCharsets.ISO_8859_1);
        return line.startsWith("HTTP/1.1 ") && line.length() >= 12 ? Integer.parseInt(line.substring(9, 12)) : -1;
    }
}
