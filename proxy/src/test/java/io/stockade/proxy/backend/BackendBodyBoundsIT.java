package io.stockade.proxy.backend;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.logging.Level;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.log.DecisionLog;
import io.stockade.proxy.testing.LogLines;
import io.stockade.proxy.testing.OpenSockets;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The s3 and postgres backends read the body through the policy's bounds ({@code Exchange.body()}): a stalled body
 * is cut off at the listener's read-timeout and a trickled one at the policy's body-timeout, and nothing lands
 * (s3proxy has no object, no statement ran). Before, both read the request's content directly: no watchdog, no
 * body-timeout, and a stalled body held its request for ever.
 */
class BackendBodyBoundsIT {
    @TempDir
    Path dir;
    /** The proxy's decision lines: what it answered each request, whether or not the client saw the answer. */
    private LogLines decisions;

    @AfterEach
    void stopCapturing() {
        if (decisions != null) {
            decisions.close();
        }
    }

    // ---- s3 ----

    @Test
    void s3AStalledOrTrickledBodyIsCutOffAndNothingLandsInTheBucket() throws Exception {
        try (S3Fixture s3 = S3Fixture.start(dir.resolve("j"), Map.of("AUTH", "none", "READ_TIMEOUT", "1s",
                "BODY_TIMEOUT", "2s"))) {
            s3.direct().createBucket(b -> b.bucket("bounded"));
            int port = s3.proxy.server().port();
            decisions = new LogLines(DecisionLog.DECISIONS, Level.INFO); // after the start: it installs the handlers

            // Stalled: 10 of 100 bytes, then nothing. read-timeout (1s) cuts it off.
            assertCutOff("s3", port, "PUT /bounded/stalled.txt HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token: 1\r\nContent-Length: 100\r\n\r\n" + "s".repeat(10), 0,
                    Duration.ofMillis(3500));
            // Trickled: a byte every 300 ms, each read within read-timeout; body-timeout (2s) cuts it off.
            assertCutOff("s3", port, "PUT /bounded/trickled.txt HTTP/1.1\r\nHost: x\r\n"
                    + "Fencing-Token: 1\r\nContent-Length: 100\r\n\r\n", 300, Duration.ofMillis(4500));

            for (String key : new String[] {"stalled.txt", "trickled.txt"}) {
                assertThrows(NoSuchKeyException.class, () -> s3.direct().headObject(b -> b.bucket("bounded").key(key))
                        , key + " must not have landed");
            }
            // The half-sent upstream requests' connections were closed, not leaked. s3proxy also holds idle
            // keep-alive connections (the proxy's pooled HEADs, the test's own SDK client), so the count is not
            // zero: it must not grow with more cut-off bodies. Leaked connections would add one per body.
            int before = OpenSockets.establishedOn(upstreamPort(s3));
            int more = 3;
            for (int i = 0; i < more; i++) {
                assertCutOff("s3", port, "PUT /bounded/stalled-" + i + ".txt HTTP/1.1\r\n"
                        + "Host: x\r\nFencing-Token: 1\r\nContent-Length: 100\r\n\r\n" + "s".repeat(10), 0,
                        Duration.ofMillis(3500));
            }
            int open = OpenSockets.awaitAtMost(upstreamPort(s3), before, Duration.ofSeconds(3));
            assertTrue(open <= before, "s3proxy connections left open after " + more + " more cut-off bodies: "
                    + before + " before, " + open + " after");
            // And the scope is usable: the same token writes (the cut-off writes landed nowhere).
            Http.Response ok = Http.put(s3.proxy.uri("/bounded/stalled.txt"), "whole", Map.of("Fencing-Token", "1"));
            assertEquals(200, ok.status(), ok.body());
        }
    }

    private static int upstreamPort(S3Fixture s3) {
        return s3.directUri().getPort();
    }

    // ---- postgres ----

    static final String PG_POLICY = """
            server:
              limits: {read-timeout: 1s}
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: notes
                match: {path: "/notes/{id}", methods: [PUT]}
                scope: notes/{id}
                limits: {body-timeout: 2s}
                backend:
                  type: postgres
                  datasource: {url: "${PG_URL}", user: postgres}
                  params:
                    id: path
                    note: {from: body, type: string}
                  statements:
                    PUT: INSERT INTO notes (id, note) VALUES (:id, :note)
            """;

    @Test
    void postgresAStalledOrTrickledBodyIsCutOffAndNoStatementRuns() throws Exception {
        try (Pg pg = Pg.create("CREATE TABLE notes (id text, note text)");
             ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"), PG_POLICY, Map.of("PG_URL", pg.url()))) {
            int port = proxy.server().port();
            decisions = new LogLines(DecisionLog.DECISIONS, Level.INFO);
            assertCutOff("notes", port, "PUT /notes/a HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"note\": \"", 0,
                    Duration.ofMillis(3500));
            assertCutOff("notes", port, "PUT /notes/b HTTP/1.1\r\nHost: x\r\nFencing-Token: 1\r\n"
                    + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n", 300, Duration.ofMillis(4500));
            assertEquals("0", pg.single("SELECT count(*) FROM notes").orElseThrow(), "no statement may have run");
            Http.Response ok = Http.put(proxy.uri("/notes/a"), "{\"note\": \"whole\"}", Map.of("Fencing-Token", "1",
                    "Content-Type", "application/json"));
            assertEquals(2, ok.status() / 100, ok.body());
            assertEquals("1", pg.single("SELECT count(*) FROM notes").orElseThrow());
        }
    }

    // ---- helpers ----

    /**
     * Sends {@code head}, then (with {@code trickleMillis} > 0) one body byte every so often, and asserts the proxy
     * answered 408 or closed the connection within {@code within}, and that its decision line for the request says
     * 408. The line is what tells: the client may never see the answer (a watchdog's cut-off closes the connection;
     * a trickled byte arriving after the answer resets it), so another answer (once a 400 IncompleteBody, from the
     * atomic S3 backend reading a small body whole) could hide behind a closed connection.
     */
    private void assertCutOff(String policy, int port, String head, long trickleMillis, Duration within)
            throws Exception {
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setTcpNoDelay(true);
            long start = System.nanoTime();
            s.getOutputStream().write(head.getBytes(StandardCharsets.ISO_8859_1));
            s.getOutputStream().flush();
            String answer = "";
            boolean closed = false;
            while (!closed && Duration.ofNanos(System.nanoTime() - start).compareTo(within) < 0) {
                if (trickleMillis > 0) {
                    try {
                        s.getOutputStream().write('t');
                        s.getOutputStream().flush();
                    } catch (IOException gone) {
                        closed = true;
                        break;
                    }
                }
                String[] read = read(s, trickleMillis > 0 ? trickleMillis : 100);
                answer += read[0];
                closed = read[1] != null;
            }
            long took = Duration.ofNanos(System.nanoTime() - start).toMillis();
            assertTrue(closed || answer.startsWith("HTTP/1.1 408"), "not cut off within " + within.toMillis()
                    + " ms: '" + answer + "'");
            assertTrue(answer.isEmpty() || answer.startsWith("HTTP/1.1 408"), answer);
            assertTrue(took < within.toMillis(), "cut off after " + took + " ms");
        }
        String path = head.substring(head.indexOf(' ') + 1, head.indexOf(" HTTP/1.1"));
        String line = decisions.await(l -> l.contains("\"policy\":\"" + policy + "\"")
                && l.contains("\"path\":\"" + path + "\""), Duration.ofSeconds(2));
        assertTrue(line != null && line.contains("\"status\":408") && line.contains("\"outcome\":\"timed_out\""),
                "the decision line of " + path + " (what the proxy answered, whether or not the client saw it): "
                        + line);
    }

    /** What arrives within {@code millis}; [1] is non-null once the connection is closed. */
    private static String[] read(Socket s, long millis) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        s.setSoTimeout((int) millis);
        InputStream in = s.getInputStream();
        byte[] buf = new byte[4096];
        try {
            int n;
            while ((n = in.read(buf)) >= 0) {
                all.write(buf, 0, n);
            }
            return new String[] {all.toString(StandardCharsets.ISO_8859_1), "closed"};
        } catch (SocketTimeoutException e) {
            return new String[] {all.toString(StandardCharsets.ISO_8859_1), null};
        } catch (IOException reset) {
            return new String[] {all.toString(StandardCharsets.ISO_8859_1), "reset"};
        }
    }
}
