package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;

import org.jspecify.annotations.Nullable;

/**
 * The token of the last fenced write of one file, kept beside the data so the fence survives the loss of the
 * proxy's journal.
 * <p>
 * For the file {@code <root>/a/b.txt} it is {@code <root>/.stockade/tokens/a/b.txt/.stockade-token}: a
 * directory per data path, holding one file with a reserved name. A plain {@code tokens/a/b.txt} file would
 * collide with the directory {@code tokens/a/b.txt/} needed once {@code a/b.txt} is deleted (its tombstone
 * stays) and {@code a/b.txt/c} is written; a reserved file name never collides with a data name. The content is
 * two lines of text, {@code token=<decimal>} and {@code deleted=<true|false>}, replaced atomically.
 *
 * @param token   the token of the last fenced write
 * @param deleted whether that write was a delete (a tombstone)
 */
record Sidecar(long token, boolean deleted) {
    static final String FILE_NAME = SafePath.RESERVED_PREFIX + "-token";
    private static final int MAX_SIZE = 256;

    /** Where the sidecar of a file lives. */
    static Path location(Path tokensDir, Path relative) {
        return tokensDir.resolve(relative.toString()).resolve(FILE_NAME);
    }

    /**
     * Reads a sidecar.
     *
     * @return the sidecar, or {@code null} if no fenced write ever reached the file
     * @throws IOException if it cannot be read or is corrupt (the caller fails closed)
     */
    static @Nullable Sidecar read(Path location) throws IOException {
        byte[] bytes;
        try (InputStream in = Files.newInputStream(location, StandardOpenOption.READ, LinkOption.NOFOLLOW_LINKS)) {
            bytes = in.readNBytes(MAX_SIZE + 1);
        } catch (NoSuchFileException e) {
            return null;
        }
        if (bytes.length > MAX_SIZE) {
            throw new IOException("corrupt token sidecar (too large)");
        }
        Long token = null;
        Boolean deleted = null;
        for (String line : new String(bytes, StandardCharsets.UTF_8).split("\n", -1)) {
            if (line.startsWith("token=")) {
                try {
                    token = Long.parseLong(line.substring("token=".length()));
                } catch (NumberFormatException e) {
                    throw new IOException("corrupt token sidecar (bad token)");
                }
            } else if (line.equals("deleted=true")) {
                deleted = true;
            } else if (line.equals("deleted=false")) {
                deleted = false;
            } else if (!line.isEmpty()) {
                throw new IOException("corrupt token sidecar (unknown line)");
            }
        }
        if (token == null || token < 0 || deleted == null) {
            throw new IOException("corrupt token sidecar (missing field)");
        }
        return new Sidecar(token, deleted);
    }

    /** Replaces the sidecar atomically and durably, creating its directories. */
    void write(Path location) throws IOException {
        Durable.createDirectories(Durable.parent(location));
        Durable.replaceSmallFile(location,
                ("token=" + token + "\ndeleted=" + deleted + "\n").getBytes(StandardCharsets.UTF_8));
    }
}
