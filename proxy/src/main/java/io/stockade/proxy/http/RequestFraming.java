package io.stockade.proxy.http;

import io.helidon.http.DirectHandler;
import io.helidon.http.RequestException;
import io.helidon.http.Status;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;

/**
 * What one client connection sends, as Helidon's HTTP/1.1 parser gets to read it: the bytes pass through unchanged,
 * except chunked request bodies, which are checked against RFC 9112 section 7.1 and re-framed.
 * <p>
 * <b>Why.</b> Helidon 4.5's chunked reader ({@code Http1Connection.readNextChunk}) takes a chunk-size line only
 * when it is bare hexadecimal and a last chunk only when no trailer field follows it, so a valid body with a chunk
 * extension ({@code 5;a=b}) or a trailer field failed with 400 while it streamed, after the write's token had
 * raised the fence. It also skips the two bytes after each chunk's data without checking that they are CRLF, and
 * holds each chunk in memory whole before handing it on (one 1 GiB chunk, 1 GiB of heap). The reader is private,
 * so this class sits below it instead: it follows the message framing of the connection and, for a chunked body,
 * checks every chunk-size line (hexadecimal size, extensions as {@code *( BWS ";" BWS token [ BWS "=" BWS
 * ( token / quoted-string ) ] )}), the CRLF after each chunk's data and the trailer section (field lines, at most
 * {@code maxTrailerBytes}), drops extensions and trailer fields (RFC 9112 7.1.1 lets a recipient ignore
 * extensions; RFC 9110 6.5.1 lets one that removes the chunked coding discard trailers), and hands Helidon the same
 * data as chunks of plain sizes, one per piece read from the socket. A body that breaks the rules fails its reader
 * with a 400 {@link RequestException}; the connection is then unusable for good: every later read fails too, so no
 * byte after a malformed body can ever be read as a request.
 * <p>
 * <b>Following the framing.</b> Request heads are scanned as they pass, never held back (the listener's header
 * deadline still starts at the request line), to learn each message's framing exactly as Helidon decides it: a
 * {@code Transfer-Encoding} whose codings are exactly {@code chunked} (and no {@code Content-Length}) is chunked;
 * else one {@code Content-Length} of digits gives the body's length; else there is no body. Anything else
 * (both headers, other codings, two lengths, a malformed line, a lone CR or LF, a folded line) is refused by
 * Helidon's parser, which then closes the connection; this class stops interpreting at that point and passes
 * every later byte through as it is, so it can never make Helidon read a message differently than it would
 * without it.
 * <p>
 * <b>HTTP/2.</b> A connection that opens with the HTTP/2 preface ({@code PRI * HTTP/2.0}, prior knowledge) is
 * reported ({@link #http2()}) instead of being handed on: the proxy speaks HTTP/1.1 only, and the caller answers
 * in HTTP/2's own terms (see {@link ClientConnections}).
 * <p>
 * Not thread-safe: one instance per connection, used by the connection's thread.
 */
final class RequestFraming {
    /** The HTTP/2 client connection preface (RFC 9113 section 3.4). */
    static final byte[] H2_PREFACE = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    /** The longest chunk-size line taken, extensions included. */
    static final int MAX_CHUNK_LINE = 4096;
    /** The largest chunk size taken (2^56 - 1: no sum of chunk sizes can overflow a long). */
    static final long MAX_CHUNK_SIZE = (1L << 56) - 1;

    private static final byte CR = '\r';
    private static final byte LF = '\n';
    private static final byte[] EMPTY = new byte[0];
    private static final byte[] CRLF = {CR, LF};
    private static final byte[] LAST_CHUNK = "0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);

    enum State {
        /** Before the first byte: the connection may open with the HTTP/2 preface. */
        START,
        /** A request head (request line and header lines). */
        HEAD,
        /** A body of a known length. */
        LENGTH_BODY,
        /** A chunk-size line. */
        CHUNK_SIZE,
        /** A chunk's data. */
        CHUNK_DATA,
        /** The CR after a chunk's data. */
        CHUNK_DATA_CR,
        /** The LF after a chunk's data. */
        CHUNK_DATA_LF,
        /** The trailer section after the last chunk. */
        TRAILERS,
        /** Helidon refuses what came; everything from here on is passed as it is. */
        PASSTHROUGH,
        /** A malformed body: every further read fails. */
        FAILED
    }

    private final int maxLine;
    private final int maxTrailerBytes;

    private State state = State.START;
    private boolean http2;
    private RequestException failure;
    /** START: the first bytes, while they may still be the HTTP/2 preface. */
    private byte[] held = EMPTY;

    /** The line being read (a head line, a chunk-size line or a trailer line), without its CRLF. */
    private byte[] line = new byte[256];
    private int lineLength;
    private boolean sawCr;

    // the message whose head is being read
    private boolean requestLine;
    private List<String> transferEncodings;
    private int contentLengths;
    private String contentLength;

    /** LENGTH_BODY: bytes left; CHUNK_DATA: bytes of the chunk left. */
    private long remaining;
    private long trailerBytes;

    // the output of one call of process
    private byte[] in;
    private int plainFrom;
    private Out out;

    /**
     * @param maxHeadLine     the longest head line worth reading (Helidon refuses longer ones)
     * @param maxTrailerBytes the largest trailer section taken
     */
    RequestFraming(int maxHeadLine, int maxTrailerBytes) {
        this.maxLine = Math.max(maxHeadLine, MAX_CHUNK_LINE);
        this.maxTrailerBytes = maxTrailerBytes;
    }

    State state() {
        return state;
    }

    /** Whether the connection opened with the HTTP/2 preface. */
    boolean http2() {
        return http2;
    }

    /** The refusal of a malformed body, once one was found; to be thrown by every later read. */
    RequestException failure() {
        return failure;
    }

    /**
     * Takes the next bytes read from the client.
     *
     * @return what Helidon's parser is to read of them (possibly nothing, never null): everything up to a malformed
     *         body's first bad byte, after which {@link #failure()} is set
     */
    byte[] process(byte[] bytes) {
        if (state == State.FAILED) {
            return EMPTY;
        }
        if (state == State.START) {
            byte[] data = held.length == 0 ? bytes : concat(held, bytes);
            int n = Math.min(data.length, H2_PREFACE.length);
            if (Arrays.equals(data, 0, n, H2_PREFACE, 0, n)) {
                if (n == H2_PREFACE.length) {
                    http2 = true;
                    state = State.PASSTHROUGH;
                    held = EMPTY;
                } else {
                    held = data; // not yet decided
                }
                return EMPTY;
            }
            held = EMPTY;
            newMessage();
            bytes = data;
        }
        this.in = bytes;
        // the bytes from the start are plain (passed as they are) unless the call starts inside a chunked body
        this.plainFrom = state == State.HEAD || state == State.LENGTH_BODY || state == State.PASSTHROUGH
                ? 0 : bytes.length;
        this.out = null;
        int i = 0;
        while (i < bytes.length && state != State.PASSTHROUGH && state != State.FAILED) {
            i = step(bytes, i);
        }
        byte[] result;
        if (state == State.FAILED) {
            // failures happen inside chunked bodies only, where nothing plain is pending
            result = out == null ? EMPTY : out.bytes();
        } else if (out == null) {
            result = plainFrom == 0 ? bytes : Arrays.copyOfRange(bytes, plainFrom, bytes.length);
        } else {
            out.write(bytes, plainFrom, bytes.length - plainFrom);
            result = out.bytes();
        }
        this.in = null;
        this.out = null;
        return result;
    }

    /** Reads from {@code b[i]} on in the current state; returns the index of the first byte not read. */
    private int step(byte[] b, int i) {
        switch (state) {
            case HEAD -> {
                return headByte(b[i], i);
            }
            case LENGTH_BODY -> {
                int n = (int) Math.min(remaining, b.length - i);
                remaining -= n;
                if (remaining == 0) {
                    newMessage();
                }
                return i + n;
            }
            case CHUNK_SIZE -> {
                chunkSizeByte(b[i]);
                return i + 1;
            }
            case CHUNK_DATA -> {
                int n = (int) Math.min(remaining, b.length - i);
                out().write(Long.toHexString(n).getBytes(StandardCharsets.US_ASCII));
                out().write(CRLF, 0, 2);
                out().write(b, i, n);
                out().write(CRLF, 0, 2);
                remaining -= n;
                if (remaining == 0) {
                    state = State.CHUNK_DATA_CR;
                }
                return i + n;
            }
            case CHUNK_DATA_CR, CHUNK_DATA_LF -> {
                boolean cr = state == State.CHUNK_DATA_CR;
                if (b[i] != (cr ? CR : LF)) {
                    fail("a chunk's data is not followed by CRLF (the chunk size does not match its data)");
                } else {
                    state = cr ? State.CHUNK_DATA_LF : State.CHUNK_SIZE;
                }
                return i + 1;
            }
            case TRAILERS -> {
                trailerByte(b[i], i);
                return i + 1;
            }
            default -> throw new IllegalStateException("no bytes are read in state " + state);
        }
    }

    // ------------------------------------------------------------------------------------------------ the head

    private void newMessage() {
        state = State.HEAD;
        requestLine = true;
        transferEncodings = null;
        contentLengths = 0;
        contentLength = null;
        lineLength = 0;
        sawCr = false;
    }

    private int headByte(byte c, int i) {
        if (sawCr) {
            sawCr = false;
            if (c != LF) {
                passThrough(); // a CR without LF: Helidon refuses the request
                return i;
            }
            headLine(i + 1);
        } else if (c == CR) {
            sawCr = true;
        } else if (c == LF) {
            passThrough(); // a bare LF: Helidon refuses the request
            return i;
        } else if (!append(c)) {
            passThrough(); // longer than Helidon takes
            return i;
        }
        return i + 1;
    }

    /** A head line ended (its LF is at {@code next - 1}). */
    private void headLine(int next) {
        int length = lineLength;
        lineLength = 0;
        if (requestLine) {
            requestLine = false;
            if (length == 0) {
                passThrough(); // Helidon takes no empty line before a request line
            }
            return;
        }
        if (length == 0) {
            bodyFraming(next);
            return;
        }
        if (line[0] == ' ' || line[0] == '\t') {
            passThrough(); // obs-fold: refused by Helidon
            return;
        }
        int colon = indexOf(line, length, (byte) ':');
        if (colon <= 0) {
            passThrough(); // not a field line: refused by Helidon
            return;
        }
        String name = new String(line, 0, colon, StandardCharsets.ISO_8859_1).toLowerCase(Locale.ROOT);
        if (name.equals("transfer-encoding")) {
            if (transferEncodings == null) {
                transferEncodings = new ArrayList<>(1);
            }
            for (String coding : value(colon + 1, length).split(",", -1)) {
                String c = coding.trim();
                if (!c.isEmpty()) {
                    transferEncodings.add(c.toLowerCase(Locale.ROOT));
                }
            }
        } else if (name.equals("content-length")) {
            contentLengths++;
            contentLength = value(colon + 1, length);
        }
    }

    /** The head ended at {@code next}: how is the body framed, as Helidon decides it. */
    private void bodyFraming(int next) {
        if (transferEncodings != null) {
            if (contentLengths == 0 && transferEncodings.size() == 1 && transferEncodings.getFirst().equals("chunked")) {
                flushPlain(next);
                state = State.CHUNK_SIZE;
                lineLength = 0;
                sawCr = false;
            } else {
                passThrough(); // refused by Helidon (400 or 501), which closes the connection
            }
            return;
        }
        if (contentLengths > 0) {
            if (contentLengths != 1 || !digits(contentLength) || contentLength.length() > 18) {
                passThrough(); // refused by Helidon
                return;
            }
            remaining = Long.parseLong(contentLength);
            if (remaining > 0) {
                state = State.LENGTH_BODY;
                return;
            }
        }
        newMessage();
    }

    private String value(int from, int to) {
        return new String(line, from, to - from, StandardCharsets.ISO_8859_1).strip();
    }

    // ------------------------------------------------------------------------------------------ the chunked body

    private void chunkSizeByte(byte c) {
        if (sawCr) {
            sawCr = false;
            if (c != LF) {
                fail("a chunk-size line has a CR without LF");
                return;
            }
            chunkSizeLine();
        } else if (c == CR) {
            sawCr = true;
        } else if (c == LF) {
            fail("a chunk-size line ends with a bare LF");
        } else if (lineLength >= MAX_CHUNK_LINE) {
            fail("a chunk-size line is longer than " + MAX_CHUNK_LINE + " bytes");
        } else {
            append(c);
        }
    }

    private void chunkSizeLine() {
        int length = lineLength;
        lineLength = 0;
        int p = 0;
        long size = 0;
        while (p < length && hex(line[p]) >= 0) {
            size = size * 16 + hex(line[p]);
            if (size > MAX_CHUNK_SIZE) {
                fail("a chunk size is too large");
                return;
            }
            p++;
        }
        if (p == 0) {
            fail("a chunk size is not hexadecimal");
            return;
        }
        String bad = extensions(line, p, length);
        if (bad != null) {
            fail("a chunk extension is malformed (" + bad + ")");
            return;
        }
        if (size > 0) {
            state = State.CHUNK_DATA;
            remaining = size;
        } else {
            state = State.TRAILERS;
            trailerBytes = 0;
        }
    }

    /**
     * Checks {@code chunk-ext = *( BWS ";" BWS chunk-ext-name [ BWS "=" BWS chunk-ext-val ] )} (RFC 9112 7.1.1),
     * allowing whitespace at the end of the line.
     *
     * @return null when valid, else what is wrong
     */
    static String extensions(byte[] s, int p, int end) {
        while (true) {
            p = skipBws(s, p, end);
            if (p == end) {
                return null;
            }
            if (s[p] != ';') {
                return "expected ';' at offset " + p;
            }
            p = skipBws(s, p + 1, end);
            int name = p;
            while (p < end && tchar(s[p])) {
                p++;
            }
            if (p == name) {
                return "an extension has no name";
            }
            int afterName = skipBws(s, p, end);
            if (afterName < end && s[afterName] == '=') {
                p = skipBws(s, afterName + 1, end);
                if (p < end && s[p] == '"') {
                    p = quotedString(s, p, end);
                    if (p < 0) {
                        return "an unterminated or invalid quoted value";
                    }
                } else {
                    int value = p;
                    while (p < end && tchar(s[p])) {
                        p++;
                    }
                    if (p == value) {
                        return "an extension has '=' but no value";
                    }
                }
            } else {
                p = afterName;
            }
        }
    }

    /** The index after the quoted-string starting at {@code s[p] == '"'}, or -1. */
    private static int quotedString(byte[] s, int p, int end) {
        p++;
        while (p < end) {
            int c = s[p] & 0xff;
            if (c == '"') {
                return p + 1;
            }
            if (c == '\\') {
                if (p + 1 >= end) {
                    return -1;
                }
                int q = s[p + 1] & 0xff;
                if (!(q == '\t' || q == ' ' || (q >= 0x21 && q <= 0x7e) || q >= 0x80)) {
                    return -1;
                }
                p += 2;
            } else if (c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) || (c >= 0x5d && c <= 0x7e)
                    || c >= 0x80) {
                p++;
            } else {
                return -1;
            }
        }
        return -1;
    }

    private void trailerByte(byte c, int i) {
        if (++trailerBytes > maxTrailerBytes) {
            fail("the trailer section is larger than " + maxTrailerBytes + " bytes");
            return;
        }
        if (sawCr) {
            sawCr = false;
            if (c != LF) {
                fail("a trailer line has a CR without LF");
                return;
            }
            int length = lineLength;
            lineLength = 0;
            if (length == 0) {
                // the end of the body: Helidon gets a last chunk without trailers, the next request follows
                out().write(LAST_CHUNK, 0, LAST_CHUNK.length);
                newMessage();
                plainFrom = i + 1;
                return;
            }
            String bad = fieldLine(line, length);
            if (bad != null) {
                fail("a trailer field is malformed (" + bad + ")");
            }
        } else if (c == CR) {
            sawCr = true;
        } else if (c == LF) {
            fail("a trailer line ends with a bare LF");
        } else if (!append(c)) {
            fail("a trailer line is longer than " + maxLine + " bytes");
        }
    }

    /** Checks {@code field-name ":" OWS field-value OWS}; returns null when valid, else what is wrong. */
    static String fieldLine(byte[] s, int end) {
        int p = 0;
        while (p < end && tchar(s[p])) {
            p++;
        }
        if (p == 0) {
            return s[0] == ' ' || s[0] == '\t' ? "a folded line" : "no field name";
        }
        if (p == end || s[p] != ':') {
            return "no ':' after the field name";
        }
        for (p++; p < end; p++) {
            int c = s[p] & 0xff;
            if (c < 0x20 && c != '\t' || c == 0x7f) {
                return "a control character in the value";
            }
        }
        return null;
    }

    // ------------------------------------------------------------------------------------------------- helpers

    private void passThrough() {
        state = State.PASSTHROUGH;
    }

    private void fail(String why) {
        state = State.FAILED;
        failure = RequestException.builder()
                .type(DirectHandler.EventType.BAD_REQUEST)
                .status(Status.BAD_REQUEST_400)
                .message("malformed chunked body: " + why)
                .safeMessage(true)
                .setKeepAlive(false)
                .build();
    }

    /** Copies the plain bytes before {@code to} to the output, which from then on is written explicitly. */
    private void flushPlain(int to) {
        out().write(in, plainFrom, to - plainFrom);
        plainFrom = in.length; // nothing plain until the body ends
    }

    private Out out() {
        if (out == null) {
            out = new Out(in.length + 64);
        }
        return out;
    }

    private boolean append(byte c) {
        if (lineLength == line.length) {
            if (line.length >= maxLine) {
                return false;
            }
            line = Arrays.copyOf(line, Math.min(maxLine, line.length * 2));
        }
        line[lineLength++] = c;
        return true;
    }

    private static int skipBws(byte[] s, int p, int end) {
        while (p < end && (s[p] == ' ' || s[p] == '\t')) {
            p++;
        }
        return p;
    }

    private static int hex(byte c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    /** RFC 9110 tchar. */
    static boolean tchar(byte b) {
        int c = b & 0xff;
        return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
                || c < 0x80 && "!#$%&'*+-.^_`|~".indexOf(c) >= 0;
    }

    private static boolean digits(String s) {
        if (s == null || s.isEmpty()) {
            return false;
        }
        for (int i = 0; i < s.length(); i++) {
            if (s.charAt(i) < '0' || s.charAt(i) > '9') {
                return false;
            }
        }
        return true;
    }

    private static int indexOf(byte[] s, int end, byte c) {
        for (int i = 0; i < end; i++) {
            if (s[i] == c) {
                return i;
            }
        }
        return -1;
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] r = Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, r, a.length, b.length);
        return r;
    }

    /** A growable byte buffer without the synchronization of ByteArrayOutputStream. */
    private static final class Out {
        private byte[] buf;
        private int size;

        Out(int capacity) {
            buf = new byte[capacity];
        }

        void write(byte[] b) {
            write(b, 0, b.length);
        }

        void write(byte[] b, int off, int len) {
            if (size + len > buf.length) {
                buf = Arrays.copyOf(buf, Math.max(buf.length * 2, size + len));
            }
            System.arraycopy(b, off, buf, size, len);
            size += len;
        }

        byte[] bytes() {
            return size == buf.length ? buf : Arrays.copyOf(buf, size);
        }
    }
}
