package io.stockade.proxy.upstream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.TestPolicies;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * S3 round three, item 1: a storage may answer before the request's body has arrived (RFC 9112 section 9.3: a 404
 * for a missing bucket, a 413, a failed condition) and close. The proxy then fails to send the rest of the body;
 * it used to answer 503 "Broken pipe" (unfenced) or 504 unknown outcome (fenced, the scope quarantined) for a write
 * the storage refused outright. Now it reads the early answer and relays it.
 */
class EarlyAnswerIT {
    @TempDir
    Path dir;

    /**
     * An upstream that reads a request's head, answers 413 at once, closes its side, reads and drops 64 KiB of the
     * body and closes: the rest of a larger body cannot be sent.
     */
    private static Thread earlyAnswerer(ServerSocket server, AtomicInteger requests) {
        Thread t = Thread.ofVirtual().start(() -> {
            while (!server.isClosed()) {
                try (Socket s = server.accept()) {
                    requests.incrementAndGet();
                    InputStream in = s.getInputStream();
                    StringBuilder head = new StringBuilder();
                    while (!head.toString().endsWith("\r\n\r\n")) {
                        int c = in.read();
                        if (c < 0) {
                            break;
                        }
                        head.append((char) c);
                    }
                    OutputStream out = s.getOutputStream();
                    out.write(("HTTP/1.1 413 Payload Too Large\r\nContent-Type: text/plain\r\nContent-Length: 9\r\n"
                            + "Connection: close\r\n\r\ntoo large").getBytes(StandardCharsets.US_ASCII));
                    out.flush();
                    s.shutdownOutput();
                    // a little of the body is read and dropped, then the connection closes: the rest cannot be sent
                    s.setSoTimeout(200);
                    in.readNBytes(64 * 1024);
                } catch (Exception e) {
                    // next
                }
            }
        });
        return t;
    }

    @Test
    void anEarlyRefusalOfTheHttpUpstreamIsRelayedNotAnUnknownOutcome() throws Exception {
        AtomicInteger requests = new AtomicInteger();
        try (ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress())) {
            earlyAnswerer(server, requests);
            try (ProxyFixture proxy = ProxyFixture.start(dir.resolve("j"),
                    TestPolicies.docsOverHttp("settle: 100ms", "timeout: 5s"),
                    Map.of("UPSTREAM", "http://127.0.0.1:" + server.getLocalPort()))) {
                Thread.sleep(200);
                byte[] big = new byte[4 << 20];
                Http.Response r = Http.put(proxy.uri("/docs/a"), big, Map.of("Fencing-Token", "5"));
                assertEquals(413, r.status(), r.body());
                assertEquals("too large", r.body());
                assertEquals(0.0, proxy.server().metrics().count("docs", Outcome.UNKNOWN_OUTCOME),
                        "the outcome is known: the upstream refused");
                // nothing quarantined: the next write goes straight to the upstream again
                Http.Response next = Http.put(proxy.uri("/docs/a"), big, Map.of("Fencing-Token", "6"));
                assertEquals(413, next.status(), next.body());
                assertTrue(requests.get() >= 2, "both reached the upstream");
            }
        }
    }

    @Test
    void aPutIntoAMissingBucketIsAnsweredNoSuchBucketNotAnUnknownOutcome() throws Exception {
        try (S3Fixture fixture = S3Fixture.start(dir.resolve("s3"));
             S3Client s3 = fixture.client()) {
            byte[] big = new byte[2 << 20];
            S3Exception e = assertThrows(S3Exception.class, () -> s3.putObject(b -> b.bucket("no-such-bucket")
                    .key("k").overrideConfiguration(S3Fixture.token(5)), RequestBody.fromBytes(big)));
            assertEquals(404, e.statusCode(), e.toString());
            assertEquals("NoSuchBucket", e.awsErrorDetails().errorCode(), e.toString());
        }
    }

    /**
     * A client that sends its body at a slow link's pace (2 MiB in about 3.5 s) still reads the store's early answer:
     * the proxy reads on at the client's pace before it closes, where it used to stop after 2 s and close with bytes
     * unread, a TCP reset the client met as a broken pipe while still writing (the AWS SDK then sent the body three
     * more times, each ending the same way).
     */
    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aClientStillSendingSlowlyReadsTheEarlyAnswerNotABrokenPipe() throws Exception {
        try (S3Fixture fixture = S3Fixture.start(dir.resolve("s3"));
             S3Client s3 = fixture.client()) {
            int size = 2 << 20;
            List<long[]> passes = new CopyOnWriteArrayList<>(); // each pass over the body: its first and last read
            S3Exception e = assertThrows(S3Exception.class, () -> s3.putObject(b -> b.bucket("no-such-bucket")
                    .key("k").overrideConfiguration(S3Fixture.token(5)),
                    RequestBody.fromContentProvider(() -> paced(size, 64 * 1024, 110, passes), size, "x/test")));
            assertEquals(404, e.statusCode(), e.toString());
            assertEquals("NoSuchBucket", e.awsErrorDetails().errorCode(), e.toString());
            long[] last = passes.getLast(); // the SDK may read the body once for a checksum before it sends it
            long sendMillis = TimeUnit.NANOSECONDS.toMillis(last[1] - last[0]);
            assertTrue(sendMillis > 2500, "the body took longer to send than the old linger of 2 s: " + sendMillis);
        }
    }

    /**
     * {@code size} zero bytes, {@code step} of them at a time with {@code pauseMillis} between; the times of its
     * first and latest read are kept in {@code passes}.
     */
    private static InputStream paced(int size, int step, long pauseMillis, List<long[]> passes) {
        long[] times = {System.nanoTime(), System.nanoTime()};
        passes.add(times);
        return new InputStream() {
            private int left = size;
            private int sinceSleep;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0];
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                if (left == 0) {
                    return -1;
                }
                if (sinceSleep == step) {
                    sinceSleep = 0;
                    try {
                        Thread.sleep(pauseMillis);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IOException("interrupted", e);
                    }
                }
                times[1] = System.nanoTime();
                int n = Math.min(Math.min(len, left), step - sinceSleep);
                left -= n;
                sinceSleep += n;
                return n;
            }
        };
    }
}
