package io.stockade.proxy.backend.s3;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;

import io.stockade.proxy.io.BulkInputStream;

import org.jspecify.annotations.Nullable;

/**
 * A browser-form upload (S3's POST Object) read as {@code multipart/form-data}: the fields that precede the file,
 * read whole (they are small: the policy, its signature, the key, metadata), then the file's bytes as a stream
 * that ends where the file part ends. S3 takes the file as the last field and ignores any field after it; so does
 * this reader.
 */
final class PostForm {
    /** The most bytes of all fields before the file, part headers included (S3 refuses more than 20 KB of policy). */
    static final int MAX_PRE_DATA = 256 * 1024;
    private static final int MAX_LINE = 8 * 1024;

    /** A field as the form names it (names compare case-insensitively, as S3 compares them). */
    record Field(String name, String value) {
    }

    /** The body is not the multipart/form-data it says it is: 400 {@code MalformedPOSTRequest}. */
    static final class Malformed extends Exception {
        final String code;

        Malformed(String code, String message) {
            super(message, null, false, false);
            this.code = code;
        }

        /** The message it was made with: never null. */
        @Override
        public String getMessage() {
            return Objects.requireNonNull(super.getMessage(), "made with a message");
        }
    }

    private final List<Field> fields;
    private final String fileName;
    private final @Nullable String fileContentType;
    private final InputStream file;

    private PostForm(List<Field> fields, String fileName, @Nullable String fileContentType, InputStream file) {
        this.fields = List.copyOf(fields);
        this.fileName = fileName;
        this.fileContentType = fileContentType;
        this.file = file;
    }

    /** The boundary of a {@code multipart/form-data} Content-Type, or null when it is not one. */
    static @Nullable String boundary(@Nullable String contentType) {
        if (contentType == null) {
            return null;
        }
        // limit -1: a value of only ";" still has a parts[0] (with split's default it had none and threw, a 500)
        String[] parts = contentType.split(";", -1);
        if (!parts[0].trim().equalsIgnoreCase("multipart/form-data")) {
            return null;
        }
        for (int i = 1; i < parts.length; i++) {
            String p = parts[i].trim();
            if (p.regionMatches(true, 0, "boundary=", 0, 9)) {
                String b = p.substring(9).trim();
                if (b.length() >= 2 && b.startsWith("\"") && b.endsWith("\"")) {
                    b = b.substring(1, b.length() - 1);
                }
                return b.isEmpty() || b.length() > 70 ? null : b;
            }
        }
        return null;
    }

    /**
     * Reads the fields up to the file. The stream is left at the file's first byte; {@link #file()} reads on.
     *
     * @throws Malformed when the body is not well-formed multipart/form-data, has no file, or its fields are too long
     */
    static PostForm read(InputStream in, String boundary) throws Malformed, IOException {
        byte[] delimiter = ("\r\n--" + boundary).getBytes(StandardCharsets.ISO_8859_1);
        Counted body = new Counted(in);
        // the preamble, up to and including the first boundary line
        String first;
        do {
            first = body.line();
            if (first == null) {
                throw malformed("the body ends before its first boundary");
            }
        } while (!first.equals("--" + boundary));
        List<Field> fields = new ArrayList<>();
        while (true) {
            String name = null;
            String fileName = null;
            String contentType = null;
            for (String line = body.line(); ; line = body.line()) {
                if (line == null) {
                    throw malformed("the body ends inside a part's headers");
                }
                if (line.isEmpty()) {
                    break;
                }
                int colon = line.indexOf(':');
                if (colon <= 0) {
                    throw malformed("a part header without ':'");
                }
                String header = line.substring(0, colon).trim().toLowerCase(Locale.ROOT);
                String value = line.substring(colon + 1).trim();
                if (header.equals("content-disposition")) {
                    name = parameter(value, "name");
                    fileName = parameter(value, "filename");
                } else if (header.equals("content-type")) {
                    contentType = value;
                }
            }
            if (name == null) {
                throw malformed("a part without a Content-Disposition name");
            }
            Part part = new Part(body, delimiter);
            if (name.equalsIgnoreCase("file")) {
                return new PostForm(fields, fileName == null ? "" : fileName, contentType, part);
            }
            ByteArrayOutputStream value = new ByteArrayOutputStream();
            byte[] chunk = new byte[4096];
            for (int n; (n = part.read(chunk)) >= 0; ) {
                value.write(chunk, 0, n);
                if (body.count > MAX_PRE_DATA) {
                    throw new Malformed("MaxPostPreDataLengthExceeded", "Your POST request fields preceding the "
                            + "upload file were too large (more than " + MAX_PRE_DATA + " bytes).");
                }
            }
            fields.add(new Field(name, value.toString(StandardCharsets.UTF_8)));
            // after the delimiter: "--" ends the form (no file), CRLF starts the next part
            String rest = body.line();
            if (rest == null || rest.startsWith("--")) {
                throw new Malformed("InvalidArgument", "POST requires exactly one file upload per request.");
            }
        }
    }

    private static Malformed malformed(String why) {
        return new Malformed("MalformedPOSTRequest", "The body of your POST request is not well-formed "
                + "multipart/form-data: " + why + ".");
    }

    /** A parameter of a Content-Disposition value ({@code name="key"}), unquoted; null when absent. */
    static @Nullable String parameter(String disposition, String name) {
        int at = 0;
        while (at < disposition.length()) {
            int semi = disposition.indexOf(';', at);
            if (semi < 0) {
                return null;
            }
            int start = semi + 1;
            while (start < disposition.length() && disposition.charAt(start) == ' ') {
                start++;
            }
            int eq = disposition.indexOf('=', start);
            if (eq < 0) {
                return null;
            }
            String key = disposition.substring(start, eq).trim();
            String value;
            int end;
            if (eq + 1 < disposition.length() && disposition.charAt(eq + 1) == '"') {
                StringBuilder b = new StringBuilder();
                int i = eq + 2;
                for (; i < disposition.length() && disposition.charAt(i) != '"'; i++) {
                    char c = disposition.charAt(i);
                    if (c == '\\' && i + 1 < disposition.length()) {
                        c = disposition.charAt(++i);
                    }
                    b.append(c);
                }
                value = b.toString();
                end = i + 1;
            } else {
                int next = disposition.indexOf(';', eq);
                end = next < 0 ? disposition.length() : next;
                value = disposition.substring(eq + 1, end).trim();
            }
            if (key.equalsIgnoreCase(name)) {
                // a browser sends UTF-8 bytes in the quoted string; they were read as ISO-8859-1
                return new String(value.getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8);
            }
            at = end;
        }
        return null;
    }

    List<Field> fields() {
        return fields;
    }

    /** The first field of that name (case-insensitive). */
    Optional<String> field(String name) {
        return fields.stream().filter(f -> f.name().equalsIgnoreCase(name)).map(Field::value).findFirst();
    }

    /** The file's name as the browser sent it ({@code ${filename}} in the key). */
    String fileName() {
        return fileName;
    }

    /** The file part's own Content-Type, or null. */
    @Nullable String fileContentType() {
        return fileContentType;
    }

    /** The file's bytes; the stream ends where the file part ends. */
    InputStream file() {
        return file;
    }

    /** The request body, counting what was read and reading lines (CRLF-terminated) of the part headers. */
    private static final class Counted {
        final InputStream in;
        long count;
        byte[] pushback = new byte[0];
        int pushbackAt;

        Counted(InputStream in) {
            this.in = in;
        }

        int read() throws IOException {
            if (pushbackAt < pushback.length) {
                count++;
                return pushback[pushbackAt++] & 0xff;
            }
            int c = in.read();
            if (c >= 0) {
                count++;
            }
            return c;
        }

        int read(byte[] b, int off, int len) throws IOException {
            if (pushbackAt < pushback.length) {
                int n = Math.min(len, pushback.length - pushbackAt);
                System.arraycopy(pushback, pushbackAt, b, off, n);
                pushbackAt += n;
                count += n;
                return n;
            }
            int n = in.read(b, off, len);
            if (n > 0) {
                count += n;
            }
            return n;
        }

        void unread(byte[] b, int off, int len) {
            byte[] rest = new byte[len + pushback.length - pushbackAt];
            System.arraycopy(b, off, rest, 0, len);
            System.arraycopy(pushback, pushbackAt, rest, len, pushback.length - pushbackAt);
            pushback = rest;
            pushbackAt = 0;
            count -= len;
        }

        /** A line without its CRLF; null at the end of the body. */
        @Nullable String line() throws IOException, Malformed {
            ByteArrayOutputStream b = new ByteArrayOutputStream();
            for (int c = read(); ; c = read()) {
                if (c < 0) {
                    return b.size() == 0 ? null : b.toString(StandardCharsets.ISO_8859_1);
                }
                if (c == '\n') {
                    byte[] bytes = b.toByteArray();
                    int n = bytes.length > 0 && bytes[bytes.length - 1] == '\r' ? bytes.length - 1 : bytes.length;
                    return new String(bytes, 0, n, StandardCharsets.ISO_8859_1);
                }
                b.write(c);
                if (b.size() > MAX_LINE || count > MAX_PRE_DATA) {
                    throw new Malformed("MaxPostPreDataLengthExceeded", "Your POST request fields preceding the "
                            + "upload file were too large.");
                }
            }
        }
    }

    /** One part's content: the bytes up to the next delimiter ({@code CRLF--boundary}), which it consumes. */
    private static final class Part extends BulkInputStream {
        private final Counted body;
        private final byte[] delimiter;
        private final byte[] buffer = new byte[64 * 1024];
        private int start;
        private int end;
        private boolean done;
        private boolean eof;

        Part(Counted body, byte[] delimiter) {
            this.body = body;
            this.delimiter = delimiter;
        }

        @Override
        public int read(byte[] b, int off, int len) throws IOException {
            if (done) {
                return -1;
            }
            if (len == 0) {
                return 0;
            }
            while (true) {
                int found = indexOf(buffer, start, end, delimiter);
                if (found >= 0) {
                    if (found > start) {
                        int n = Math.min(len, found - start);
                        System.arraycopy(buffer, start, b, off, n);
                        start += n;
                        return n;
                    }
                    // the part ends here: what follows the delimiter goes back to the body
                    int after = found + delimiter.length;
                    body.unread(buffer, after, end - after);
                    start = end = 0;
                    done = true;
                    return -1;
                }
                // bytes that cannot be the start of a delimiter can be handed out
                int safe = end - (delimiter.length - 1);
                if (safe > start) {
                    int n = Math.min(len, safe - start);
                    System.arraycopy(buffer, start, b, off, n);
                    start += n;
                    return n;
                }
                if (eof) {
                    throw new IOException("the body ends inside a part (no closing boundary)");
                }
                if (start > 0) {
                    System.arraycopy(buffer, start, buffer, 0, end - start);
                    end -= start;
                    start = 0;
                }
                int n = body.read(buffer, end, buffer.length - end);
                if (n < 0) {
                    eof = true;
                } else {
                    end += n;
                }
            }
        }

        private static int indexOf(byte[] data, int from, int to, byte[] pattern) {
            outer:
            for (int i = from; i <= to - pattern.length; i++) {
                for (int j = 0; j < pattern.length; j++) {
                    if (data[i + j] != pattern[j]) {
                        continue outer;
                    }
                }
                return i;
            }
            return -1;
        }
    }
}
