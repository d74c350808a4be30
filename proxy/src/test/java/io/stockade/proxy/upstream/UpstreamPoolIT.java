package io.stockade.proxy.upstream;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.testing.ScriptedUpstream;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pool of keep-alive upstream connections: a pooled connection is checked before a request is written to it, so
 * whatever arrived while no request owned it (bytes an upstream sends late, after an answer was read; its silent
 * close) keeps it from being reused, and the request goes out on a new connection and reads its own answer. Before,
 * a connection back in the pool for less than 50 ms was reused unchecked: the late bytes became the next request's
 * answer (here: the late 204 instead of the upstream's 202).
 */
class UpstreamPoolIT {
    ScriptedUpstream upstream;
    UpstreamClient client;

    @BeforeEach
    void start() throws IOException {
        upstream = new ScriptedUpstream();
        client = UpstreamClient.create(URI.create("http://127.0.0.1:" + upstream.port()), null,
                Duration.ofSeconds(2), 8);
    }

    @AfterEach
    void stop() throws IOException {
        client.close();
        upstream.close();
    }

    @Test
    void lateBytesOnAnIdleConnectionNeverBecomeTheNextAnswer() throws Exception {
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        upstream.late = "HTTP/1.1 204 No Content\r\n\r\n";
        assertEquals(201, put("/a"));
        assertTrue(upstream.lateSent.await(5, TimeUnit.SECONDS), "the upstream sent its late bytes");
        upstream.late = null;
        upstream.answers.add("HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n");
        assertEquals(202, put("/b"), "the second request's own answer, not the late bytes of the first");
        assertEquals(2, upstream.connections.size(), "the second request went out on a new connection");
        assertEquals(List.of("PUT /a HTTP/1.1", "PUT /b HTTP/1.1"), upstream.requestLines);
    }

    @Test
    void anIdleConnectionTheUpstreamClosedIsNeverReused() throws Exception {
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        upstream.closeAfterAnswer = true;
        assertEquals(201, put("/a"));
        awaitClosed(upstream.connections.getFirst());
        upstream.closeAfterAnswer = false;
        upstream.answers.add("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
        assertEquals(201, put("/b"));
        assertEquals(2, upstream.connections.size());
    }

    @Test
    void aQuietIdleConnectionIsReused() throws Exception {
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

    /** Until the upstream's side of the connection is closed (its close is then on its way to the client). */
    private static void awaitClosed(Socket socket) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (!socket.isClosed() && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        assertTrue(socket.isClosed(), "the upstream closed its side");
    }
}
