package io.stockade.proxy.upstream;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pool of keep-alive upstream connections: an idle connection is parked in a read, so whatever arrives while no
 * request owns it (bytes an upstream sends late, after an answer was read; its silent close) takes it out of the
 * pool the moment it arrives, and the next request goes out on a new connection and reads its own answer. Before,
 * a connection back in the pool for less than 50 ms was reused unchecked: the late bytes became the next request's
 * answer (here: the late 204 instead of the upstream's 202).
 */
class UpstreamPoolIT {
    Upstream upstream;
    UpstreamClient client;

    @BeforeEach
    void start() throws IOException {
        upstream = new Upstream();
        client = UpstreamClient.create(URI.create("http://127.0.0.1:" + upstream.port()), null,
                Duration.ofSeconds(2), 8);
    }

    @AfterEach
    void stop() throws IOException {
        client.close();
        upstream.close();
    }

    @Test
    void lateBytesOnAnIdleConnectionTakeItOutOfThePoolAndNeverBecomeTheNextAnswer() throws Exception {
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        upstream.late = "HTTP/1.1 204 No Content\r\n\r\n";
        assertEquals(201, put("/a"));
        assertTrue(upstream.lateSent.await(5, TimeUnit.SECONDS), "the upstream sent its late bytes");
        awaitNoIdleConnection("the late bytes");
        upstream.late = null;
        upstream.answers.add("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
        assertEquals(202, put("/b"), "the second request's own answer, not the late bytes of the first");
        assertEquals(2, upstream.connections.size(), "the second request went out on a new connection");
        assertEquals(List.of("PUT /a HTTP/1.1", "PUT /b HTTP/1.1"), upstream.requestLines);
    }

    @Test
    void anIdleConnectionTheUpstreamClosesLeavesThePoolAtOnce() throws Exception {
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        upstream.closeAfterAnswer = true;
        assertEquals(201, put("/a"));
        awaitNoIdleConnection("the upstream's close");
        upstream.closeAfterAnswer = false;
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        assertEquals(201, put("/b"));
        assertEquals(2, upstream.connections.size());
    }

    @Test
    void aQuietIdleConnectionIsReusedAndItsParkedReadIsTheNextAnswer() throws Exception {
        for (int i = 0; i < 50; i++) {
            upstream.answers.add("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n" + (10 + i));
            assertEquals(200, put("/k" + i));
            assertEquals(1, client.idleConnections());
        }
        assertEquals(1, upstream.connections.size(), "one keep-alive connection for every request");
    }

    @Test
    void anAnswerThatDoesNotComeOnAReusedConnectionTimesOut() throws Exception {
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        assertEquals(201, put("/a"));
        upstream.silent = true;
        long started = System.nanoTime();
        UpstreamFailure failure = org.junit.jupiter.api.Assertions.assertThrows(UpstreamFailure.class,
                () -> client.request("PUT", "127.0.0.1", "/b").send(Duration.ofMillis(300)));
        long millis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertTrue(failure.getMessage().contains("did not answer in time"), failure.getMessage());
        assertTrue(millis >= 250 && millis < 5_000, millis + " ms");
        assertEquals(1, upstream.connections.size(), "sent on the pooled connection");
    }

    private int put(String target) throws Exception {
        try (UpstreamResponse r = client.request("PUT", "127.0.0.1", target).send(Duration.ofSeconds(5))) {
            r.readAll(1024);
            return r.status();
        }
    }

    private void awaitNoIdleConnection(String after) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (client.idleConnections() != 0 && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertEquals(0, client.idleConnections(), "the connection stayed in the pool after " + after);
    }

    /** Reads each request's head and answers with the next scripted answer; may send bytes late or close. */
    static final class Upstream implements AutoCloseable {
        final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
        final List<Socket> connections = new CopyOnWriteArrayList<>();
        final List<String> requestLines = new CopyOnWriteArrayList<>();
        final List<String> answers = new CopyOnWriteArrayList<>();
        final CountDownLatch lateSent = new CountDownLatch(1);
        volatile String late;
        volatile boolean closeAfterAnswer;
        volatile boolean silent;

        Upstream() throws IOException {
            Thread.ofVirtual().start(() -> {
                while (!server.isClosed()) {
                    try {
                        Socket s = server.accept();
                        connections.add(s);
                        Thread.ofVirtual().start(() -> serve(s));
                    } catch (IOException e) {
                        return;
                    }
                }
            });
        }

        int port() {
            return server.getLocalPort();
        }

        private void serve(Socket s) {
            try (s; InputStream in = s.getInputStream(); OutputStream out = s.getOutputStream()) {
                while (true) {
                    String head = readHead(in);
                    if (head == null) {
                        return;
                    }
                    requestLines.add(head.substring(0, head.indexOf("\r\n")));
                    if (silent) {
                        continue;
                    }
                    out.write(answers.removeFirst().getBytes(StandardCharsets.ISO_8859_1));
                    out.flush();
                    if (closeAfterAnswer) {
                        return;
                    }
                    String extra = late;
                    if (extra != null) {
                        Thread.sleep(20); // after the client has read the answer and pooled the connection
                        out.write(extra.getBytes(StandardCharsets.ISO_8859_1));
                        out.flush();
                        lateSent.countDown();
                    }
                }
            } catch (IOException | InterruptedException e) {
                // the client closed the connection
            }
        }

        private static String readHead(InputStream in) throws IOException {
            ByteArrayOutputStream head = new ByteArrayOutputStream();
            int b;
            while ((b = in.read()) >= 0) {
                head.write(b);
                byte[] h = head.toByteArray();
                int n = h.length;
                if (n >= 4 && h[n - 4] == '\r' && h[n - 3] == '\n' && h[n - 2] == '\r' && h[n - 1] == '\n') {
                    return head.toString(StandardCharsets.ISO_8859_1);
                }
            }
            return null;
        }

        @Override
        public void close() throws IOException {
            server.close();
            for (Socket s : connections) {
                s.close();
            }
        }
    }
}
