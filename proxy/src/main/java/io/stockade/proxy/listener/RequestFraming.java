package io.stockade.proxy.listener;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Objects;

import io.helidon.http.DirectHandler;
import io.helidon.http.RequestException;
import io.helidon.http.Status;
import org.jspecify.annotations.Nullable;

/**
 * What one client connection sends, as Helidon's HTTP/1.1 parser gets to read it: the bytes pass through unchanged,
 * except where a chunked request body needs rewriting, and chunked bodies are checked against RFC 9112 section 7.1.
 * <p>
 * <b>Why.</b> Helidon 4.5's chunked reader ({@code Http1Connection.readNextChunk}) takes a chunk-size line only
 * when it is bare hexadecimal and a last chunk only when no trailer field follows it, so a valid body with a chunk
 * extension ({@code 5;a=b}) or a trailer field failed with 400 while it streamed, after the write's token had
 * raised the fence. It also skips the two bytes after each chunk's data without checking that they are CRLF, and
 * holds each chunk in memory whole before handing it on (one 1 GiB chunk, 1 GiB of heap). The reader is private,
 * so this class sits below it instead: it follows the message framing of the connection and, for a chunked body,
 * checks every chunk-size line (hexadecimal size, extensions as {@code *( BWS ";" BWS token [ BWS "=" BWS
 * ( token / quoted-string ) ] )}), the CRLF after each chunk's data and the trailer section (field lines, at most
 * {@code maxTrailerBytes}). It rewrites only what Helidon would refuse or hold: a size line with extensions or
 * spaces becomes a bare one (RFC 9112 7.1.1 lets a recipient ignore extensions), trailer fields are dropped (RFC
 * 9110 6.5.1 lets a recipient that removes the chunked coding discard them; nothing is forwarded as a header), and
 * a chunk larger than {@value #MAX_PIECE} bytes is announced to Helidon as pieces of at most that size. Plain
 * chunks pass untouched, so their sizes (and the upstream writes that follow them) stay the client's. A body that
 * breaks the rules fails Helidon's next read with a 400 {@link RequestException}: when the request's head came in
 * the same read from the socket, the parser never sees the request (it is refused before routing: no token read,
 * no fence raised); otherwise the parser is reading the body, which fails (after the token was admitted). Either
 * way the connection is unusable for good: every later read fails too, so no byte after a malformed body can ever
 * be read as a request.
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
    /** The start of every refusal's message. */
    static final String MALFORMED = "malformed chunked body: ";
    /** The longest chunk-size line taken, extensions included. */
    static final int MAX_CHUNK_LINE = 4096;
    /** The largest chunk size taken (2^56 - 1: no sum of chunk sizes can overflow a long). */
    static final long MAX_CHUNK_SIZE = (1L << 56) - 1;
    /** The largest chunk Helidon's reader is given whole (it holds a chunk in memory before passing it on). */
    static final int MAX_PIECE = 256 * 1024;

    private static final byte CR = '\r';
    private static final byte LF = '\n';
    private static final byte[] EMPTY = new byte[0];
    private static final byte[] CRLF = {CR, LF};

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
    private @Nullable RequestException failure;
    /** START: the first bytes, while they may still be the HTTP/2 preface. */
    private byte[] held = EMPTY;

    /** The line being read (a head line, a chunk-size line or a trailer line), without its CRLF. */
    private byte[] line = new byte[256];
    private int lineLength;
    private boolean sawCr;

    // the message whose head is being read
    private boolean requestLine;
    private @Nullable List<String> transferEncodings;
    private int contentLengths;
    private @Nullable String contentLength;

    /** LENGTH_BODY: bytes left; CHUNK_DATA: bytes of the chunk left. */
    private long remaining;
    /** CHUNK_DATA: bytes left of the piece announced to Helidon. */
    private long piece;
    private long trailerBytes;

    // one call of process: the input, where the bytes passed as they are start, what replaced others
    private byte @Nullable [] in;
    private int plainFrom;
    private @Nullable Out out;
    /** CHUNK_SIZE, TRAILERS: where the current line starts in the input, -1 when it started in an earlier call. */
    private int lineStart;
    /** Where the current message starts in the input (-1: in an earlier call), the output and plain run before it. */
    private int messageStart;
    private int messageOut;
    private int messagePlainFrom;

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
    @Nullable RequestException failure() {
        return failure;
    }

    /**
     * Takes the next bytes read from the client.
     *
     * @return what Helidon's parser is to read of them (possibly nothing, never null); once a malformed body was
     *         found ({@link #failure()}), only what came before the request it belongs to
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
            resetMessage();
            bytes = data;
        }
        this.in = bytes;
        this.plainFrom = 0;
        this.out = null;
        this.lineStart = lineLength == 0 && !sawCr ? 0 : -1;
        boolean messageNotStarted = state == State.HEAD && requestLine && lineLength == 0 && !sawCr;
        this.messageStart = messageNotStarted ? 0 : -1;
        this.messageOut = 0;
        this.messagePlainFrom = 0;
        int i = 0;
        while (i < bytes.length && state != State.PASSTHROUGH && state != State.FAILED) {
            i = step(bytes, i);
        }
        byte[] result;
        if (state == State.FAILED) {
            // A request whose head came in this same read never reaches the parser: it is refused before routing,
            // before any token is read (what came before it, earlier requests, is passed on as usual). Otherwise the
            // parser has its head already, and the failure ends the body it is reading.
            if (messageStart < 0) {
                result = EMPTY;
            } else {
                Out before = new Out(messageOut + messageStart - messagePlainFrom);
                if (out != null) {
                    before.write(out.buf, 0, messageOut);
                }
                before.write(bytes, messagePlainFrom, messageStart - messagePlainFrom);
                result = before.bytes();
            }
        } else {
            // a chunk-size or trailer line not complete yet is held back: it may still need rewriting
            int end = state == State.CHUNK_SIZE || state == State.TRAILERS ? Math.max(lineStart, 0) : bytes.length;
            if (out == null) {
                result = plainFrom == 0 && end == bytes.length ? bytes : Arrays.copyOfRange(bytes, plainFrom, end);
            } else {
                out.write(bytes, plainFrom, end - plainFrom);
                result = out.bytes();
            }
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
                    newMessage(i + n);
                }
                return i + n;
            }
            case CHUNK_SIZE -> {
                chunkSizeByte(b[i], i);
                return i + 1;
            }
            case CHUNK_DATA -> {
                int n = (int) Math.min(piece, b.length - i);
                piece -= n;
                remaining -= n;
                i += n;
                if (piece == 0) {
                    if (remaining == 0) {
                        state = State.CHUNK_DATA_CR; // the client's CRLF ends the last piece
                    } else {
                        // a chunk larger than MAX_PIECE: end this piece, announce the next
                        piece = Math.min(remaining, MAX_PIECE);
                        replace(i, i, concat(CRLF, sizeLine(piece)));
                    }
                }
                return i;
            }
            case CHUNK_DATA_CR, CHUNK_DATA_LF -> {
                boolean cr = state == State.CHUNK_DATA_CR;
                if (b[i] != (cr ? CR : LF)) {
                    fail("a chunk's data is not followed by CRLF (the chunk size does not match its data)");
                } else if (cr) {
                    state = State.CHUNK_DATA_LF;
                } else {
                    state = State.CHUNK_SIZE;
                    lineStart = i + 1;
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

    /** The next message starts at {@code at} in the input. */
    private void newMessage(int at) {
        resetMessage();
        messageStart = at;
        messageOut = out == null ? 0 : out.size;
        messagePlainFrom = plainFrom;
    }

    private void resetMessage() {
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
        if (nameIs(colon, "transfer-encoding")) {
            if (transferEncodings == null) {
                transferEncodings = new ArrayList<>(1);
            }
            for (String coding : value(colon + 1, length).split(",", -1)) {
                String c = coding.trim();
                if (!c.isEmpty()) {
                    transferEncodings.add(c.toLowerCase(Locale.ROOT));
                }
            }
        } else if (nameIs(colon, "content-length")) {
            contentLengths++;
            contentLength = value(colon + 1, length);
        }
    }

    /** Whether the line's first {@code length} bytes are {@code lowerCaseName}, in any case (no allocation). */
    private boolean nameIs(int length, String lowerCaseName) {
        if (length != lowerCaseName.length()) {
            return false;
        }
        for (int i = 0; i < length; i++) {
            int c = line[i];
            if (c >= 'A' && c <= 'Z') {
                c += 'a' - 'A';
            }
            if (c != lowerCaseName.charAt(i)) {
                return false;
            }
        }
        return true;
    }

    /** The head ended at {@code next}: how is the body framed, as Helidon decides it. */
    private void bodyFraming(int next) {
        if (transferEncodings != null) {
            if (contentLengths == 0 && transferEncodings.size() == 1
                    && transferEncodings.getFirst().equals("chunked")) {
                state = State.CHUNK_SIZE;
                lineStart = next;
                lineLength = 0;
                sawCr = false;
            } else {
                passThrough(); // refused by Helidon (400 or 501), which closes the connection
            }
            return;
        }
        if (contentLengths > 0) {
            String length = Objects.requireNonNull(contentLength, "set with each Content-Length line counted");
            if (contentLengths != 1 || !digits(length) || length.length() > 18) {
                passThrough(); // refused by Helidon
                return;
            }
            remaining = Long.parseLong(length);
            if (remaining > 0) {
                state = State.LENGTH_BODY;
                return;
            }
        }
        newMessage(next);
    }

    private String value(int from, int to) {
        return new String(line, from, to - from, StandardCharsets.ISO_8859_1).strip();
    }

    // ------------------------------------------------------------------------------------------ the chunked body

    private void chunkSizeByte(byte c, int i) {
        if (sawCr) {
            sawCr = false;
            if (c != LF) {
                fail("a chunk-size line has a CR without LF");
                return;
            }
            chunkSizeLine(i + 1);
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

    /** A chunk-size line ended (its LF is at {@code next - 1}). */
    private void chunkSizeLine(int next) {
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
        long first = Math.min(size, MAX_PIECE);
        // Passed as it is when Helidon reads it the same: in this input, bare hexadecimal, small enough.
        boolean plain = lineStart >= 0 && p == length && p <= 8 && size == first;
        if (!plain) {
            replace(Math.max(lineStart, 0), next, sizeLine(first));
        }
        lineStart = next;
        if (size > 0) {
            state = State.CHUNK_DATA;
            remaining = size;
            piece = first;
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
    static @Nullable String extensions(byte[] s, int p, int end) {
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
            int next = i + 1;
            if (length == 0) {
                // the end of the body (Helidon reads this empty line after the last chunk); the next request follows
                if (lineStart < 0) {
                    replace(0, next, CRLF);
                }
                newMessage(next);
                return;
            }
            String bad = fieldLine(line, length);
            if (bad != null) {
                fail("a trailer field is malformed (" + bad + ")");
                return;
            }
            replace(Math.max(lineStart, 0), next, EMPTY); // dropped
            lineStart = next;
        } else if (c == CR) {
            sawCr = true;
        } else if (c == LF) {
            fail("a trailer line ends with a bare LF");
        } else if (!append(c)) {
            fail("a trailer line is longer than " + maxLine + " bytes");
        }
    }

    /** Checks {@code field-name ":" OWS field-value OWS}; returns null when valid, else what is wrong. */
    static @Nullable String fieldLine(byte[] s, int end) {
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
            if ((c < 0x20 && c != '\t') || c == 0x7f) {
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
                .message(MALFORMED + why)
                .safeMessage(true)
                .setKeepAlive(false)
                .build();
    }

    /** Replaces the input's bytes {@code [from, to)} (nothing of which was passed on yet) with {@code with}. */
    private void replace(int from, int to, byte[] with) {
        Out o = out();
        o.write(input(), plainFrom, from - plainFrom);
        o.write(with, 0, with.length);
        plainFrom = to;
    }

    private static byte[] sizeLine(long size) {
        return (Long.toHexString(size) + "\r\n").getBytes(StandardCharsets.US_ASCII);
    }

    private Out out() {
        if (out == null) {
            out = new Out(input().length + 64);
        }
        return out;
    }

    /** The input of the current call of {@code process}. */
    private byte[] input() {
        return Objects.requireNonNull(in, "set for the length of one call of process");
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
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                || (c < 0x80 && "!#$%&'*+-.^_`|~".indexOf(c) >= 0);
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
