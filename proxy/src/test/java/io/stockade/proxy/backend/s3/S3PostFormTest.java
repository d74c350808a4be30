package io.stockade.proxy.backend.s3;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Random;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

/** {@link PostForm}: multipart/form-data read in pieces of any size, files holding near-boundaries. */
class S3PostFormTest {
    private static final String BOUNDARY = "xYzZY";

    /** A stream that hands out at most a few bytes per read, as a slow network does. */
    private static InputStream trickle(byte[] data, long seed) {
        Random random = new Random(seed);
        return new ByteArrayInputStream(data) {
            @Override
            public synchronized int read(byte[] b, int off, int len) {
                return super.read(b, off, Math.min(len, 1 + random.nextInt(7)));
            }
        };
    }

    private static byte[] body(byte[] file, String... fields) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.writeBytes("preamble\r\n".getBytes(StandardCharsets.UTF_8));
        for (int i = 0; i < fields.length; i += 2) {
            out.writeBytes(("--" + BOUNDARY + "\r\nContent-Disposition: form-data; name=\"" + fields[i] + "\"\r\n\r\n"
                    + fields[i + 1] + "\r\n").getBytes(StandardCharsets.UTF_8));
        }
        out.writeBytes(("--" + BOUNDARY + "\r\nContent-Disposition: form-data; name=\"file\""
                + "; filename=\"a \\\"b\\\".txt\""
                + "\r\nContent-Type: text/plain\r\n\r\n").getBytes(StandardCharsets.UTF_8));
        out.writeBytes(file);
        out.writeBytes(("\r\n--" + BOUNDARY + "\r\nContent-Disposition: form-data; name=\"after\"\r\n\r\nignored\r\n--"
                + BOUNDARY + "--\r\n").getBytes(StandardCharsets.UTF_8));
        return out.toByteArray();
    }

    @Test
    void fieldsAndTheFileReadInAnyPieces() throws Exception {
        byte[] file = ("line\r\n--" + BOUNDARY.substring(0, 3) + "\r\n-" + "\r\n--xYzZ")
                .getBytes(StandardCharsets.UTF_8);
        byte[] data = new byte[200_000];
        new Random(3).nextBytes(data);
        for (byte[] content : List.of(file, data, new byte[0])) {
            for (long seed = 0; seed < 20; seed++) {
                PostForm form = PostForm.read(trickle(body(content, "key", "k/${filename}", "x-amz-meta-a", "ü"),
                        seed), BOUNDARY);
                assertEquals("k/${filename}", form.field("KEY").orElseThrow());
                assertEquals("ü", form.field("x-amz-meta-a").orElseThrow());
                assertEquals("a \"b\".txt", form.fileName());
                assertEquals("text/plain", form.fileContentType());
                assertArrayEquals(content, form.file().readAllBytes());
            }
        }
    }

    @Test
    void malformedFormsAreRefused() {
        assertThrows(PostForm.Malformed.class, () -> PostForm.read(new ByteArrayInputStream(("--" + BOUNDARY
                + "\r\nContent-Disposition: form-data; name=\"key\"\r\n\r\nk\r\n--" + BOUNDARY + "--\r\n")
                .getBytes(StandardCharsets.UTF_8)), BOUNDARY)); // no file
        assertThrows(PostForm.Malformed.class, () -> PostForm.read(new ByteArrayInputStream("no boundary at all"
                .getBytes(StandardCharsets.UTF_8)), BOUNDARY));
        PostForm.Malformed tooLong = assertThrows(PostForm.Malformed.class, () -> PostForm.read(
                new ByteArrayInputStream(body(new byte[1], "key", "x".repeat(PostForm.MAX_PRE_DATA + 1))), BOUNDARY));
        assertEquals("MaxPostPreDataLengthExceeded", tooLong.code);
        IOException cut = assertThrows(IOException.class, () -> PostForm.read(new ByteArrayInputStream(("--"
                + BOUNDARY + "\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nno end")
                .getBytes(StandardCharsets.UTF_8)), BOUNDARY).file().readAllBytes());
        assertEquals("the body ends inside a part (no closing boundary)", cut.getMessage());
    }

    @Test
    void boundariesComeFromTheContentType() {
        assertEquals("abc", PostForm.boundary("multipart/form-data; boundary=abc"));
        assertEquals("a b", PostForm.boundary("Multipart/Form-Data;charset=utf-8; BOUNDARY=\"a b\""));
        assertNull(PostForm.boundary("application/x-www-form-urlencoded"));
        assertNull(PostForm.boundary("multipart/form-data"));
        // a Content-Type of separators only is no form (it used to throw out of the parser: a 500)
        assertNull(PostForm.boundary(";"));
        assertNull(PostForm.boundary(";;"));
        assertNull(PostForm.boundary(""));
    }
}
