package io.stockade.proxy;

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
import java.util.Map;

import io.stockade.testing.Http;

/**
 * Sends a request byte for byte over a plain socket, for what a well-behaved client library would not send
 * (duplicate headers, {@code ..} segments, odd framing). Reads one response until the server closes.
 */
public final class RawHttp {
    private RawHttp() {
    }

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

    private static boolean complete(String text) {
        int end = text.indexOf("\r\n\r\n");
        if (end < 0) {
            return false;
        }
        String head = text.substring(0, end).toLowerCase();
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
        int status = Integer.parseInt(lines[0].split(" ")[1]);
        Map<String, List<String>> headers = new LinkedHashMap<>();
        for (int i = 1; i < lines.length; i++) {
            int colon = lines[i].indexOf(':');
            if (colon > 0) {
                headers.computeIfAbsent(lines[i].substring(0, colon).trim(), k -> new ArrayList<>())
                        .add(lines[i].substring(colon + 1).trim());
            }
        }
        return new Http.Response(status, body, HttpHeaders.of(headers, (a, b) -> true));
    }
}
