package io.stockade.proxy.backend.s3;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * A body whose length is not known until its end (a browser form's file part), kept so that it can be sent with a
 * {@code Content-Length}, and sent again after a lost race: in memory up to a bound, beyond it in a temporary file
 * that {@link #close} deletes.
 */
final class Spool implements AutoCloseable {
    private static final String IN_MEMORY = "the bytes are in memory while no file is open";

    /** The body is longer than allowed; nothing of it is kept. */
    static final class TooLarge extends Exception {
        TooLarge() {
            super(null, null, false, false);
        }
    }

    /** The bytes when kept in memory, else null (and {@link #file} holds them). */
    private final byte @Nullable [] memory;
    /** The file holding the bytes, or null when they are kept in memory. */
    private final @Nullable Path file;
    private final long length;

    private Spool(byte @Nullable [] memory, @Nullable Path file, long length) {
        this.memory = memory;
        this.file = file;
        this.length = length;
    }

    /**
     * Reads {@code in} to its end.
     *
     * @param max      the most bytes allowed
     * @param inMemory the most bytes kept in memory
     * @throws TooLarge when {@code in} holds more than {@code max} bytes
     */
    static Spool of(InputStream in, long max, int inMemory) throws IOException, TooLarge {
        // the bytes read so far while no file is open (out is null); null once they went to the file
        ByteArrayOutputStream head = new ByteArrayOutputStream();
        byte[] buffer = new byte[64 * 1024];
        long total = 0;
        Path file = null;
        OutputStream out = null;
        try {
            for (int n; (n = in.read(buffer)) >= 0; ) {
                total += n;
                if (total > max) {
                    throw new TooLarge();
                }
                if (out == null && Objects.requireNonNull(head, IN_MEMORY).size() + n > inMemory) {
                    file = Files.createTempFile("stockade-post-", ".part");
                    out = Files.newOutputStream(file);
                    head.writeTo(out);
                    head = null;
                }
                if (out != null) {
                    out.write(buffer, 0, n);
                } else {
                    Objects.requireNonNull(head, IN_MEMORY).write(buffer, 0, n);
                }
            }
            if (out != null) {
                out.close();
                out = null;
            }
            Spool spool = new Spool(file == null ? Objects.requireNonNull(head, IN_MEMORY).toByteArray() : null, file,
                    total);
            file = null;
            return spool;
        } finally {
            if (out != null) {
                out.close();
            }
            if (file != null) {
                Files.deleteIfExists(file);
            }
        }
    }

    long length() {
        return length;
    }

    /** The bytes, to send (as often as needed). */
    Upstream.Body body() {
        if (memory != null) {
            return Upstream.Body.of(memory);
        }
        return new Upstream.Body() {
            @Override
            public long length() {
                return length;
            }

            @Override
            public void writeTo(OutputStream out) throws IOException {
                try (InputStream in = Files.newInputStream(Objects.requireNonNull(file, "no memory: a file"))) {
                    in.transferTo(out);
                }
            }
        };
    }

    @Override
    public void close() {
        if (file != null) {
            try {
                Files.deleteIfExists(file);
            } catch (IOException e) {
                // a temporary file left behind: the OS's temporary directory cleans it
            }
        }
    }
}
