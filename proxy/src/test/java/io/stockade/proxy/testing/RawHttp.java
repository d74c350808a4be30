package io.stockade.proxy.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.http.HttpHeaders;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

import io.stockade.testing.Http;

/**
 * HTTP/1.1 over a plain socket, byte for byte, for what a well-behaved client library would not send: duplicate
 * headers, {@code ..} segments (java.net.http and java.net.URI normalise dot segments away), odd framing, a body
 * cut short.
 */
public final class RawHttp {
    private RawHttp() {
    }

    /**
     * Sends {@code request} exactly as written and reads one response: until its {@code Content-Length} is in, the
     * server closes, or 10 s pass.
     */
    public static Http.Response send(int port, String request) throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(10_000);
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            ByteArrayOutputStream all = new ByteArrayOutputStream();
            byte[] buf = new byte[8192];
            int n;
            try {
                while ((n = in.read(buf)) >= 0) {
                    all.write(buf, 0, n);
                    if (complete(all.toString(StandardCharsets.ISO_8859_1))) {
                        break;
                    }
                }
            } catch (java.net.SocketTimeoutException e) {
                // take what we have
            }
            return parse(all.toString(StandardCharsets.UTF_8));
        }
    }

    /**
     * Sends a whole request ({@code Host: localhost}, {@code Connection: close}, the body's {@code Content-Length}
     * when there is a body, then {@code headers} as written), half-closes, and reads the answer until the server
     * closes; a chunked body is de-chunked, an answer without a head has status -1 and the bytes as its body.
     */
    public static Http.Response send(int port, String method, String rawPath, String body, String... headers)
            throws IOException {
        byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder(method + " " + rawPath + " HTTP/1.1\r\nHost: localhost\r\n"
                + "Connection: close\r\n");
        if (body != null) {
            head.append("Content-Length: ").append(bytes.length).append("\r\n");
        }
        return sendAndHalfClose(port, head, headers, bytes);
    }

    /**
     * A {@code PUT} that announces {@code declared} bytes, sends only {@code sent} of them, then half-closes the
     * connection; the answer is read as {@link #send(int, String, String, String, String...)} reads it.
     */
    public static Http.Response sendCutShort(int port, String rawPath, int declared, int sent, String... headers)
            throws IOException {
        StringBuilder head = new StringBuilder("PUT " + rawPath + " HTTP/1.1\r\nHost: localhost\r\n"
                + "Connection: close\r\nContent-Length: " + declared + "\r\n");
        return sendAndHalfClose(port, head, headers, "x".repeat(sent).getBytes(StandardCharsets.ISO_8859_1));
    }

    /** Sends {@code head} with {@code headers} after it, then {@code body}, half-closes, and reads to the close. */
    private static Http.Response sendAndHalfClose(int port, StringBuilder head, String[] headers, byte[] body)
            throws IOException {
        for (String h : headers) {
            head.append(h).append("\r\n");
        }
        head.append("\r\n");
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(body);
            out.flush();
            // Helidon answers "Connection: close" but leaves the socket open until the client is done sending.
            s.shutdownOutput();
            return readToClose(s.getInputStream());
        }
    }

    private static boolean complete(String text) {
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            return false;
        }
        String head = text.substring(0, end).toLowerCase(Locale.ROOT);
        int cl = head.indexOf("content-length:");
        if (cl < 0) {
            return false;
        }
        int eol = head.indexOf("\r\n", cl);
        long len = Long.parseLong(head.substring(cl + 15, eol < 0 ? head.length() : eol).trim());
        return text.length() - end - 4 >= len;
    }

    private static Http.Response parse(String text) {
        int end = text.indexOf("\r\n\r\n");
        String head = end < 0 ? text : text.substring(0, end);
        String body = end < 0 ? "" : text.substring(end + 4);
        String[] lines = head.split("\r\n");
        return new Http.Response(Integer.parseInt(lines[0].split(" ")[1]), body, headers(lines));
    }

    private static Http.Response readToClose(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        try {
            in.transferTo(all);
        } catch (java.net.SocketException e) {
            // a reset after the answer: keep what arrived
        }
        String text = all.toString(StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            return new Http.Response(-1, text, headers(new String[0]));
        }
        String[] lines = text.substring(0, end).split("\r\n");
        HttpHeaders headers = headers(lines);
        String body = text.substring(end + 4);
        if ("chunked".equalsIgnoreCase(headers.firstValue("Transfer-Encoding").orElse(null))) {
            body = unchunk(body);
        }
        return new Http.Response(Integer.parseInt(lines[0].split(" ")[1]), body, headers);
    }

    /** The header fields of a response head (its first line is the status line). */
    private static HttpHeaders headers(String[] lines) {
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) {
                headers.computeIfAbsent(lines[i].substring(0, colon).trim(), k -> new ArrayList<>())
                        .add(lines[i].substring(colon + 1).trim());
            }
        }
        return HttpHeaders.of(headers, (a, b) -> true);
    }

    private static String unchunk(String s) {
        StringBuilder b = new StringBuilder();
        int i = 0;
        while (i < s.length()) {
            int eol = s.indexOf("\r\n", i);
            int size = Integer.parseInt(s.substring(i, eol).split(";")[0].trim(), 16);
            if (size == 0) {
                break;
            }
            b.append(s, eol + 2, eol + 2 + size);
            i = eol + 2 + size + 2;
        }
        return b.toString();
    }
}
