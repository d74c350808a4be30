package io.stockade.proxy.backend.file;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;

/**
 * HTTP/1.1 over a plain socket, so the server receives the path exactly as written (java.net.http and
 * java.net.URI normalise dot segments away).
 */
final class RawHttp {
    private RawHttp() {
    }

    record Response(int status, Map<String, String> headers, String body) {
        String header(String name) {
            return headers.get(name.toLowerCase(Locale.ROOT));
        }
    }

    /** Sends a whole request and reads the answer until the server closes. */
    static Response send(int port, String method, String rawPath, String body, String... headers)
            throws IOException {
        byte[] bytes = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder(method + " " + rawPath + " HTTP/1.1\r\nHost: localhost\r\n"
                + "Connection: close\r\n");
        if (body != null) {
            head.append("Content-Length: ").append(bytes.length).append("\r\n");
        }
        for (String h : headers) {
            head.append(h).append("\r\n");
        }
        head.append("\r\n");
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(bytes);
            out.flush();
            // Helidon answers "Connection: close" but leaves the socket open until the client is done sending.
            s.shutdownOutput();
            return read(s.getInputStream());
        }
    }

    /**
     * Announces {@code declared} bytes, sends only {@code sent} of them, then half-closes the connection.
     */
    static Response sendCutShort(int port, String rawPath, int declared, int sent, String... headers)
            throws IOException {
        StringBuilder head = new StringBuilder("PUT " + rawPath + " HTTP/1.1\r\nHost: localhost\r\n"
                + "Connection: close\r\nContent-Length: " + declared + "\r\n");
        for (String h : headers) {
            head.append(h).append("\r\n");
        }
        head.append("\r\n");
        try (Socket s = new Socket("127.0.0.1", port)) {
            s.setSoTimeout(5_000);
            OutputStream out = s.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write("x".repeat(sent).getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            s.shutdownOutput();
            return read(s.getInputStream());
        }
    }

    private static Response read(InputStream in) throws IOException {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        try {
            in.transferTo(all);
        } catch (java.net.SocketException e) {
            // a reset after the answer: keep what arrived
        }
        String text = all.toString(StandardCharsets.ISO_8859_1);
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            return new Response(-1, Map.of(), text);
        }
        String[] lines = text.substring(0, end).split("\r\n");
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, String> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            headers.put(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
                    lines[i].substring(colon + 1).trim());
        }
        String body = text.substring(end + 4);
        if ("chunked".equalsIgnoreCase(headers.get("transfer-encoding"))) {
            body = unchunk(body);
        }
        return new Response(status, headers, body);
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
