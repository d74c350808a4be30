package io.stockade.proxy.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;

/**
 * An HTTP/1.1 upstream on a loopback port that answers with scripted bytes, for what real servers do not do on
 * purpose: it reads each request's head (and a declared {@code Content-Length} body), then writes the next of
 * {@link #answers} (or {@link #answer} when none is queued) exactly as given; it may close after the answer, send
 * bytes late (after the answer, once the client has had time to pool the connection), or stay silent.
 */
public final class ScriptedUpstream implements AutoCloseable {
    private final ServerSocket server = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    /** Every connection accepted, in order. */
    public final List<Socket> connections = new CopyOnWriteArrayList<>();
    /** Every request line read, in order. */
    public final List<String> requestLines = new CopyOnWriteArrayList<>();
    /** Answers for the next requests, one each, first in first out. */
    public final List<String> answers = new CopyOnWriteArrayList<>();
    /** Counted down when {@link #late} bytes were sent. */
    public final CountDownLatch lateSent = new CountDownLatch(1);
    /** The answer when none is queued. */
    public volatile String answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
    /** Bytes sent 20 ms after each answer, on the same connection; null for none. */
    public volatile String late;
    /** Close the connection after each answer (without saying so, unless the answer does). */
    public volatile boolean closeAfterAnswer;
    /** Read requests and answer none. */
    public volatile boolean silent;

    public ScriptedUpstream() throws IOException {
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

    public int port() {
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
                for (String line : head.split("\r\n")) {
                    if (line.toLowerCase(java.util.Locale.ROOT).startsWith("content-length:")) {
                        in.readNBytes(Integer.parseInt(line.substring(15).trim()));
                    }
                }
                if (silent) {
                    continue;
                }
                String next = answers.isEmpty() ? answer : answers.removeFirst();
                out.write(next.getBytes(StandardCharsets.ISO_8859_1));
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
