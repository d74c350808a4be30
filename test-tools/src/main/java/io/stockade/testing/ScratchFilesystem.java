package io.stockade.testing;

import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * A real filesystem a test makes for itself, as root, and removes at {@link #close}: a small {@code tmpfs} that a
 * test can fill to the last byte ({@link #fill}: ENOSPC, what a full disk answers), or an {@code ext4} image on a loop
 * device mounted {@code errors=remount-ro}, which {@link #failReadOnly} turns read-only under the open files the way
 * the kernel does after an I/O error (ext4's {@code trigger_fs_error}); a read-only filesystem of that kind comes back
 * only after an unmount and a check, so {@link #remount} does both.
 */
public final class ScratchFilesystem implements AutoCloseable {
    private final Path mountPoint;
    private final @Nullable Path image;
    private @Nullable String loop;
    private final List<Path> fillers = new ArrayList<>();

    private ScratchFilesystem(Path mountPoint, @Nullable Path image) {
        this.mountPoint = mountPoint;
        this.image = image;
    }

    /** Whether this machine lets the tests mount filesystems (root, and the mount tools). */
    public static boolean available() {
        if (!"root".equals(System.getProperty("user.name"))) {
            return false;
        }
        for (String tool : List.of("mount", "umount", "losetup", "mkfs.ext4", "e2fsck")) {
            if (Tools.binary(tool).isEmpty() && !Files.isExecutable(Path.of("/sbin", tool))) {
                return false;
            }
        }
        return true;
    }

    /** A {@code tmpfs} of {@code bytes} (whole pages) mounted at {@code mountPoint} (created). */
    public static ScratchFilesystem tmpfs(Path mountPoint, long bytes) {
        ScratchFilesystem fs = new ScratchFilesystem(mountPoint, null);
        try {
            Files.createDirectories(mountPoint);
            run("mount", "-t", "tmpfs", "-o", "size=" + bytes + ",mode=0700", "tmpfs", mountPoint.toString());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return fs;
    }

    /**
     * An {@code ext4} filesystem of {@code bytes} in the image file {@code image}, on a loop device, mounted at
     * {@code mountPoint} (created) with {@code errors=remount-ro}.
     */
    public static ScratchFilesystem ext4(Path image, Path mountPoint, long bytes) {
        ScratchFilesystem fs = new ScratchFilesystem(mountPoint, image);
        try {
            Files.createDirectories(mountPoint);
            try (FileChannel ch = FileChannel.open(image, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
                ch.write(ByteBuffer.allocate(1), bytes - 1); // a sparse image of that size
            }
            run("mkfs.ext4", "-q", "-F", image.toString());
            fs.mountImage();
        } catch (IOException e) {
            fs.close();
            throw new UncheckedIOException(e);
        }
        return fs;
    }

    private void mountImage() throws IOException {
        loop = run("losetup", "--find", "--show", Objects.requireNonNull(image, "an ext4 image").toString()).strip();
        run("mount", "-t", "ext4", "-o", "errors=remount-ro", loop, mountPoint.toString());
    }

    public Path path() {
        return mountPoint;
    }

    /**
     * Fills the filesystem to its last byte with a file of its own, so that the next write that needs a block gets
     * ENOSPC; {@link #free} removes it.
     */
    public void fill() {
        Path filler = mountPoint.resolve("filler-" + fillers.size());
        fillers.add(filler);
        byte[] block = new byte[4096];
        try (OutputStream out = Files.newOutputStream(filler)) {
            while (true) {
                out.write(block);
            }
        } catch (IOException full) {
            // no space left: what was wanted (the partial block written stays)
        }
    }

    /** Removes what {@link #fill} wrote. */
    public void free() {
        try {
            for (Path p : fillers) {
                Files.deleteIfExists(p);
            }
            fillers.clear();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * Makes the ext4 filesystem fail as after an I/O error: with {@code errors=remount-ro} the kernel turns it
     * read-only at once, under every open file (EROFS on the next write), which no remount undoes while it is mounted.
     */
    public void failReadOnly() {
        if (loop == null) {
            throw new IllegalStateException("only an ext4 scratch filesystem can be failed read-only");
        }
        try {
            Files.writeString(Path.of("/sys/fs/ext4", Path.of(loop).getFileName().toString(), "trigger_fs_error"),
                    "stockade test: a read-only filesystem");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot trigger an ext4 error on " + loop, e);
        }
    }

    /** Unmounts the ext4 filesystem (its files closed first), checks and repairs it, and mounts it again. */
    public void remount() {
        try {
            run("umount", mountPoint.toString());
            run("losetup", "-d", Objects.requireNonNull(loop, "an ext4 image"));
            loop = null;
            Path checked = Objects.requireNonNull(image, "an ext4 image");
            runAllowing(1, "e2fsck", "-fy", checked.toString()); // 1: errors corrected (the triggered one)
            mountImage();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Unmounts (lazily, if something still holds it), detaches the loop device, removes the image. */
    @Override
    public void close() {
        try {
            if (Files.isDirectory(mountPoint)) {
                runAllowing(32, "umount", "-l", mountPoint.toString()); // 32: not mounted (any more)
            }
            if (loop != null) {
                runAllowing(1, "losetup", "-d", loop);
            }
            if (image != null) {
                Files.deleteIfExists(image);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static String run(String... command) throws IOException {
        return runAllowing(0, command);
    }

    /** Runs a command; its output, or an exception naming it and what it said unless it exited 0 or {@code ok}. */
    private static String runAllowing(int ok, String... command) throws IOException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new IOException(String.join(" ", command) + " did not end within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        if (p.exitValue() != 0 && p.exitValue() != ok) {
            throw new IOException(String.join(" ", command) + " exited " + p.exitValue() + ": " + output.strip());
        }
        return output;
    }
}
