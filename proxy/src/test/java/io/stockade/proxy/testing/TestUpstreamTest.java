package io.stockade.proxy.testing;

import java.io.ByteArrayInputStream;
import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TestUpstreamTest {

    private TestUpstream up;

    @BeforeEach
    void start() {
        up = TestUpstream.start();
    }

    @AfterEach
    void stop() {
        up.close();
    }

    @Test
    void storesAndServesWithEtags() throws Exception {
        URI a = up.uri("/docs/a");
        Http.Response created = Http.put(a, "one", Map.of());
        assertEquals(201, created.status());
        assertEquals("\"v1\"", created.header("ETag").orElseThrow());

        Http.Response got = Http.get(a);
        assertEquals(200, got.status());
        assertEquals("one", got.body());
        assertEquals("\"v1\"", got.header("ETag").orElseThrow());

        Http.Response replaced = Http.put(a, "two", Map.of());
        assertEquals(204, replaced.status());
        assertEquals("\"v2\"", replaced.header("ETag").orElseThrow());
        assertEquals("two", up.contentText("/docs/a").orElseThrow());
        assertEquals("\"v2\"", up.etag("/docs/a").orElseThrow());

        Http.Response head = Http.send("HEAD", a, HttpRequest.BodyPublishers.noBody(), Map.of());
        assertEquals(200, head.status());
        assertEquals("", head.body());
        assertEquals("\"v2\"", head.header("ETag").orElseThrow());

        assertEquals(204, Http.delete(a, Map.of()).status());
        assertEquals(404, Http.get(a).status());
        assertEquals(404, Http.delete(a, Map.of()).status());
        assertTrue(up.content("/docs/a").isEmpty());
        assertEquals(-1, up.bytesReceived("/docs/a"));

        Http.Response post = Http.send("POST", a, HttpRequest.BodyPublishers.ofString("x"), Map.of());
        assertEquals(405, post.status());
        assertEquals(Arrays.asList("one", "two", null), up.appliedBodies("/docs/a"));
    }

    @Test
    void ifMatchAndIfNoneMatchOnPutAndDelete() throws Exception {
        URI a = up.uri("/a");
        // If-Match on an absent resource fails, even with *
        assertEquals(412, Http.put(a, "x", Map.of("If-Match", "*")).status());
        assertEquals(412, Http.put(a, "x", Map.of("If-Match", "\"v1\"")).status());
        assertTrue(up.content("/a").isEmpty());
        // If-None-Match: * creates only
        assertEquals(201, Http.put(a, "first", Map.of("If-None-Match", "*")).status());
        assertEquals(412, Http.put(a, "again", Map.of("If-None-Match", "*")).status());
        String etag = up.etag("/a").orElseThrow();

        assertEquals(412, Http.put(a, "stale", Map.of("If-Match", "\"v999\"")).status());
        assertEquals(412, Http.put(a, "weak", Map.of("If-Match", "W/" + etag)).status(), "If-Match is strong");
        assertEquals(412, Http.put(a, "inm", Map.of("If-None-Match", "W/" + etag)).status(), "If-None-Match is weak");
        assertEquals("first", up.contentText("/a").orElseThrow());

        Http.Response ok = Http.put(a, "second", Map.of("If-Match", "\"v77\", " + etag));
        assertEquals(204, ok.status());
        String etag2 = ok.header("ETag").orElseThrow();
        assertNotEquals(etag, etag2);
        assertEquals(204, Http.put(a, "third", Map.of("If-Match", "*")).status());

        assertEquals(412, Http.delete(a, Map.of("If-Match", etag2)).status(), "stale delete");
        assertEquals("third", up.contentText("/a").orElseThrow());
        assertEquals(204, Http.delete(a, Map.of("If-Match", up.etag("/a").orElseThrow())).status());
        assertEquals(412, Http.delete(a, Map.of("If-Match", "*")).status());

        assertEquals(Arrays.asList("first", "second", "third", null), up.appliedBodies("/a"));
    }

    @Test
    void ignoreConditionsMakesANaiveUpstream() throws Exception {
        URI a = up.uri("/a");
        Http.put(a, "one", Map.of());
        up.ignoreConditions(true);
        assertEquals(204, Http.put(a, "blind", Map.of("If-Match", "\"v999\"")).status());
        assertEquals(204, Http.put(a, "blind2", Map.of("If-None-Match", "*")).status());
        assertEquals("blind2", up.contentText("/a").orElseThrow());
        up.ignoreConditions(false);
        assertEquals(412, Http.put(a, "no", Map.of("If-Match", "\"v999\"")).status());
    }

    @Test
    void ifMatchRaceHasExactlyOneWinnerPerRound() throws Exception {
        int threads = 16;
        int rounds = 25;
        URI a = up.uri("/race");
        Http.put(a, "seed", Map.of());
        try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
            for (int round = 0; round < rounds; round++) {
                String etag = up.etag("/race").orElseThrow();
                CountDownLatch go = new CountDownLatch(1);
                List<Future<Integer>> results = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    String value = "r" + round + "-t" + t;
                    results.add(pool.submit(() -> {
                        go.await();
                        return Http.put(a, value, Map.of("If-Match", etag)).status();
                    }));
                }
                go.countDown();
                int won = 0;
                int lost = 0;
                for (Future<Integer> f : results) {
                    int status = f.get();
                    if (status == 204) {
                        won++;
                    } else if (status == 412) {
                        lost++;
                    }
                }
                assertEquals(1, won, "round " + round);
                assertEquals(threads - 1, lost, "round " + round);
                List<AppliedWrite> applied = up.applied("/race");
                assertEquals(round + 2, applied.size());
                assertEquals(applied.getLast().bodyText(), up.contentText("/race").orElseThrow());
                assertTrue(applied.getLast().bodyText().startsWith("r" + round + "-"));
            }
        }
        assertEquals(1 + rounds * threads, up.requestCount());
    }

    @Test
    void aNaiveUpstreamLetsEveryRacerWin() throws Exception {
        up.ignoreConditions(true);
        URI a = up.uri("/race");
        Http.put(a, "seed", Map.of());
        String etag = up.etag("/race").orElseThrow();
        CountDownLatch go = new CountDownLatch(1);
        try (ExecutorService pool = Executors.newFixedThreadPool(16)) {
            List<Future<Integer>> results = new ArrayList<>();
            for (int t = 0; t < 16; t++) {
                String value = "t" + t;
                results.add(pool.submit(() -> {
                    go.await();
                    return Http.put(a, value, Map.of("If-Match", etag)).status();
                }));
            }
            go.countDown();
            for (Future<Integer> f : results) {
                assertEquals(204, f.get());
            }
        }
        assertEquals(17, up.applied("/race").size(), "the control for the race test: without conditions all win");
    }

    @Test
    void delayedWriteLandsAfterTheClientGaveUp() throws Exception {
        up.delayWrites(Duration.ofMillis(700));
        long sent = System.nanoTime();
        assertThrows(HttpTimeoutException.class, () -> shortTimeoutPut(up.uri("/slow"), "late", 150));
        assertEquals(1, up.requestCount(), "received at once");
        assertTrue(up.applied().isEmpty(), "not applied yet");
        assertEquals(1, up.inFlight());

        assertTrue(up.awaitApplied(1, Duration.ofSeconds(5)));
        AppliedWrite w = up.applied().getFirst();
        assertTrue(w.nanoTime() - sent >= Duration.ofMillis(700).toNanos(), "applied after the delay");
        assertEquals("late", up.contentText("/slow").orElseThrow());
        assertTrue(up.awaitQuiet(Duration.ofSeconds(5)));
        assertEquals(0, up.inFlight());
    }

    @Test
    void delayedWritesCheckPreconditionsWhenTheyLand() throws Exception {
        Http.put(up.uri("/k"), "v", Map.of());
        String etag = up.etag("/k").orElseThrow();
        up.delayWrites(Duration.ofMillis(400));
        assertThrows(HttpTimeoutException.class, () -> shortTimeoutPut(up.uri("/k"), "zombie", 100, "If-Match", etag));
        up.delayWrites(Duration.ZERO);
        assertEquals(204, Http.put(up.uri("/k"), "fresh", Map.of("If-Match", etag)).status());
        assertTrue(up.awaitQuiet(Duration.ofSeconds(5)));
        assertEquals("fresh", up.contentText("/k").orElseThrow(), "the zombie's If-Match failed when it landed");
        assertEquals(List.of("v", "fresh"), up.appliedBodies("/k"));
    }

    @Test
    void delayAfterApplyAppliesBeforeAnswering() throws Exception {
        up.delayAfterApply(Duration.ofMillis(600));
        assertThrows(HttpTimeoutException.class, () -> shortTimeoutPut(up.uri("/x"), "done", 150));
        assertEquals("done", up.contentText("/x").orElseThrow(), "applied although the answer is still pending");
        assertEquals(1, up.inFlight());
        assertTrue(up.awaitQuiet(Duration.ofSeconds(5)));
    }

    @Test
    void recordsRequestsAndAppliedWrites() throws Exception {
        Http.put(up.uri("/r/1"), "a", Map.of("Fencing-Token", "7", "X-Forwarded-For", "10.0.0.1"));
        Http.put(up.uri("/r/2"), "b", Map.of("If-Match", "\"nope\""));
        Http.get(up.uri("/r/1?q=1"));
        Http.delete(up.uri("/r/1"), Map.of("Fencing-Token", "8"));

        assertEquals(4, up.requestCount());
        List<Map<String, List<String>>> headers = up.receivedHeaders();
        assertEquals(List.of("7"), headers.get(0).get("fencing-token"));
        assertEquals(List.of("10.0.0.1"), headers.get(0).get("x-forwarded-for"));
        assertTrue(headers.get(0).containsKey("host"));
        assertTrue(headers.stream().flatMap(h -> h.keySet().stream()).allMatch(k -> k.equals(k.toLowerCase())));
        ReceivedRequest get = up.received().get(2);
        assertEquals("GET", get.method());
        assertEquals("/r/1", get.path());
        assertEquals("q=1", get.query());

        List<AppliedWrite> applied = up.applied();
        assertEquals(2, applied.size(), "the 412 left no trace");
        assertEquals("PUT", applied.get(0).method());
        assertEquals("/r/1", applied.get(0).path());
        assertArrayEquals("a".getBytes(), applied.get(0).body());
        assertEquals("7", applied.get(0).header("Fencing-Token"));
        assertEquals("DELETE", applied.get(1).method());
        assertNull(applied.get(1).body());
        assertEquals("8", applied.get(1).header("fencing-token"));
        assertEquals(1, applied.get(0).seq());
        assertEquals(2, applied.get(1).seq());
        assertTrue(applied.get(0).nanoTime() <= applied.get(1).nanoTime());

        up.ignoreConditions(true).delayWrites(Duration.ofMillis(1));
        up.reset();
        assertEquals(0, up.requestCount());
        assertTrue(up.applied().isEmpty());
        assertTrue(up.receivedHeaders().isEmpty());
        assertTrue(up.content("/r/1").isEmpty());
        Http.Response after = Http.put(up.uri("/r/1"), "c", Map.of("If-Match", "*"));
        assertEquals(412, after.status(), "reset turned conditions back on");
        assertEquals(201, Http.put(up.uri("/r/1"), "c", Map.of()).status());
        assertEquals(1, up.applied().getFirst().seq());
        assertFalse(up.etag("/r/1").orElseThrow().equals("\"v1\""), "ETags are never reused");
    }

    @Test
    void discardBodiesStreamsLargeBodiesWithoutKeepingThem() throws Exception {
        up.discardBodies(true);
        long size = 64L * 1024 * 1024 + 123;
        Http.Response r = Http.send("PUT", up.uri("/big"),
                HttpRequest.BodyPublishers.ofInputStream(() -> new PatternStream(size)), Map.of());
        assertEquals(201, r.status());
        long crc = PatternStream.crc32c(size);
        assertEquals(size, up.bytesReceived("/big"));
        assertEquals(crc, up.crc32c("/big"));
        assertThrows(IllegalStateException.class, () -> up.content("/big"));
        assertNull(up.applied().getFirst().body());

        Http.Response get = Http.get(up.uri("/big"));
        assertEquals(200, get.status());
        assertEquals("", get.body());
        assertEquals(Long.toString(size), get.header("X-Body-Bytes").orElseThrow());
        assertEquals(Long.toHexString(crc), get.header("X-Body-Crc32c").orElseThrow());

        up.discardBodies(false);
        Http.put(up.uri("/small"), "123456789", Map.of());
        assertEquals(9, up.bytesReceived("/small"));
        assertEquals(0xe3069283L, up.crc32c("/small"), "CRC-32C's published check value (RFC 3720, B.4)");
        assertEquals("123456789", up.contentText("/small").orElseThrow());
        assertEquals(-1, up.crc32c("/none"));
    }

    @Test
    void thePatternCheckNamesTheFirstByteThatDiffersAndALengthThatDoesNot() throws Exception {
        long size = 200_000;
        PatternStream.assertIsPattern(new PatternStream(size), size, "the pattern itself");
        byte[] changed = new PatternStream(size).readAllBytes();
        changed[131_073] ^= 1;
        AssertionError flipped = assertThrows(AssertionError.class,
                () -> PatternStream.assertIsPattern(new ByteArrayInputStream(changed), size, "flipped"));
        assertTrue(flipped.getMessage().startsWith("flipped: byte 131073 is 0x"), flipped.getMessage());
        AssertionError shorter = assertThrows(AssertionError.class,
                () -> PatternStream.assertIsPattern(new PatternStream(size - 1), size, "short"));
        assertEquals("short: ended after 199999 of the pattern's 200000 bytes", shorter.getMessage());
        AssertionError longer = assertThrows(AssertionError.class,
                () -> PatternStream.assertIsPattern(new PatternStream(size + 1), size, "long"));
        assertEquals("long: more than the pattern's 200000 bytes", longer.getMessage());
        assertNotEquals(PatternStream.crc32c(size), PatternStream.crc32c(size - 1));
    }

    private static void shortTimeoutPut(URI uri, String body, long timeoutMillis, String... headers) throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(Duration.ofMillis(timeoutMillis))
                .PUT(HttpRequest.BodyPublishers.ofString(body));
        if (headers.length > 0) {
            b.headers(headers);
        }
        Http.client().send(b.build(), HttpResponse.BodyHandlers.discarding());
    }
}
