package io.stockade.conformance.writer;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;

import org.jspecify.annotations.Nullable;

/**
 * A minimal HTTP/1.1 client: one request per connection ({@code Connection: close}), no pooling, no hidden retries,
 * so every write the suite records is exactly one request on the wire, and a fault on one connection hits one write.
 */
public final class RawHttp {

    /** A status and a body read as UTF-8. */
    public record Response(int status, String body) {
    }

    private RawHttp() {
    }

    /**
     * Sends one request and reads the whole answer.
     *
     * @param body    the body, or null for none
     * @param headers extra headers, or null
     * @param timeout connect timeout and read timeout (each)
     * @throws IOException on any failure, including a timeout: the outcome is then unknown
     */
    public static Response send(URI uri, String method, @Nullable String body, @Nullable Map<String, String> headers,
                                Duration timeout)
            throws IOException {
        int port = uri.getPort() < 0 ? 80 : uri.getPort();
        String target = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        if (uri.getRawQuery() != null) {
            target += "?" + uri.getRawQuery();
        }
        byte[] payload = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
        StringBuilder head = new StringBuilder()
                .append(method).append(' ').append(target).append(" HTTP/1.1\r\n")
                .append("Host: ").append(host(uri)).append("\r\n")
                .append("Connection: close\r\n")
                .append("Content-Length: ").append(payload.length).append("\r\n");
        if (headers != null) {
            headers.forEach((k, v) -> head.append(k).append(": ").append(v).append("\r\n"));
        }
        head.append("\r\n");
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress(uri.getHost(), port), (int) timeout.toMillis());
            s.setSoTimeout((int) timeout.toMillis());
            s.setTcpNoDelay(true);
            OutputStream out = s.getOutputStream();
            out.write(head.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(payload);
            out.flush();
            return read(s.getInputStream());
        }
    }

    /** The {@code Host} header sent for {@code uri} (always with the port: {@link SigV4} signs this value). */
    public static String host(URI uri) {
        return uri.getHost() + ":" + (uri.getPort() < 0 ? 80 : uri.getPort());
    }

    private static Response read(InputStream in) throws IOException {
        String status = line(in);
        if (status == null || !status.startsWith("HTTP/1.")) {
            throw new IOException("no HTTP answer: " + status);
        }
        int code = Integer.parseInt(status.substring(9, 12));
        long length = -1;
        boolean chunked = false;
        String l;
        while ((l = line(in)) != null && !l.isEmpty()) {
            int colon = l.indexOf(':');
            if (colon < 0) {
                continue;
            }
            String name = l.substring(0, colon).trim().toLowerCase(Locale.ROOT);
            String value = l.substring(colon + 1).trim();
            if (name.equals("content-length")) {
                length = Long.parseLong(value);
            } else if (name.equals("transfer-encoding") && value.toLowerCase(Locale.ROOT).contains("chunked")) {
                chunked = true;
            }
        }
        if (l == null) {
            throw new IOException("connection closed in the headers");
        }
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        if (chunked) {
            while (true) {
                String size = line(in);
                if (size == null) {
                    throw new IOException("connection closed in a chunked body");
                }
                // limit 0 (split's default) kept: a line of only ";" has no element 0 and throws, as before
                int n = Integer.parseInt(size.split(";", 0)[0].trim(), 16);
                if (n == 0) {
                    break;
                }
                body.write(in.readNBytes(n));
                line(in);
            }
        } else if (length >= 0) {
            byte[] b = in.readNBytes((int) length);
            if (b.length < length) {
                throw new IOException("connection closed in the body");
            }
            body.write(b);
        } else if (code != 204 && code != 304) {
            body.write(in.readAllBytes());
        }
        return new Response(code, body.toString(StandardCharsets.UTF_8));
    }

    private static @Nullable String line(InputStream in) throws IOException {
        StringBuilder b = new StringBuilder();
        int c;
        while ((c = in.read()) >= 0) {
            if (c == '\n') {
                int len = b.length();
                return len > 0 && b.charAt(len - 1) == '\r' ? b.substring(0, len - 1) : b.toString();
            }
            b.append((char) c);
        }
        return b.isEmpty() ? null : b.toString();
    }
}
