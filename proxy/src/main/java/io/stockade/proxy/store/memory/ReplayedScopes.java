package io.stockade.proxy.store.memory;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.LongConsumer;

import org.jspecify.annotations.Nullable;

/**
 * The scopes a journal replay found, in a compact table that is built once (single-threaded, while the journal
 * is replayed) and never changed afterwards; the store keeps every later change in its concurrent map, in front of
 * this table ({@code MemoryFenceStore}).
 * <p>
 * Why a table of its own: a scope in a {@code ConcurrentHashMap<String, Entry>} is four objects (the string, its
 * bytes, the map node, the entry), about 140 bytes on a 64-bit JVM, and at 10 million scopes the replay spent most
 * of its time in the collector copying them (docs/benchmarks.md, Scale). Here a scope is its UTF-8 bytes in a large
 * shared byte array (with a length prefix) and one slot: two adjacent longs (28 bits of its hash with where its
 * bytes are; its token, so that a probe and its hit share a cache line) and a version reference, the table filled
 * to about 70 %: some 60 bytes a scope, and next to nothing for the collector to trace.
 * <p>
 * Replay semantics, as the journal defines them: per scope the highest token wins and, for equal tokens, the later
 * record (with its version); a retire record removes the scope until a later state record brings it back.
 * <p>
 * Thread safety: {@link #put} and {@link #retire} only during the replay, then {@link #freeze}; after that the
 * table is read-only and safe to read from any thread once published (the store holds it in a final field).
 */
final class ReplayedScopes {
    /** Bytes per arena chunk; a key never spans two chunks (the longest key is 64 KiB plus its length prefix). */
    private static final int CHUNK_BITS = 24;
    private static final int CHUNK = 1 << CHUNK_BITS;
    private static final double MAX_LOAD = 0.75;
    private static final double TARGET_LOAD = 0.7;
    /** A slot's token when its scope was retired during the replay (and not written again). */
    private static final long REMOVED = -1;

    /** The first arena chunk: small, so that a small journal costs a small heap; each next one doubles to CHUNK. */
    private static final int FIRST_CHUNK = 64 * 1024;

    private byte[][] chunks = new byte[1][];
    private int chunkCount;
    private int chunkUsed = Integer.MAX_VALUE; // forces a first chunk
    private int chunkLength;
    /** Bytes of every arena chunk allocated. */
    private long arenaBytes;
    /** Told the footprint the table is about to grow to, before it allocates; may refuse by throwing. */
    private LongConsumer growth = bytes -> { };
    /** Bits of a slot's meta word that say where its key is: 1 + (chunk << CHUNK_BITS | offset); 0: empty slot. */
    private static final int REF_BITS = 36;
    private static final long REF_MASK = (1L << REF_BITS) - 1;
    /**
     * Per slot two longs: at {@code 2 * slot} the meta word (the high 28 bits of the key's hash, then
     * {@link #REF_BITS} bits of key reference; 0 for an empty slot), at {@code 2 * slot + 1} the token.
     */
    private long[] table;
    private @Nullable String[] versions;
    private int capacity;
    /** Slots in use (scopes removed during the replay included). */
    private int used;
    /** Scopes present (not removed). */
    private int size;
    private boolean frozen;

    /** A table sized for about {@code expected} scopes (it grows when there are more). */
    ReplayedScopes(int expected) {
        allocate(capacityFor(Math.max(16, expected)));
    }

    /** A table that tells {@code growth} the footprint it is about to reach before each allocation. */
    ReplayedScopes(int expected, LongConsumer growth) {
        growth.accept(slotsFootprint(expected));
        allocate(capacityFor(Math.max(16, expected)));
        this.growth = growth;
    }

    private static int capacityFor(int scopes) {
        long c = (long) Math.ceil(scopes / TARGET_LOAD) + 1;
        if (c > Integer.MAX_VALUE - 8) {
            throw new IllegalStateException("too many scopes for one table: " + scopes);
        }
        return (int) c;
    }

    private void allocate(int cap) {
        if (cap > (Integer.MAX_VALUE - 8) / 2) {
            throw new IllegalStateException("too many scopes for one table: " + cap);
        }
        capacity = cap;
        table = new long[2 * cap];
        versions = new String[cap];
    }

    int size() {
        return size;
    }

    /** The heap this table takes now: its arena chunks, its slots and its version references (8 bytes each). */
    long footprint() {
        return arenaBytes + (long) table.length * Long.BYTES + (long) versions.length * 8;
    }

    /** The heap a table sized for {@code scopes} takes before any key is stored. */
    static long slotsFootprint(int scopes) {
        return (long) capacityFor(Math.max(16, scopes)) * (2 * Long.BYTES + 8);
    }

    // ---- building (the replay) ----

    /**
     * A state record: the scope's bytes are {@code len} bytes of {@code a} from {@code off} (copied when the scope
     * is new). Keeps the highest token; for an equal token the later record.
     */
    void put(byte[] a, int off, int len, long token, @Nullable String version) {
        checkBuilding();
        stage(a, off, len, token, version, false);
    }

    /** A retire record: the scope is gone (until a later state record). */
    void retire(byte[] a, int off, int len) {
        checkBuilding();
        stage(a, off, len, 0, null, true);
    }

    // Records are applied in batches, in their order: the slots a batch will probe are loaded first, all at once,
    // so that their cache misses overlap instead of following one another (the probe is the replay's cost).
    private static final int BATCH = 32;
    /** The batch's scope bytes; null once {@link #freeze} ended the replay (no record is staged after it). */
    private byte @Nullable [] staged = new byte[BATCH * 64];
    private int stagedBytes;
    private int batch;
    private final int[] batchOffset = new int[BATCH];
    private final int[] batchLength = new int[BATCH];
    private final int[] batchHash = new int[BATCH];
    private final long[] batchToken = new long[BATCH];
    private final @Nullable String[] batchVersion = new String[BATCH];
    private final boolean[] batchRetire = new boolean[BATCH];
    /** Where the batch's early loads go, so that they are not optimized away. */
    @SuppressWarnings("UnusedVariable") // written, never read, on purpose: the store keeps the loads alive
    private long touched;

    private void stage(byte[] a, int off, int len, long token, @Nullable String version, boolean retire) {
        byte[] buf = Objects.requireNonNull(staged, "staged is freed by freeze(), and checkBuilding() ran");
        if (stagedBytes + len > buf.length) {
            flush();
            if (len > buf.length) {
                buf = new byte[len];
                staged = buf;
            }
        }
        System.arraycopy(a, off, buf, stagedBytes, len);
        batchOffset[batch] = stagedBytes;
        batchLength[batch] = len;
        batchHash[batch] = hash28(a, off, len);
        batchToken[batch] = token;
        batchVersion[batch] = version;
        batchRetire[batch] = retire;
        stagedBytes += len;
        if (++batch == BATCH) {
            flush();
        }
    }

    private void flush() {
        byte[] buf = Objects.requireNonNull(staged, "staged is freed by freeze(), after its last flush()");
        long sum = 0;
        for (int i = 0; i < batch; i++) {
            sum += table[2 * home(batchHash[i])];
        }
        touched += sum;
        for (int i = 0; i < batch; i++) {
            if (batchRetire[i]) {
                applyRetire(buf, batchOffset[i], batchLength[i], batchHash[i]);
            } else {
                applyPut(buf, batchOffset[i], batchLength[i], batchHash[i], batchToken[i], batchVersion[i]);
            }
            batchVersion[i] = null;
        }
        batch = 0;
        stagedBytes = 0;
    }

    @SuppressWarnings("ReferenceEquality") // identity meant: the very same version String needs no store
    private void applyPut(byte[] a, int off, int len, int h, long token, @Nullable String version) {
        int slot = find(a, off, len, h);
        if (slot >= 0) {
            long current = table[2 * slot + 1];
            if (current == REMOVED) {
                size++;
            }
            if (current == REMOVED || token >= current) {
                table[2 * slot + 1] = token;
                if (versions[slot] != version) {
                    versions[slot] = version;
                }
            }
            return;
        }
        if (used + 1 > capacity * MAX_LOAD) {
            rehash(capacityFor(Math.max(used + 1, size * 2)));
        }
        slot = insertionSlot(h);
        table[2 * slot] = ((long) h << REF_BITS) | (1 + store(a, off, len));
        table[2 * slot + 1] = token;
        if (version != null) {
            versions[slot] = version;
        }
        used++;
        size++;
    }

    private void applyRetire(byte[] a, int off, int len, int h) {
        int slot = find(a, off, len, h);
        if (slot >= 0 && table[2 * slot + 1] != REMOVED) {
            table[2 * slot + 1] = REMOVED;
            versions[slot] = null;
            size--;
        }
    }

    /** Ends the replay: drops removed scopes and spare room, so the table holds what it reads. */
    void freeze() {
        checkBuilding();
        flush();
        staged = null;
        if (used != size || capacity > capacityFor(size) * 1.25) {
            rehash(capacityFor(size));
        }
        frozen = true;
    }

    private void checkBuilding() {
        if (frozen) {
            throw new IllegalStateException("replayed scopes are read-only after the replay");
        }
    }

    private void rehash(int newCapacity) {
        growth.accept(footprint() + (long) newCapacity * (2 * Long.BYTES + 8));
        long[] oldTable = table;
        @Nullable String[] oldVersions = versions;
        allocate(newCapacity);
        used = 0;
        for (int i = 0; i < oldVersions.length; i++) {
            long meta = oldTable[2 * i];
            if (meta != 0 && oldTable[2 * i + 1] != REMOVED) {
                int slot = insertionSlot((int) (meta >>> REF_BITS));
                table[2 * slot] = meta;
                table[2 * slot + 1] = oldTable[2 * i + 1];
                versions[slot] = oldVersions[i];
                used++;
            }
        }
        // Keys of removed scopes stay in the arena until the next open; they are rare (retired scopes).
    }

    /** Copies a key into the arena: a varint length, then the bytes. */
    private long store(byte[] a, int off, int len) {
        int need = varintSize(len) + len;
        if ((long) chunkUsed + need > chunkLength) {
            if (chunkCount == chunks.length) {
                chunks = Arrays.copyOf(chunks, chunks.length * 2);
            }
            int length = (int) Math.min(CHUNK, Math.max(Math.max(FIRST_CHUNK, 2L * chunkLength), need));
            growth.accept(footprint() + length);
            chunks[chunkCount++] = new byte[length];
            chunkLength = length;
            arenaBytes += length;
            chunkUsed = 0;
        }
        if (((long) chunkCount << CHUNK_BITS) + CHUNK > REF_MASK) {
            throw new IllegalStateException("scopes too many or too long for one table");
        }
        byte[] chunk = chunks[chunkCount - 1];
        int at = chunkUsed;
        int p = at;
        int v = len;
        while (v >= 0x80) {
            chunk[p++] = (byte) (v | 0x80);
            v >>>= 7;
        }
        chunk[p++] = (byte) v;
        System.arraycopy(a, off, chunk, p, len);
        chunkUsed = p + len;
        return ((long) (chunkCount - 1) << CHUNK_BITS) | at;
    }

    private static int varintSize(int v) {
        int n = 1;
        while (v >= 0x80) {
            v >>>= 7;
            n++;
        }
        return n;
    }

    // ---- reading ----

    /** The slot of {@code scope}, or -1 (a scope removed during the replay reads as absent once frozen). */
    int slotOf(byte[] scope) {
        int slot = find(scope, 0, scope.length, hash28(scope, 0, scope.length));
        return slot < 0 || table[2 * slot + 1] == REMOVED ? -1 : slot;
    }

    long tokenAt(int slot) {
        return table[2 * slot + 1];
    }

    @Nullable String versionAt(int slot) {
        return versions[slot];
    }

    /** What {@link #forEach} passes. */
    interface Visitor {
        void scope(String scope, long token, @Nullable String version);
    }

    /** Every scope the replay left, in no particular order. */
    void forEach(Visitor visitor) {
        for (int i = 0; i < capacity; i++) {
            long meta = table[2 * i];
            if (meta != 0 && table[2 * i + 1] != REMOVED) {
                visitor.scope(key((meta & REF_MASK) - 1), table[2 * i + 1], versions[i]);
            }
        }
    }

    private String key(long ref) {
        byte[] chunk = chunks[(int) (ref >>> CHUNK_BITS)];
        long at = keyAt(chunk, (int) (ref & (CHUNK - 1)));
        return new String(chunk, (int) (at >>> 32), (int) at, StandardCharsets.UTF_8);
    }

    /** Where a stored key's bytes start (high 32 bits) and how many there are (low 32 bits), past its length. */
    private static long keyAt(byte[] chunk, int p) {
        int len = 0;
        int shift = 0;
        byte b;
        do {
            b = chunk[p++];
            len |= (b & 0x7f) << shift;
            shift += 7;
        } while (b < 0);
        return ((long) p << 32) | len;
    }

    // ---- the table ----

    private int find(byte[] a, int off, int len, int h) {
        int slot = home(h);
        while (true) {
            long meta = table[2 * slot];
            if (meta == 0) {
                return -1;
            }
            if ((int) (meta >>> REF_BITS) == h && sameKey((meta & REF_MASK) - 1, a, off, len)) {
                return slot;
            }
            slot = slot + 1 == capacity ? 0 : slot + 1;
        }
    }

    private int insertionSlot(int h) {
        int slot = home(h);
        while (table[2 * slot] != 0) {
            slot = slot + 1 == capacity ? 0 : slot + 1;
        }
        return slot;
    }

    /** The slot a 28-bit hash starts probing at: the hash scaled onto [0, capacity) (no modulo, any capacity). */
    private int home(int h) {
        return (int) (((long) h * capacity) >>> (64 - REF_BITS));
    }

    private boolean sameKey(long ref, byte[] a, int off, int len) {
        byte[] chunk = chunks[(int) (ref >>> CHUNK_BITS)];
        long at = keyAt(chunk, (int) (ref & (CHUNK - 1)));
        int p = (int) (at >>> 32);
        return (int) at == len && Arrays.equals(chunk, p, p + len, a, off, off + len);
    }

    /** The high 28 bits of {@link #hash}, what a slot keeps. */
    private static int hash28(byte[] a, int off, int len) {
        return hash(a, off, len) >>> (32 - (64 - REF_BITS));
    }

    /** A well-spread hash of a key's bytes (FNV-1a, then a murmur3 finalizer). */
    static int hash(byte[] a, int off, int len) {
        int h = 0x811c9dc5;
        for (int i = off; i < off + len; i++) {
            h = (h ^ a[i]) * 0x01000193;
        }
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h;
    }
}
