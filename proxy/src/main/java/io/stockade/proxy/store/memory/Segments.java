package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.jspecify.annotations.Nullable;

/** Segment files of a journal directory: names, listing, replay. */
final class Segments {

    private static final Logger LOG = Logger.getLogger(Segments.class.getName());
    private static final Pattern NAME = Pattern.compile("journal-(\\d{1,19})\\.log");
    private static final int WINDOW = 1 << 20;

    private Segments() {
    }

    /** A segment file and its sequence number. */
    record Segment(long seq, Path path) {
    }

    static Path path(Path dir, long seq) {
        return dir.resolve(String.format("journal-%016d.log", seq));
    }

    /** The segments in {@code dir}, oldest first. */
    static List<Segment> list(Path dir) throws IOException {
        List<Segment> out = new ArrayList<>();
        try (Stream<Path> files = Files.list(dir)) {
            for (Path p : (Iterable<Path>) files::iterator) {
                Matcher m = NAME.matcher(p.getFileName().toString());
                if (m.matches() && Files.isRegularFile(p)) {
                    out.add(new Segment(Long.parseLong(m.group(1)), p));
                }
            }
        }
        out.sort(Comparator.comparingLong(Segment::seq));
        return out;
    }

    /** A typical record's length: header, fixed fields and a scope of some 25 bytes. */
    private static final int TYPICAL_RECORD = RecordCodec.HEADER_BYTES + RecordCodec.MIN_PAYLOAD + 25;

    /**
     * About how many records the segments in {@code dir} hold (their bytes over a typical record's length), to
     * size the replay's map; 16 when there are none (or the directory cannot be listed: open reports that).
     */
    static int expectedRecords(Path dir) {
        long bytes = 0;
        try {
            if (Files.isDirectory(dir)) {
                for (Segment s : list(dir)) {
                    bytes += Files.size(s.path());
                }
            }
        } catch (IOException e) {
            return 16;
        }
        return (int) Math.max(16, Math.min(1 << 28, bytes / TYPICAL_RECORD));
    }

    /** fsync a directory, so files created, renamed or deleted in it survive a crash. */
    static void fsyncDirectory(Path dir) throws IOException {
        try (FileChannel c = FileChannel.open(dir, StandardOpenOption.READ)) {
            c.force(true);
        }
    }

    /**
     * Feeds every record of {@code file} to {@code sink}, in file order.
     * <p>
     * A record that is incomplete or fails its checksum ends the replay. In the last segment that is the tail of a
     * write a crash interrupted, and the caller truncates it away, but only if no valid record follows it: a
     * valid record after a bad one means damage in the middle of the file, and skipping it could lower a fence.
     * In any other segment every record was fsync'd before the next segment was created, so a bad record is
     * corruption and the journal refuses to open.
     *
     * @return the length of the valid prefix (the file length when all of it is valid), and why the rest is not
     * @throws IOException naming the file and the offset on corruption
     */
    static Replayed replay(Path file, boolean last, RecordCodec.Sink sink) throws IOException {
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            Window w = new Window(ch);
            long pos = 0;
            while (pos < w.size) {
                String bad = check(w, pos);
                if (bad == null) {
                    int len = w.buf.getInt(w.at(pos));
                    try {
                        RecordCodec.decode(w.buf.array(), w.at(pos) + RecordCodec.HEADER_BYTES, len, sink);
                    } catch (IllegalArgumentException e) {
                        throw new IOException(file + ": malformed journal record at offset " + pos + " ("
                                + e.getMessage() + ") although its checksum matches", e);
                    } catch (RuntimeException e) {
                        throw new IOException(file + ": replaying the record at offset " + pos + " failed: "
                                + e.getMessage(), e); // e.g. more scopes than one table holds
                    }
                    pos += RecordCodec.HEADER_BYTES + len;
                    continue;
                }
                if (!last) {
                    throw new IOException(file + ": corrupt journal record at offset " + pos + " (" + bad
                            + ") in a segment that is not the last one; refusing to open, fence state would be lost");
                }
                long next = findValidRecord(w, pos + 1);
                if (next >= 0) {
                    throw new IOException(file + ": corrupt journal record at offset " + pos + " (" + bad
                            + ") followed by a valid record at offset " + next
                            + "; this is not a torn tail, refusing to open, fence state would be lost");
                }
                return new Replayed(pos, w.size, bad);
            }
            return new Replayed(w.size, w.size, null);
        }
    }

    /**
     * What a replay of one segment found.
     *
     * @param validEnd the length of the valid prefix
     * @param size     the file's length
     * @param torn     why the record at {@code validEnd} is not valid (only in the last segment, with nothing valid
     *                 after it), or null when the whole file is valid
     */
    record Replayed(long validEnd, long size, @Nullable String torn) {
        /**
         * Logs the torn tail found when the journal opens, saying only what the replay knows: a record is
         * acknowledged only once an fsync of it succeeded, but whether this one was, the bytes cannot tell (a crash
         * or a failed write leaves such a tail; so does a disk that lost data after confirming it).
         */
        void logTornTailAtOpen(Path file) {
            if (torn != null) {
                LOG.warning(file + ": torn record at offset " + validEnd + " (" + torn + "), truncating the last "
                        + (size - validEnd) + " bytes: an incomplete or damaged record at the end of the last segment,"
                        + " with nothing valid after it, as a crash or a failed write leaves it. A record is"
                        + " acknowledged only after its fsync succeeded; the replay cannot tell whether this one's"
                        + " did (it did not, unless the disk lost data after confirming it)");
            }
        }
    }

    /** Why the record at {@code pos} is not valid, or {@code null} when it is. */
    private static @Nullable String check(Window w, long pos) throws IOException {
        if (!w.ensure(pos, RecordCodec.HEADER_BYTES)) {
            return "incomplete header";
        }
        int len = w.buf.getInt(w.at(pos));
        if (!RecordCodec.plausibleLength(len)) {
            return "impossible length " + len;
        }
        if (!w.ensure(pos, RecordCodec.HEADER_BYTES + len)) {
            return "record of " + len + " bytes runs past the end of the file";
        }
        int crc = w.buf.getInt(w.at(pos) + 4);
        if (crc != RecordCodec.crc(w.buf, w.at(pos), len)) {
            return "checksum mismatch";
        }
        return null;
    }

    /** The offset of the first checksum-valid record at or after {@code from}, or -1. */
    private static long findValidRecord(Window w, long from) throws IOException {
        for (long p = from; p + RecordCodec.HEADER_BYTES + RecordCodec.MIN_PAYLOAD <= w.size; p++) {
            if (check(w, p) == null) {
                return p;
            }
        }
        return -1;
    }

    /** A sliding read window over a file, large enough for the biggest record. */
    private static final class Window {
        final FileChannel ch;
        final long size;
        final ByteBuffer buf = ByteBuffer.allocate(Math.max(WINDOW, RecordCodec.MAX_RECORD));
        long start;

        Window(FileChannel ch) throws IOException {
            this.ch = ch;
            this.size = ch.size();
            buf.limit(0);
        }

        int at(long pos) {
            return (int) (pos - start);
        }

        /** Makes bytes [pos, pos+n) readable at {@link #at}; false when the file is shorter. */
        boolean ensure(long pos, int n) throws IOException {
            if (pos + n > size) {
                return false;
            }
            if (pos >= start && pos + n <= start + buf.limit()) {
                return true;
            }
            start = pos;
            buf.clear();
            while (buf.hasRemaining()) {
                if (ch.read(buf, start + buf.position()) < 0) {
                    break;
                }
            }
            buf.flip();
            if (buf.limit() < n) {
                throw new IOException("file shrank while reading it");
            }
            return true;
        }
    }
}
