package io.stockade.proxy.upstream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.OptionalLong;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.io.BulkInputStream;

import io.helidon.webserver.CloseConnectionException;
import org.jspecify.annotations.Nullable;

/**
 * An upstream's answer: the status line and headers read, the body framed (RFC 9112 section 6.3) and read
 * through {@link #body()}. Closing it returns the connection to the pool when the body was read to its end and
 * the connection may carry another request; otherwise the connection is closed.
 */
public final class UpstreamResponse implements AutoCloseable {
    /** The most bytes of a response head (status line and headers). */
    static final int MAX_HEAD = 64 * 1024;

    private final UpstreamClient client;
    private final UpstreamClient.Connection connection;
    private final int status;
    private final String reason;
    private final List<String> names;
    private final List<String> values;
    private final Body body;
    private boolean keepAlive;
    private boolean closed;
    /** The request was not sent to its end (an early answer): the connection is aborted, never closed gracefully. */
    private boolean requestUnfinished;

    private UpstreamResponse(UpstreamClient client, UpstreamClient.Connection connection, int status, String reason,
                             List<String> names, List<String> values, boolean keepAlive, boolean headRequest)
            throws UpstreamFailure {
        this.client = client;
        this.connection = connection;
        this.status = status;
        this.reason = reason;
        this.names = names;
        this.values = values;
        this.keepAlive = keepAlive;
        this.body = frame(headRequest);
    }

    /** Reads the answer's head from the connection, skipping interim (1xx) answers. */
    static UpstreamResponse read(UpstreamClient client, UpstreamClient.Connection connection, boolean headRequest)
            throws UpstreamFailure {
        boolean anyByte = false;
        try {
            while (true) {
                List<String> lines = new ArrayList<>();
                int headBytes = 0;
                while (true) {
                    String line = readLine(connection, MAX_HEAD - headBytes);
                    if (line == null) {
                        throw new UpstreamFailure(anyByte ? "closed the connection in the middle of its answer's "
                                + "head" : "closed the connection without answering",
                                true, false, null);
                    }
                    anyByte = true;
                    headBytes += line.length() + 2;
                    if (line.isEmpty()) {
                        if (lines.isEmpty()) {
                            continue; // RFC 9112 section 2.2: ignore empty lines before the status line
                        }
                        break;
                    }
                    lines.add(line);
                }
                String statusLine = lines.get(0);
                if (!statusLine.startsWith("HTTP/1.") || statusLine.length() < 12 || statusLine.charAt(8) != ' ') {
                    throw protocol("its status line is not HTTP/1.x: '" + shorten(statusLine) + "'");
                }
                int status = parseStatus(statusLine);
                String reason = statusLine.length() > 13 ? statusLine.substring(13) : "";
                boolean http10 = statusLine.charAt(7) == '0';
                List<String> names = new ArrayList<>(lines.size());
                List<String> values = new ArrayList<>(lines.size());
                for (int i = 1; i < lines.size(); i++) {
                    String line = lines.get(i);
                    int colon = line.indexOf(':');
                    if (colon <= 0 || line.charAt(0) == ' ' || line.charAt(0) == '\t'
                            || line.charAt(colon - 1) == ' ' || line.charAt(colon - 1) == '\t') {
                        throw protocol("sent a malformed header line: '" + shorten(line) + "'");
                    }
                    names.add(line.substring(0, colon));
                    values.add(line.substring(colon + 1).strip());
                }
                if (status / 100 == 1) {
                    if (status == 101) {
                        throw protocol("switched protocols (101), which the proxy does not relay");
                    }
                    continue; // 100 Continue, 102, 103: interim, the final answer follows
                }
                boolean keepAlive = !http10 && !hasToken(names, values, "connection", "close");
                return new UpstreamResponse(client, connection, status, reason, names, values, keepAlive,
                        headRequest);
            }
        } catch (UpstreamFailure e) {
            throw e;
        } catch (IOException e) {
            boolean handshake = TlsRefusals.refusedInHandshake(e);
            boolean timedOut = !handshake && e instanceof SocketTimeoutException;
            throw new UpstreamFailure(timedOut ? "did not answer in time"
                    : handshake ? "refused the TLS handshake, nothing was sent: " + e.getMessage()
                    : "reading the upstream's answer failed: " + e.getMessage(), !handshake, timedOut, e);
        }
    }

    private static int parseStatus(String line) throws UpstreamFailure {
        int status = 0;
        for (int i = 9; i < 12; i++) {
            char c = line.charAt(i);
            if (c < '0' || c > '9') {
                throw protocol("its status code is not three digits: '" + shorten(line) + "'");
            }
            status = status * 10 + (c - '0');
        }
        if (status < 100 || (line.length() > 12 && line.charAt(12) != ' ')) {
            throw protocol("its status line is malformed: '" + shorten(line) + "'");
        }
        return status;
    }

    /** The framing of the body, RFC 9112 section 6.3. */
    private Body frame(boolean headRequest) throws UpstreamFailure {
        if (headRequest || status == 204 || status == 304) {
            return new Fixed(0);
        }
        List<String> te = all("transfer-encoding");
        if (!te.isEmpty()) {
            // With both, Transfer-Encoding wins and the connection is not reused (section 6.3, item 3).
            if (!all("content-length").isEmpty()) {
                keepAlive = false;
            }
            String last = te.get(te.size() - 1);
            int comma = last.lastIndexOf(',');
            String coding = (comma < 0 ? last : last.substring(comma + 1)).strip().toLowerCase(Locale.ROOT);
            if (coding.equals("chunked")) {
                return new Chunked();
            }
            keepAlive = false;
            return new UntilClose();
        }
        OptionalLong length = contentLength();
        if (length.isPresent()) {
            return new Fixed(length.getAsLong());
        }
        keepAlive = false;
        return new UntilClose();
    }

    /** The status code. */
    public int status() {
        return status;
    }

    /** The reason phrase as sent (may be empty). */
    public String reason() {
        return reason;
    }

    /** How many header lines the answer has. */
    public int headerCount() {
        return names.size();
    }

    /** The name of header line {@code i}, as sent. */
    public String name(int i) {
        return names.get(i);
    }

    /** The value of header line {@code i}, without surrounding whitespace. */
    public String value(int i) {
        return values.get(i);
    }

    /** The first value of a header (the name compared without case), or null. */
    public @Nullable String first(String name) {
        for (int i = 0; i < names.size(); i++) {
            if (names.get(i).equalsIgnoreCase(name)) {
                return values.get(i);
            }
        }
        return null;
    }

    /** Every value of a header, in order. */
    public List<String> all(String name) {
        List<String> out = new ArrayList<>(1);
        for (int i = 0; i < names.size(); i++) {
            if (names.get(i).equalsIgnoreCase(name)) {
                out.add(values.get(i));
            }
        }
        return out;
    }

    /**
     * The {@code Content-Length} the upstream declared, as a number; empty when it declared none. For HEAD and
     * 304 it tells the length of the representation, not of this answer's (absent) body: see {@link #emptyBody()}.
     *
     * @throws UpstreamFailure when the upstream declared a malformed or conflicting length
     */
    public OptionalLong contentLength() throws UpstreamFailure {
        List<String> lengths = all("content-length");
        if (lengths.isEmpty()) {
            return OptionalLong.empty();
        }
        long value = -1;
        for (String header : lengths) {
            // limit 0 drops trailing empty strings: "5," is one length (an empty element elsewhere is refused)
            for (String part : header.split(",", 0)) {
                long v = parseLength(part.strip());
                if (value >= 0 && v != value) {
                    throw protocol("sent conflicting Content-Length values " + lengths);
                }
                value = v;
            }
        }
        return OptionalLong.of(value);
    }

    private static long parseLength(String text) throws UpstreamFailure {
        if (text.isEmpty() || text.length() > 18) {
            throw protocol("sent a malformed Content-Length '" + shorten(text) + "'");
        }
        long v = 0;
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') {
                throw protocol("sent a malformed Content-Length '" + shorten(text) + "'");
            }
            v = v * 10 + (c - '0');
        }
        return v;
    }

    /** Whether the answer has no body by definition or by a declared length of zero. */
    public boolean emptyBody() {
        return body instanceof Fixed fixed && fixed.length == 0;
    }

    /**
     * Whether the body turns out to be empty: declared empty (or none by definition), or, for a body that runs
     * until the connection closes, closed before its first byte. Consumes nothing (it may wait for that first
     * byte, within the read timeout).
     */
    public boolean bodyIsEmpty() throws IOException {
        if (emptyBody()) {
            return true;
        }
        if (!(body instanceof UntilClose) || connection.position < connection.limit) {
            return false;
        }
        if (connection.fill() < 0) {
            body.finished = true;
            return true;
        }
        return false;
    }

    /**
     * The body. Reading past a failure of the upstream throws an {@link IOException}; a body cut short by the
     * upstream (closed before its declared end, or before its last chunk) is such a failure, never a silent end.
     */
    public InputStream body() {
        return body;
    }

    /**
     * Reads the whole body (at most {@code max} bytes; more is an {@link IOException}).
     */
    public byte[] readAll(int max) throws IOException {
        byte[] all = body.readNBytes(max);
        if (body.read() >= 0) {
            throw new IOException("the upstream's answer is longer than " + max + " bytes");
        }
        return all;
    }

    /**
     * This answer's connection is aborted when the answer is done (an early answer to a request cut short: what is
     * left of the request in the send buffer is discarded, never delivered to be read as another request).
     */
    void neverReuse() {
        keepAlive = false;
        requestUnfinished = true;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        if (keepAlive && body.finished && connection.position == connection.limit) {
            client.release(connection);
        } else if (body.finished && !requestUnfinished) {
            connection.close();
        } else {
            connection.abort(); // an answer not read to its end, or a request not sent to its end
        }
    }

    private static boolean hasToken(List<String> names, List<String> values, String name, String token) {
        for (int i = 0; i < names.size(); i++) {
            if (names.get(i).equalsIgnoreCase(name)) {
                for (String part : values.get(i).split(",", -1)) {
                    if (part.strip().equalsIgnoreCase(token)) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    /**
     * Reads one line (up to LF, without the LF and a CR before it), or null at end of stream before any byte of it.
     *
     * @param max the most bytes the line may have
     */
    static @Nullable String readLine(UpstreamClient.Connection c, int max) throws IOException {
        StringBuilder line = null;
        while (true) {
            for (int i = c.position; i < c.limit; i++) {
                if (c.buffer[i] == '\n') {
                    String part = new String(c.buffer, c.position, i - c.position, StandardCharsets.ISO_8859_1);
                    c.position = i + 1;
                    String text = line == null ? part : line.append(part).toString();
                    if (text.endsWith("\r")) {
                        text = text.substring(0, text.length() - 1);
                    }
                    if (text.length() > max) {
                        throw protocol("the upstream sent a line longer than " + max + " bytes");
                    }
                    return text;
                }
            }
            if (c.limit > c.position) {
                if (line == null) {
                    line = new StringBuilder();
                }
                line.append(new String(c.buffer, c.position, c.limit - c.position, StandardCharsets.ISO_8859_1));
                c.position = c.limit;
                if (line.length() > max + 1) {
                    throw protocol("the upstream sent a line longer than " + max + " bytes");
                }
            }
            if (c.fill() < 0) {
                if (line != null) {
                    throw new IOException("the upstream closed the connection in the middle of a line");
                }
                return null;
            }
        }
    }

    /**
     * Relays the body to {@code out}, the client's response stream, and closes both. Once that stream was taken
     * the answer's head is committed (it cannot become a problem document any more), and closing the stream after a
     * failure would end the body as if it were complete: a failure on either side closes the client connection
     * instead ({@link #brokeOff}), and {@code out} is left unclosed.
     */
    public void relayBody(OutputStream out) throws IOException {
        try (InputStream in = body()) {
            // A body of declared length goes through one buffer of up to RELAY_BUFFER_BYTES (the whole body when it
            // is smaller), read straight from the socket (Body.take): a 4 MiB answer takes 32 reads from the
            // upstream instead of 256 (the listener still writes it in Helidon's 8 KiB pieces; docs/benchmarks.md,
            // "S3 GET relay"). A chunked or until-close body, often small, keeps a 16 KiB buffer.
            long size = body instanceof Fixed f ? Math.min(RELAY_BUFFER_BYTES, f.length) : 16 * 1024;
            byte[] buffer = new byte[(int) Math.max(1, size)];
            int n;
            while ((n = in.read(buffer, 0, buffer.length)) >= 0) {
                out.write(buffer, 0, n);
            }
            out.close(); // the last chunk or the last bytes: a client gone now is a broken-off answer too
        } catch (IOException | RuntimeException e) {
            throw brokeOff(e);
        }
    }

    /**
     * The answer's head was relayed and its body broke off midway (the upstream failed, or the client went away):
     * the client connection is closed, so the client sees a truncated answer (fewer bytes than its
     * {@code Content-Length}, or no last chunk) and can never take it for a whole one, nor wait for the rest.
     */
    public static CloseConnectionException brokeOff(Exception e) {
        Logger.getLogger(UpstreamResponse.class.getName()).log(Level.WARNING,
                "relaying the upstream answer failed midway; closing the client connection", e);
        return new CloseConnectionException("the upstream's answer broke off midway", e);
    }

    private static UpstreamFailure protocol(String message) {
        return new UpstreamFailure(message, true, false, null);
    }

    private static String shorten(String text) {
        return text.length() <= 80 ? text : text.substring(0, 80) + "...";
    }

    /** The largest buffer {@link #relayBody} relays an answer's body through. */
    static final int RELAY_BUFFER_BYTES = 128 * 1024;

    /** A framed body. {@link #finished} once its last byte (and chunked trailer) has been read. */
    private abstract class Body extends BulkInputStream {
        boolean finished;

        /**
         * Copies up to {@code len} buffered or freshly read bytes; -1 at the connection's end. A read at least as
         * large as the connection's buffer, with nothing left in it, goes straight from the socket into {@code b}
         * (callers never ask for more than the body's frame holds, so nothing of the next answer is read).
         */
        int take(byte[] b, int off, int len) throws IOException {
            UpstreamClient.Connection c = connection;
            if (c.position == c.limit && len >= c.buffer.length) {
                return c.in.read(b, off, len);
            }
            if (c.position == c.limit && c.fill() < 0) {
                return -1;
            }
            int n = Math.min(len, c.limit - c.position);
            System.arraycopy(c.buffer, c.position, b, off, n);
            c.position += n;
            return n;
        }

        @Override
        public void close() {
            UpstreamResponse.this.close();
        }
    }

    private final class Fixed extends Body {
        final long length;
        private long left;

        Fixed(long length) {
            this.length = length;
            this.left = length;
            this.finished = length == 0;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (left == 0) {
                finished = true;
                return -1;
            }
            // The body's last byte is never read straight from the socket (take): it comes through the connection's
            // buffer, with whatever the upstream sent after it, so that bytes past Content-Length keep the connection
            // out of the pool instead of becoming the next answer's start.
            int n = take(b, off, (int) Math.min(len, Math.max(1, left - 1)));
            if (n < 0) {
                throw new IOException("the upstream closed the connection " + left + " bytes before the end of its"
                        + " answer's body (Content-Length " + length + ")");
            }
            left -= n;
            if (left == 0) {
                finished = true;
            }
            return n;
        }

        @Override
        public int available() {
            return (int) Math.min(left, connection.limit - connection.position);
        }
    }

    private final class UntilClose extends Body {
        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            int n = take(b, off, len);
            if (n < 0) {
                finished = true;
            }
            return n;
        }
    }

    private final class Chunked extends Body {
        private long left; // bytes left in the current chunk
        private boolean started;

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return 0;
            }
            if (finished) {
                return -1;
            }
            if (left == 0) {
                if (started) {
                    expectCrlf();
                }
                started = true;
                left = chunkSize();
                if (left == 0) {
                    // trailer section: fields until an empty line, ignored
                    int trailer = 0;
                    String line;
                    while ((line = readLine(connection, MAX_HEAD)) != null && !line.isEmpty()) {
                        trailer += line.length();
                        if (trailer > MAX_HEAD) {
                            throw new IOException("the upstream's chunked trailer is longer than " + MAX_HEAD);
                        }
                    }
                    if (line == null) {
                        throw new IOException("the upstream closed the connection in its chunked trailer");
                    }
                    finished = true;
                    return -1;
                }
            }
            int n = take(b, off, (int) Math.min(len, Math.max(1, left - 1)));
            if (n < 0) {
                throw new IOException("the upstream closed the connection in the middle of a chunk");
            }
            left -= n;
            return n;
        }

        private void expectCrlf() throws IOException {
            String line = readLine(connection, 2);
            if (line == null || !line.isEmpty()) {
                throw new IOException("the upstream's chunk is not followed by CRLF");
            }
        }

        private long chunkSize() throws IOException {
            String line = readLine(connection, 1024);
            if (line == null) {
                throw new IOException("the upstream closed the connection before a chunk's size");
            }
            int semi = line.indexOf(';'); // chunk extensions are ignored (RFC 9112 section 7.1.1)
            String hex = (semi < 0 ? line : line.substring(0, semi)).strip();
            if (hex.isEmpty() || hex.length() > 15) {
                throw new IOException("the upstream sent a malformed chunk size '" + shorten(line) + "'");
            }
            long size = 0;
            for (int i = 0; i < hex.length(); i++) {
                int d = Character.digit(hex.charAt(i), 16);
                if (d < 0) {
                    throw new IOException("the upstream sent a malformed chunk size '" + shorten(line) + "'");
                }
                size = size * 16 + d;
            }
            return size;
        }
    }
}
