package io.stockade.proxy.listener;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

class RequestFramingTest {
    static final String CHUNKED_HEAD = "PUT /a HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n";
    static final String NEXT = "GET /b HTTP/1.1\r\nHost: x\r\n\r\n";

    static RequestFraming framing() {
        return new RequestFraming(8192, 1024);
    }

    static byte[] bytes(String s) {
        return s.getBytes(StandardCharsets.ISO_8859_1);
    }

    static String text(byte[] b) {
        return new String(b, StandardCharsets.ISO_8859_1);
    }

    /** Feeds {@code input} in pieces of {@code piece} bytes; returns everything the parser would read. */
    static String feed(RequestFraming f, String input, int piece) {
        byte[] all = bytes(input);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < all.length; i += piece) {
            byte[] part = java.util.Arrays.copyOfRange(all, i, Math.min(all.length, i + piece));
            out.writeBytes(f.process(part));
        }
        return out.toString(StandardCharsets.ISO_8859_1);
    }

    /**
     * Reads a re-framed chunked body as Helidon does, strictly: bare hexadecimal sizes, CRLF after each chunk's
     * data, "0" CRLF CRLF at the end. Returns {body, rest}.
     */
    static String[] dechunk(String s) {
        StringBuilder body = new StringBuilder();
        int p = 0;
        while (true) {
            int eol = s.indexOf("\r\n", p);
            String size = s.substring(p, eol);
            assertTrue(size.matches("[0-9a-fA-F]{1,8}"), "a bare hexadecimal size, got '" + size + "'");
            int n = Integer.parseInt(size, 16);
            p = eol + 2;
            if (n == 0) {
                assertEquals("\r\n", s.substring(p, p + 2), "no trailers are passed on");
                return new String[] {body.toString(), s.substring(p + 2)};
            }
            body.append(s, p, p + n);
            assertEquals("\r\n", s.substring(p + n, p + n + 2));
            p += n + 2;
        }
    }

    @Test
    void headsAndLengthBodiesPassUnchangedAndUncopied() {
        RequestFraming f = framing();
        byte[] in = bytes("PUT /a HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello" + NEXT);
        assertSame(in, f.process(in), "nothing to change: the same array");
        assertEquals(RequestFraming.State.HEAD, f.state());
        byte[] more = bytes("PUT /c HTTP/1.1\r\nContent-Length: 3\r\n\r\nab");
        assertSame(more, f.process(more));
        assertEquals(RequestFraming.State.LENGTH_BODY, f.state());
        byte[] rest = bytes("c");
        assertSame(rest, f.process(rest));
        assertEquals(RequestFraming.State.HEAD, f.state());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 2, 3, 7, 1000})
    void extensionsAndTrailersAreDroppedAndTheDataKept(int piece) {
        RequestFraming f = framing();
        String body = "5;a=b\r\nhello\r\n"
                + "6 ; name = \"quoted \\\" value\" ;flag\r\n world\r\n"
                + "00A\r\n0123456789\r\n"
                + "0;last=1\r\nChecksum: abc\r\nX-Other:\tv\r\n\r\n";
        String out = feed(f, CHUNKED_HEAD + body + NEXT, piece);
        assertTrue(out.startsWith(CHUNKED_HEAD), out);
        String[] parsed = dechunk(out.substring(CHUNKED_HEAD.length()));
        assertEquals("hello world0123456789", parsed[0]);
        assertEquals(NEXT, parsed[1], "the next request follows the body untouched");
        assertNull(f.failure());
        assertEquals(RequestFraming.State.HEAD, f.state());
    }

    @Test
    void randomValidBodiesSplitAnywhereComeOutWhole() {
        java.util.Random random = new java.util.Random(42);
        for (int round = 0; round < 400; round++) {
            StringBuilder wire = new StringBuilder(CHUNKED_HEAD);
            StringBuilder data = new StringBuilder();
            int chunks = random.nextInt(5);
            for (int c = 0; c < chunks; c++) {
                int size = random.nextInt(10) == 0 ? RequestFraming.MAX_PIECE + random.nextInt(3000)
                        : 1 + random.nextInt(300);
                String hex = Integer.toHexString(size);
                wire.append(random.nextBoolean() ? hex : hex.toUpperCase()).append(switch (random.nextInt(4)) {
                    case 0 -> ";a=b";
                    case 1 -> " ; n=\"q;\\\"x\" ;f";
                    default -> "";
                }).append("\r\n");
                String chunk = Character.toString('a' + random.nextInt(26)).repeat(size);
                wire.append(chunk).append("\r\n");
                data.append(chunk);
            }
            wire.append("0").append(random.nextBoolean() ? ";e=1" : "").append("\r\n");
            for (int t = random.nextInt(3); t > 0; t--) {
                wire.append("X-T").append(t).append(": v").append(t).append("\r\n");
            }
            wire.append("\r\n").append(NEXT);
            RequestFraming f = framing();
            String out = feed(f, wire.toString(), 1 + random.nextInt(random.nextBoolean() ? 5 : 9000));
            assertNull(f.failure(), "round " + round);
            String[] parsed = dechunk(out.substring(CHUNKED_HEAD.length()));
            assertEquals(data.toString(), parsed[0], "round " + round);
            assertEquals(NEXT, parsed[1], "round " + round);
        }
    }

    @Test
    void plainChunksPassUnchangedAndUncopied() {
        RequestFraming f = framing();
        byte[] in = bytes(CHUNKED_HEAD + "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n" + NEXT);
        assertSame(in, f.process(in));
        assertEquals(RequestFraming.State.HEAD, f.state());
    }

    @ParameterizedTest
    @ValueSource(ints = {1000, 8192, 100_000})
    void aChunkLargerThanAPieceIsAnnouncedInPieces(int piece) {
        // Helidon's reader holds a whole chunk in memory before passing it on: it never sees one over MAX_PIECE.
        RequestFraming f = framing();
        int size = 3 * RequestFraming.MAX_PIECE + 123;
        String data = "x".repeat(size);
        String out = feed(f, CHUNKED_HEAD + Integer.toHexString(size) + "\r\n" + data + "\r\n0\r\n\r\n" + NEXT, piece);
        String body = out.substring(CHUNKED_HEAD.length());
        String[] parsed = dechunk(body);
        assertEquals(data, parsed[0]);
        assertEquals(NEXT, parsed[1]);
        int pieces = 0;
        for (String line : body.split("\r\n")) {
            if (line.matches("[0-9a-f]+")) {
                assertTrue(Integer.parseInt(line, 16) <= RequestFraming.MAX_PIECE, line);
                pieces++;
            }
        }
        assertEquals(5, pieces, "four pieces and the last chunk");
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "zz\r\nhello\r\n0\r\n\r\n",               // not hexadecimal
            "\r\nhello\r\n0\r\n\r\n",                 // no size
            "5\nhello\r\n0\r\n\r\n",                  // bare LF
            "5\rxhello\r\n0\r\n\r\n",                 // CR without LF
            "5\r\nhelloXX0\r\n\r\n",                  // data not followed by CRLF (Helidon skipped these 2 bytes)
            "3\r\nhello\r\n0\r\n\r\n",                // size shorter than the data
            "5;\r\nhello\r\n0\r\n\r\n",               // extension without a name
            "5;=b\r\nhello\r\n0\r\n\r\n",
            "5;a=\r\nhello\r\n0\r\n\r\n",             // '=' without a value
            "5;a=\"open\r\nhello\r\n0\r\n\r\n",       // unterminated quoted string
            "5;a b\r\nhello\r\n0\r\n\r\n",            // two names
            "5 6\r\nhello\r\n0\r\n\r\n",              // two sizes
            "-5\r\nhello\r\n0\r\n\r\n",
            "0x5\r\nhello\r\n0\r\n\r\n",
            "5\r\nhello\r\n0\r\nno colon\r\n\r\n",    // a trailer line that is no field
            "5\r\nhello\r\n0\r\n folded: x\r\n\r\n",
            "5\r\nhello\r\n0\r\nA: b\nc\r\n\r\n",     // bare LF in a trailer
            "1000000000000000\r\nx",                  // larger than 2^56
    })
    void aMalformedChunkedBodyFailsAndEveryLaterReadToo(String body) {
        RequestFraming f = framing();
        String out = feed(f, CHUNKED_HEAD + body + NEXT, 1000);
        assertNotNull(f.failure(), "refused: " + body.replace("\r", "\\r").replace("\n", "\\n"));
        assertEquals(400, f.failure().status().code());
        assertFalse(out.contains("GET /b"), "nothing after the broken body reaches the parser: " + out);
        assertEquals(0, f.process(bytes(NEXT)).length);
        assertEquals(RequestFraming.State.FAILED, f.state());
    }

    @Test
    void aMalformedBodyWhoseHeadCameInTheSameReadNeverReachesTheParser() {
        // Earlier requests of the same read are passed on; the broken request is refused before routing.
        RequestFraming f = framing();
        String first = "PUT /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\n\r\n";
        String out = text(f.process(bytes(first + CHUNKED_HEAD + "5\r\nhello\r\nzz\r\n" + NEXT)));
        assertEquals("PUT /ok HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n", out);
        assertNotNull(f.failure());
        assertTrue(f.failure().getMessage().startsWith(RequestFraming.MALFORMED), f.failure().getMessage());

        // the head in one read, the body in the next: the parser has the head (and routes it); the body fails
        RequestFraming g = framing();
        assertEquals(CHUNKED_HEAD + "5\r\nhello\r\n", text(g.process(bytes(CHUNKED_HEAD + "5\r\nhello\r\n"))));
        assertEquals(0, g.process(bytes("zz\r\n" + NEXT)).length);
        assertNotNull(g.failure());
    }

    @Test
    void overlongChunkLinesAndTrailersFail() {
        RequestFraming f = framing();
        feed(f, CHUNKED_HEAD + "5;a=" + "b".repeat(RequestFraming.MAX_CHUNK_LINE) + "\r\n", 100);
        assertNotNull(f.failure());

        RequestFraming g = framing(); // trailers over 1024 bytes
        feed(g, CHUNKED_HEAD + "0\r\n" + ("X-A: " + "v".repeat(100) + "\r\n").repeat(20) + "\r\n", 100);
        assertNotNull(g.failure());
        assertTrue(g.failure().getMessage().contains("trailer section"), g.failure().getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {
            "PUT /a HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
            "PUT /a HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
            "PUT /a HTTP/1.1\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
            "PUT /a HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 3\r\n\r\n",
            "PUT /a HTTP/1.1\r\nContent-Length: +3\r\n\r\n",
            "PUT /a HTTP/1.1\r\nTransfer-Encoding : chunked\r\n\r\n", // Helidon refuses the name; not read here
            "PUT /a HTTP/1.1\r\nHost: x\r\n folded\r\n\r\n",
            "PUT /a HTTP/1.1\nHost: x\r\n\r\n",
            "\r\nPUT /a HTTP/1.1\r\n\r\n",
    })
    void headsHelidonRefusesArePassedOnAsTheyAre(String head) {
        // Helidon refuses these and closes; this class must not re-frame anything after them.
        RequestFraming f = framing();
        byte[] in = bytes(head + "5;a=b\r\nhello\r\n0\r\n\r\n");
        String out = text(f.process(in));
        if (!head.contains("Transfer-Encoding : chunked")) {
            assertEquals(RequestFraming.State.PASSTHROUGH, f.state(), head);
        }
        assertTrue(out.endsWith("5;a=b\r\nhello\r\n0\r\n\r\n"), "passed as it came: " + out);
        assertNull(f.failure());
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 5, 24, 100})
    void anHttp2PrefaceIsReported(int piece) {
        RequestFraming f = framing();
        byte[] all = bytes("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\4\0\0\0\0\0");
        for (int i = 0; i < all.length && !f.http2(); i += piece) {
            byte[] part = java.util.Arrays.copyOfRange(all, i, Math.min(all.length, i + piece));
            assertEquals(0, f.process(part).length, "nothing of it reaches the HTTP/1.1 parser");
        }
        assertTrue(f.http2());
    }

    @Test
    void aRequestThatStartsLikeThePrefaceIsAnHttp11Request() {
        RequestFraming f = framing();
        String req = "PRI /x HTTP/1.1\r\nHost: x\r\n\r\n";
        assertEquals(req, feed(f, req, 2));
        assertFalse(f.http2());
        assertEquals(RequestFraming.State.HEAD, f.state());
    }

    @Test
    void theRefusalFramesAreASettingsAndAGoaway() {
        byte[] frames = ClientConnections.http2Refusal();
        assertArrayEquals(new byte[] {0, 0, 0, 4, 0, 0, 0, 0, 0}, java.util.Arrays.copyOf(frames, 9));
        int length = (frames[9] & 0xff) << 16 | (frames[10] & 0xff) << 8 | frames[11] & 0xff;
        assertEquals(frames.length - 18, length);
        assertEquals(7, frames[12], "GOAWAY");
        assertEquals(0xd, frames[9 + 9 + 7], "HTTP_1_1_REQUIRED");
        assertTrue(text(frames).endsWith(ClientConnections.HTTP2_REFUSAL));
    }

    @Test
    void extensionGrammar() {
        assertNull(extensions(""));
        assertNull(extensions(" ; a ; b = c ;d=\"e;f\"  "));
        assertNull(extensions(";a=\"\\\"\""));
        assertNotNull(extensions(";a=\"\\\u0001\""));
        assertNotNull(extensions(";a=b c"));
        assertNull(fieldLine("Name: v a l"));
        assertNotNull(fieldLine("Na me: v"));
        assertNotNull(fieldLine("Name: v\u0000"));
    }

    static String extensions(String s) {
        return RequestFraming.extensions(bytes(s), 0, s.length());
    }

    static String fieldLine(String s) {
        return RequestFraming.fieldLine(bytes(s), s.length());
    }
}
