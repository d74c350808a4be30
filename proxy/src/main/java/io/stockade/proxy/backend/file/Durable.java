package io.stockade.proxy.backend.file;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Objects;
import java.util.UUID;

/** The fsync steps that make a rename or a new directory survive a power loss (POSIX semantics). */
final class Durable {
    private Durable() {
    }

    /** Flushes a directory's entries (new, renamed or removed names) to the disk. */
    static void syncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }

    /**
     * Creates {@code dir} and any missing parents, each made durable in its own parent.
     *
     * @throws NotADirectoryException when the deepest existing ancestor is not a directory (a file is in the way)
     */
    static void createDirectories(Path dir) throws IOException {
        Deque<Path> missing = new ArrayDeque<>();
        Path p = dir;
        while (!Files.exists(p, LinkOption.NOFOLLOW_LINKS)) {
            missing.push(p);
            p = parent(p);
        }
        if (!Files.isDirectory(p)) {
            throw new NotADirectoryException(p);
        }
        while (!missing.isEmpty()) {
            Path d = missing.pop();
            try {
                Files.createDirectory(d);
            } catch (FileAlreadyExistsException e) {
                if (!Files.isDirectory(d, LinkOption.NOFOLLOW_LINKS)) {
                    throw new NotADirectoryException(d);
                }
                continue; // someone else created it (and made it durable)
            }
            syncDirectory(parent(d));
        }
    }

    /**
     * The directory holding {@code file}. Every path here is absolute and under the root (or the root's own
     * ancestors, which exist), so it has a parent; no parent throws as dereferencing it always did.
     */
    static Path parent(Path file) {
        return Objects.requireNonNull(file.getParent(), "a path under the root has a parent");
    }

    /** Writes a small file atomically and durably: temp file, fsync, rename over the target, fsync directory. */
    static void replaceSmallFile(Path target, byte[] content) throws IOException {
        Path dir = parent(target);
        Path tmp = dir.resolve(SafePath.RESERVED_PREFIX + "-tmp-" + UUID.randomUUID());
        try {
            try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ByteBuffer buf = ByteBuffer.wrap(content);
                while (buf.hasRemaining()) {
                    ch.write(buf);
                }
                ch.force(true);
            }
            Files.move(tmp, target, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException | RuntimeException e) {
            Files.deleteIfExists(tmp);
            throw e;
        }
        syncDirectory(dir);
    }

    /** A file stands where a directory is needed. */
    static final class NotADirectoryException extends IOException {
        NotADirectoryException(Path where) {
            super("not a directory: " + where.getFileName());
        }
    }
}
