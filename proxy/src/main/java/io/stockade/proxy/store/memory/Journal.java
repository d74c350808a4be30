package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.concurrent.locks.StampedLock;
import java.util.function.Consumer;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.fence.StoreUnavailableException;

import org.jspecify.annotations.Nullable;

/**
 * An append-only, fsync'd, segmented journal with group commit.
 * <p>
 * Callers {@link #append} encoded records (getting a log sequence number, LSN) and then {@link #awaitDurable}
 * that LSN. One platform thread, {@code stockade-journal}, takes every record queued so far, writes them in one
 * go, forces the file once, publishes the highest LSN it wrote as durable and wakes the waiters: the more callers
 * at once, the more records share one fsync.
 * <p>
 * After an I/O error the journal is failed: every waiter and every later call gets {@link
 * StoreUnavailableException}, and the writer {@link #heal heals} it as soon as it can, retrying with a growing pause.
 * A failed fsync is never retried on the same file (the kernel may have dropped the dirty pages, and a later fsync
 * could report success for data that is gone): the heal verifies that the state in memory covers every record on
 * disk, cuts the segment back to its last acknowledged byte, and writes the whole state into a new segment, which
 * makes every state in memory durable again, the unacknowledged raises of the failed write included.
 */
final class Journal implements AutoCloseable {

    private static final Logger LOG = Logger.getLogger(Journal.class.getName());
    private static final String LOCK_FILE = "journal.lock";

    /** Opens segment files; tests substitute channels that fail or stall. */
    @FunctionalInterface
    interface ChannelOpener {
        ChannelOpener DEFAULT = FileChannel::open;

        FileChannel open(Path path, OpenOption... options) throws IOException;
    }

    /** Writes the full current state, one {@link RecordCodec#encode encoded} record per scope. */
    @FunctionalInterface
    interface SnapshotSource {
        void writeTo(Consumer<byte[]> sink);
    }

    /**
     * Whether the state in memory covers a journaled record (its scope's token, or the floor over a retired scope,
     * at least the record's; a floor at least the record's): checked for every record on disk before a heal, so that
     * a heal never writes a state lower than the disk's.
     */
    @FunctionalInterface
    interface Coverage {
        boolean covers(byte type, byte[] a, int offset, int length, long token);
    }

    /**
     * The journal is failed.
     *
     * @param reason     the error that failed it, or the last heal's
     * @param sinceNanos when it failed ({@link System#nanoTime})
     */
    record Failed(String reason, long sinceNanos) {
    }

    /** The first pause before a heal, doubled after each failed one up to {@link #HEAL_MAX_PAUSE_NANOS}. */
    static final long HEAL_FIRST_PAUSE_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    static final long HEAL_MAX_PAUSE_NANOS = TimeUnit.SECONDS.toNanos(2);
    /** A heal that keeps failing is logged once, then once a minute. */
    private static final long HEAL_LOG_NANOS = TimeUnit.MINUTES.toNanos(1);

    /** Thrown from inside {@link #append} (often within a map's compute): unchecked, converted by the caller. */
    static final class Unavailable extends RuntimeException {
        Unavailable(String message, @Nullable Throwable cause) {
            super(message, cause, false, false);
        }

        StoreUnavailableException toChecked() {
            return new StoreUnavailableException(Objects.requireNonNull(getMessage(), "an Unavailable has a message"),
                    getCause());
        }
    }

    private final Path dir;
    private final long compactAfterBytes;
    private final ChannelOpener opener;
    private final FileChannel lockChannel;
    private final FileLock lock;

    /**
     * Updates hold a read stamp while they change the map and queue their record; compaction takes the write
     * lock once, as a barrier, before it snapshots the map. See {@link #compact}.
     */
    private final StampedLock updates = new StampedLock();

    private final ReentrantLock queueLock = new ReentrantLock();
    private final Condition queueNotEmpty = queueLock.newCondition();
    private ArrayList<byte[]> queue = new ArrayList<>();  // guarded by queueLock
    private long lastLsn;                                 // guarded by queueLock
    private boolean closing;                              // guarded by queueLock
    private volatile @Nullable Throwable failure;         // written under queueLock; null while the journal works

    private final ReentrantLock durableLock = new ReentrantLock();
    private final Condition durableChanged = durableLock.newCondition();
    private volatile long durableLsn;
    private volatile boolean writerDone;

    private final Thread writer;
    @SuppressWarnings("NullAway.Init")  // set by start(), before the writer thread (its only reader) starts
    private SnapshotSource snapshotSource;
    @SuppressWarnings("NullAway.Init")  // set by start(), before the writer thread (its only reader) starts
    private Coverage coverage;
    /** When the journal failed ({@link System#nanoTime}); meaningful while {@link #failure} is set. */
    private volatile long failedAt;
    /** Why the last heal failed, or null. */
    private volatile @Nullable String healError;
    private volatile long heals;

    // Writer thread only (and open() before the writer starts).
    @SuppressWarnings("NullAway.Init")  // set by recover(), which open() calls before it returns the journal
    private FileChannel active;
    private long activeSeq;
    private long activeSize;
    private long activeSnapshotBytes;
    private final List<Segments.Segment> older = new ArrayList<>();
    private long olderBytes;
    private final ByteBuffer out = ByteBuffer.allocateDirect(256 * 1024);

    // Statistics: written by the writer thread only, read by anyone.
    private volatile long recordsWritten;
    private volatile long fsyncs;
    private volatile long compactions;
    private volatile int segmentCount;
    private volatile long journalBytes;

    private Journal(Path dir, long compactAfterBytes, ChannelOpener opener, FileChannel lockChannel, FileLock lock) {
        this.dir = dir;
        this.compactAfterBytes = compactAfterBytes;
        this.opener = opener;
        this.lockChannel = lockChannel;
        this.lock = lock;
        this.writer = Thread.ofPlatform().name("stockade-journal").daemon(true).unstarted(this::run);
    }

    /**
     * Opens (creating if needed) the journal in {@code dir}, replays every segment into {@code replay} in order and
     * prepares the last segment for appending. Call {@link #start} next.
     */
    static Journal open(Path dir, long compactAfterBytes, ChannelOpener opener,
                        RecordCodec.Sink replay) throws IOException {
        if (!Files.isDirectory(dir)) {
            Path existing = dir.toAbsolutePath();
            while (existing.getParent() != null && !Files.isDirectory(existing.getParent())) {
                existing = existing.getParent();
            }
            Files.createDirectories(dir);
            // Make each created directory's entry durable, from the deepest up to the one that existed before.
            for (Path d = dir.toAbsolutePath(); d != null && d.startsWith(existing); d = d.getParent()) {
                if (d.getParent() != null) {
                    Segments.fsyncDirectory(d.getParent());
                }
            }
        }
        FileChannel lockChannel = FileChannel.open(dir.resolve(LOCK_FILE),
                StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock = null;
        try {
            try {
                lock = lockChannel.tryLock();
            } catch (OverlappingFileLockException e) {
                throw new IOException(dir + ": journal already open in this process", e);
            }
            if (lock == null) {
                throw new IOException(dir + ": journal in use by another process (" + LOCK_FILE + " is locked)");
            }
            Journal j = new Journal(dir, compactAfterBytes, opener, lockChannel, lock);
            j.recover(replay);
            return j;
        } catch (IOException | RuntimeException e) {
            if (lock != null) {
                lock.release();
            }
            lockChannel.close();
            throw e;
        }
    }

    private void recover(RecordCodec.Sink replay) throws IOException {
        List<Segments.Segment> segments = Segments.list(dir);
        long validEnd = 0;
        for (int i = 0; i < segments.size(); i++) {
            boolean last = i == segments.size() - 1;
            Segments.Segment s = segments.get(i);
            Segments.Replayed replayed = Segments.replay(s.path(), last, replay);
            replayed.logTornTailAtOpen(s.path());
            validEnd = replayed.validEnd();
            if (!last) {
                older.add(s);
                olderBytes += Files.size(s.path());
            }
        }
        if (segments.isEmpty()) {
            activeSeq = 1;
            active = opener.open(Segments.path(dir, activeSeq),
                    StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
            Segments.fsyncDirectory(dir);
        } else {
            activeSeq = segments.getLast().seq();
            active = opener.open(segments.getLast().path(), StandardOpenOption.WRITE);
            try {
                if (active.size() > validEnd) {
                    active.truncate(validEnd);
                    active.force(true);
                }
                active.position(validEnd);
            } catch (IOException e) {
                active.close();
                throw e;
            }
        }
        activeSize = validEnd;
        publishStats();
    }

    /**
     * Starts the writer thread; {@code source} writes the full state when a segment is compacted or the journal
     * heals, {@code coverage} says whether the state covers a record on disk (checked before a heal).
     */
    void start(SnapshotSource source, Coverage coverage) {
        this.snapshotSource = source;
        this.coverage = coverage;
        writer.start();
    }

    /** Enters an update: hold the returned stamp while changing state and {@link #append appending} its record. */
    long beginUpdate() {
        return updates.readLock();
    }

    void endUpdate(long stamp) {
        updates.unlockRead(stamp);
    }

    /**
     * Queues a fully encoded record.
     *
     * @return its LSN, to pass to {@link #awaitDurable}
     * @throws Unavailable when the journal is closed or failed
     */
    long append(byte[] record) {
        queueLock.lock();
        try {
            if (failure != null) {
                throw new Unavailable("fence journal failed: " + failure, failure);
            }
            if (closing) {
                throw new Unavailable("fence store closed", null);
            }
            queue.add(record);
            if (queue.size() == 1) {
                queueNotEmpty.signal();
            }
            return ++lastLsn;
        } finally {
            queueLock.unlock();
        }
    }

    /** Throws when the journal can no longer make anything durable. */
    void checkUsable() throws StoreUnavailableException {
        Throwable f = failure;
        if (f != null) {
            throw new StoreUnavailableException("fence journal failed: " + f, f);
        }
    }

    /**
     * Returns once every record up to {@code lsn} is on disk (fsync'd). Blocks the calling thread (virtual threads
     * unmount) without spinning.
     *
     * @throws StoreUnavailableException if the journal failed, or stopped before {@code lsn} was durable, or the
     *                                   wait was interrupted; the caller cannot claim the state is durable
     */
    void awaitDurable(long lsn) throws StoreUnavailableException {
        checkUsable();
        if (durableLsn >= lsn) {
            return;
        }
        durableLock.lock();
        try {
            while (true) {
                checkUsable();
                if (durableLsn >= lsn) {
                    return;
                }
                if (writerDone) {
                    throw new StoreUnavailableException("fence store closed before the journal record was durable");
                }
                durableChanged.await();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for the fence journal", e);
        } finally {
            durableLock.unlock();
        }
    }

    private void run() {
        try {
            while (writeUntilClosedOrFailed() && awaitHeal()) {
                LOG.fine("fence journal writer resumes");
            }
        } finally {
            durableLock.lock();
            try {
                writerDone = true;
                durableChanged.signalAll();
            } finally {
                durableLock.unlock();
            }
        }
    }

    /**
     * Writes batches until the journal closes (false) or an I/O error fails it (true: heal, then write on). An
     * {@link Error} fails it for good (false).
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // the statistics have one writer, this thread: no update is lost
    private boolean writeUntilClosedOrFailed() {
        try {
            while (true) {
                ArrayList<byte[]> batch;
                long end;
                queueLock.lock();
                try {
                    while (queue.isEmpty() && !closing) {
                        queueNotEmpty.awaitUninterruptibly();
                    }
                    if (queue.isEmpty()) {
                        break;  // closing, and everything queued is durable
                    }
                    batch = queue;
                    queue = new ArrayList<>(Math.max(16, batch.size()));
                    end = lastLsn;
                } finally {
                    queueLock.unlock();
                }
                // activeSize grows only once the batch is written and forced: after a failure it is the end of the
                // last acknowledged record, which a heal cuts the segment back to
                long written = write(active, batch);
                active.force(false);
                activeSize += written;
                fsyncs++;
                recordsWritten += batch.size();
                publishStats();
                publishDurable(end);
                if (activeSize - activeSnapshotBytes > compactAfterBytes) {
                    compact();
                }
            }
            active.close();
            return false;
        } catch (IOException | RuntimeException e) {
            fail(e);
            return true;
        } catch (Error e) {
            fail(e);
            return false;
        }
    }

    /**
     * After a failure: {@link #heal} after a pause, the pause doubling up to {@link #HEAL_MAX_PAUSE_NANOS} while it
     * fails; true once healed, false when the journal closes first.
     */
    private boolean awaitHeal() {
        long pause = HEAL_FIRST_PAUSE_NANOS;
        long loggedAt = System.nanoTime() - HEAL_LOG_NANOS;
        while (true) {
            queueLock.lock();
            try {
                long left = pause;
                while (!closing && left > 0) {
                    left = queueNotEmpty.awaitNanos(left); // close() signals; appends refuse while failed
                }
                if (closing) {
                    return false;
                }
            } catch (InterruptedException e) {
                return false; // nobody interrupts the writer but the JVM going down
            } finally {
                queueLock.unlock();
            }
            try {
                heal();
                return true;
            } catch (IOException | RuntimeException e) {
                healError = String.valueOf(e);
                if (System.nanoTime() - loggedAt >= HEAL_LOG_NANOS) {
                    loggedAt = System.nanoTime();
                    LOG.log(Level.WARNING, "fence journal in " + dir + " cannot heal yet (retrying every "
                            + TimeUnit.NANOSECONDS.toMillis(HEAL_MAX_PAUSE_NANOS) + " ms at most; logged once a"
                            + " minute): " + e, e);
                }
                pause = Math.min(pause * 2, HEAL_MAX_PAUSE_NANOS);
            }
        }
    }

    /**
     * Brings a failed journal back, never lowering a fence a caller was told of:
     * <ol>
     *     <li>a barrier ({@link #updates}' write lock): every update that queued a record before the failure has
     *     put its state in the map (while failed, {@link #append} refuses, so nothing changes the map after it);</li>
     *     <li>every record on disk is replayed (checksums verified) and must be covered by the map
     *     ({@link Coverage}): the map holds every acknowledged state and never goes below the disk, or this is a
     *     bug and the journal stays failed (a restart replays the disk);</li>
     *     <li>the active segment is cut back to its last acknowledged byte, through a fresh channel: what the failed
     *     write left after it was never acknowledged (its fsync did not succeed);</li>
     *     <li>the whole state goes into a new segment, fsync'd with the directory (a new file: a failed fsync is
     *     never retried on the old one), and the older segments are deleted;</li>
     *     <li>every LSN handed out so far is durable now (the snapshot holds every state the map holds, the
     *     unacknowledged raises of the failed write included): the failure is cleared and appends are taken
     *     again.</li>
     * </ol>
     * A crash at any step leaves segments that replay to every acknowledged state: the cut segment, then a partial
     * snapshot (a torn tail of the last segment, whose records are never lower), or the complete one.
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // heals has one writer, this thread
    private void heal() throws IOException {
        long stamp = updates.writeLock();
        updates.unlockWrite(stamp);

        Path activePath = Segments.path(dir, activeSeq);
        for (Segments.Segment s : older) {
            if (Files.exists(s.path())) { // a compaction that failed while deleting them left some
                verifyCovered(s.path(), false);
            }
        }
        Segments.Replayed found = verifyCovered(activePath, true);
        long keep = Math.min(found.validEnd(), activeSize);
        if (found.validEnd() < activeSize) {
            LOG.severe(activePath + ": the disk holds " + found.validEnd() + " valid bytes where " + activeSize
                    + " were written and fsync'd (" + found.torn() + "): it lost data it had confirmed. The state in"
                    + " memory holds every acknowledged fence and is written again now; check the disk");
        }
        if (found.size() > keep) {
            LOG.warning(activePath + ": cutting the " + (found.size() - keep) + " bytes after offset " + keep
                    + ", written by the write that failed: never acknowledged (no fsync of them succeeded); the"
                    + " states they carried are in the snapshot written now");
        }
        try (FileChannel old = opener.open(activePath, StandardOpenOption.WRITE)) {
            if (old.size() > keep) {
                old.truncate(keep);
            }
            old.force(true);
        }

        long seq = activeSeq + 1;
        Path path = Segments.path(dir, seq);
        FileChannel next = opener.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE,
                StandardOpenOption.TRUNCATE_EXISTING);
        long bytes;
        try {
            bytes = writeSnapshot(next);
            next.force(true);
            Segments.fsyncDirectory(dir);
        } catch (IOException | RuntimeException e) {
            try {
                next.close();
                Files.deleteIfExists(path);
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed); // a partial snapshot left as the last segment replays safely
            }
            throw e;
        }
        for (Segments.Segment s : older) {
            Files.deleteIfExists(s.path());
        }
        Files.deleteIfExists(activePath);
        Segments.fsyncDirectory(dir);
        older.clear();
        olderBytes = 0;
        active = next;
        activeSeq = seq;
        activeSize = bytes;
        activeSnapshotBytes = bytes;
        publishStats();

        long end;
        long since;
        queueLock.lock();
        try {
            end = lastLsn;
            since = failedAt;
            failure = null;
            healError = null;
        } finally {
            queueLock.unlock();
        }
        heals++;
        publishDurable(end);
        LOG.warning("fence journal in " + dir + " healed after " + TimeUnit.NANOSECONDS.toMillis(System.nanoTime()
                - since) + " ms: every fence in memory is durable in " + path.getFileName() + " (" + bytes
                + " bytes); writes are taken again");
    }

    /**
     * Replays a segment and checks that the state in memory covers each of its records; an operator's reset record
     * supersedes the records of its scope before it (they were higher, on purpose).
     */
    private Segments.Replayed verifyCovered(Path file, boolean last) throws IOException {
        Map<String, Long> uncovered = new LinkedHashMap<>();
        Segments.Replayed found = Segments.replay(file, last, (type, a, off, len, token, version) -> {
            if (type == RecordCodec.TYPE_RESET) {
                uncovered.remove(new String(a, off, len, StandardCharsets.UTF_8));
            }
            if (!coverage.covers(type, a, off, len, token)) {
                uncovered.merge(new String(a, off, len, StandardCharsets.UTF_8), token, Math::max);
            }
        });
        if (!uncovered.isEmpty()) {
            Map.Entry<String, Long> first = uncovered.entrySet().iterator().next();
            throw new IOException(file + ": " + uncovered.size() + " scopes on disk are higher than the state in"
                    + " memory (first: " + first.getKey() + " at " + first.getValue() + "); not healing in place, a"
                    + " restart replays the disk");
        }
        return found;
    }

    private void publishDurable(long lsn) {
        durableLock.lock();
        try {
            durableLsn = lsn;
            durableChanged.signalAll();
        } finally {
            durableLock.unlock();
        }
    }

    private void fail(Throwable t) {
        queueLock.lock();
        try {
            failedAt = System.nanoTime();
            failure = t;
            queue.clear();
        } finally {
            queueLock.unlock();
        }
        durableLock.lock();
        try {
            durableChanged.signalAll(); // the waiters see the failure
        } finally {
            durableLock.unlock();
        }
        LOG.log(Level.SEVERE, "fence journal in " + dir + " failed; the fence store refuses every call until it heals"
                + (t instanceof Error ? " (an Error: it will not; restart the proxy)" : " (retrying)"), t);
        try {
            active.close();
        } catch (IOException | RuntimeException e) {
            t.addSuppressed(e);
        }
    }

    /** Why the journal is failed now and since when, or null while it works. */
    @Nullable Failed failed() {
        Throwable f = failure;
        if (f == null) {
            return null;
        }
        String healing = healError;
        return new Failed(healing == null ? String.valueOf(f) : f + "; the last heal: " + healing, failedAt);
    }

    /** How many times the journal healed since open. */
    long heals() {
        return heals;
    }

    /** Writes the records in order; returns the number of bytes written. */
    private long write(FileChannel ch, List<byte[]> records) throws IOException {
        long bytes = 0;
        out.clear();
        for (byte[] r : records) {
            if (r.length > out.remaining()) {
                drain(ch);
            }
            out.put(r);
            bytes += r.length;
        }
        drain(ch);
        return bytes;
    }

    private void drain(FileChannel ch) throws IOException {
        out.flip();
        while (out.hasRemaining()) {
            ch.write(out);
        }
        out.clear();
    }

    /**
     * Starts a new segment holding a snapshot of the whole map, then deletes the older segments.
     * <p>
     * Why no concurrent update is lost. An update changes the map and queues its record inside one per-scope
     * critical section ({@code ConcurrentHashMap.compute}), holding a read stamp of {@link #updates}. Compaction
     * runs on this thread between two batches, so every record written so far is in the old segments and
     * every record queued from now on goes to the new segment, after the snapshot. A record already in the old
     * segments was queued before this point; but {@code compute} installs the new value only after its function
     * (which queued the record) returns, so the map may not show it yet. Hence the barrier: taking the write lock
     * waits until every update in progress has left its critical section. After it, each update whose record
     * is in the old segments is visible in the map, and the snapshot (taken after the barrier) contains it or a
     * later state of the same scope. A later state's own record is either in the snapshot's past (fine) or still
     * queued, and is written after the snapshot. Replay takes, per scope, the highest token and for equal tokens
     * the later record, and per scope the records are queued in state order, so the new segment alone replays to
     * exactly the current state. The old segments are deleted only once the new one and the directory are
     * fsync'd; a crash before that leaves old segments plus a partial snapshot, whose records are never lower
     * than the old ones, so replay is still right.
     */
    @SuppressWarnings("NonAtomicVolatileUpdate") // the statistics have one writer, the writer thread (this)
    private void compact() throws IOException {
        long stamp = updates.writeLock();
        updates.unlockWrite(stamp);

        long seq = activeSeq + 1;
        Path path = Segments.path(dir, seq);
        FileChannel next = opener.open(path, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE);
        long bytes;
        try {
            bytes = writeSnapshot(next);
            next.force(true);
            fsyncs++;
        } catch (IOException | RuntimeException e) {
            try {
                next.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        Segments.fsyncDirectory(dir);

        older.add(new Segments.Segment(activeSeq, Segments.path(dir, activeSeq)));
        olderBytes += activeSize;
        active.close();
        active = next;
        activeSeq = seq;
        activeSize = bytes;
        activeSnapshotBytes = bytes;
        publishStats();

        for (Segments.Segment s : older) {
            Files.deleteIfExists(s.path());
        }
        older.clear();
        olderBytes = 0;
        Segments.fsyncDirectory(dir);
        compactions++;
        publishStats();
        LOG.fine(() -> "compacted fence journal " + dir + " into " + path.getFileName() + " (" + activeSize
                + " bytes)");
    }

    private long writeSnapshot(FileChannel ch) throws IOException {
        long[] bytes = {0};
        out.clear();
        try {
            snapshotSource.writeTo(r -> {
                try {
                    if (r.length > out.remaining()) {
                        drain(ch);
                    }
                    out.put(r);
                    bytes[0] += r.length;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        drain(ch);
        return bytes[0];
    }

    private void publishStats() {
        segmentCount = older.size() + 1;
        journalBytes = olderBytes + activeSize;
    }

    long recordsWritten() {
        return recordsWritten;
    }

    long fsyncs() {
        return fsyncs;
    }

    long compactions() {
        return compactions;
    }

    int segmentCount() {
        return segmentCount;
    }

    long journalBytes() {
        return journalBytes;
    }

    /** Flushes and fsyncs everything queued, stops the writer, releases the directory lock. Idempotent. */
    @Override
    public void close() {
        queueLock.lock();
        try {
            closing = true;
            queueNotEmpty.signal();
        } finally {
            queueLock.unlock();
        }
        boolean interrupted = false;
        if (writer.getState() != Thread.State.NEW) {
            while (true) {
                try {
                    writer.join();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
        } else {
            try {
                active.close();
            } catch (IOException e) {
                LOG.log(Level.WARNING, "closing " + dir, e);
            }
        }
        try {
            if (lock.isValid()) {
                lock.release();
            }
            lockChannel.close();
        } catch (IOException e) {
            LOG.log(Level.WARNING, "releasing the lock of " + dir, e);
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }
}
