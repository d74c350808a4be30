package io.stockade.proxy;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.time.Instant;

/**
 * The record that the previous run of a proxy on this journal shut down cleanly: no write was in flight to a
 * serialized upstream, no scope was quarantined and no policy was still settling when it stopped. A proxy that
 * starts and finds it skips the settle after start (the wait for writes a crashed run may have left in flight),
 * since there are none.
 * <p>
 * The record is a file, {@value #FILE}, in the memory store's journal directory (which the store locks: one proxy
 * at a time). It is removed, durably, before the proxy serves, so a later crash is never taken for a clean stop; it
 * is written, durably, only at the end of a clean stop. The etcd and postgres stores have no directory of the
 * proxy's own, and are shared by replicas: each run keeps a record of its own there instead
 * ({@code io.stockade.proxy.store.runs.SharedRuns}).
 */
final class CleanShutdown {
    static final String FILE = "clean-shutdown";

    private CleanShutdown() {
    }

    /**
     * Whether the previous run stopped cleanly; removes the record either way (durably), so that only the run that
     * writes it again can be taken for clean.
     */
    static boolean consume(Path dir) throws IOException {
        Path file = dir.resolve(FILE);
        if (!Files.exists(file)) {
            return false;
        }
        Files.delete(file);
        syncDirectory(dir);
        return true;
    }

    /** Records a clean stop, durably (a temporary file, synced, renamed, the directory synced). */
    static void record(Path dir) throws IOException {
        Path tmp = dir.resolve(FILE + ".tmp");
        try (FileChannel ch = FileChannel.open(tmp, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING)) {
            ch.write(ByteBuffer.wrap(("stopped cleanly at " + Instant.now() + "\n")
                    .getBytes(StandardCharsets.UTF_8)));
            ch.force(true);
        }
        Files.move(tmp, dir.resolve(FILE), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
        syncDirectory(dir);
    }

    private static void syncDirectory(Path dir) throws IOException {
        try (FileChannel ch = FileChannel.open(dir, StandardOpenOption.READ)) {
            ch.force(true);
        }
    }
}
