package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.stockade.policy.StoreConfig;

/**
 * The heap a journal's replay may take ({@code max-scope-memory} resolved against {@code -Xmx}), checked before the
 * replay starts and while it runs, so that a journal too large for the heap refuses the start with the heap it
 * needs instead of ending in an {@code OutOfMemoryError} mid-replay.
 * <p>
 * Before: what a compaction cannot take away (the journal less one segment's worth of updates,
 * {@code compact-after}) is a lower bound of the scopes' bytes, each of which the replay keeps at least once; the
 * table's slots are sized from the journal but never past the budget. While: the table's footprint is compared
 * with the budget every {@value #EVERY} records.
 */
final class ReplayBudget {
    /** What the table may always take, whatever the budget: a small journal starts on any heap the proxy runs on. */
    static final long ALLOWANCE = 1L << 20;
    /** How often (records) the running check looks at the table's footprint. */
    static final int EVERY = 4096;
    /** And after how many bytes of scopes read since it last looked (long scopes are few records). */
    static final long EVERY_BYTES = 1L << 20;

    private final StoreConfig.Memory config;
    private final long maxHeap;
    private final long budget;
    private final long journalBytes;
    private final int expectedScopes;
    private long records;
    private long bytesRead;
    private long bytesAtLastCheck;

    private ReplayBudget(StoreConfig.Memory config, long maxHeap, long budget, long journalBytes,
                         int expectedScopes) {
        this.config = config;
        this.maxHeap = maxHeap;
        this.budget = budget;
        this.journalBytes = journalBytes;
        this.expectedScopes = expectedScopes;
    }

    /** A journal that cannot fit in the budget: the start is refused with the heap it needs. */
    static final class Exceeded extends RuntimeException {
        Exceeded(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Checks the journal's size against the budget before anything is read.
     *
     * @throws IOException naming the heap needed when even the journal's incompressible part does not fit
     */
    static ReplayBudget check(StoreConfig.Memory config, long maxHeap, long budget) throws IOException {
        long journal = journalBytes(config.journal());
        long lowerBound = Math.max(0, journal - config.compactAfterBytes());
        if (lowerBound > Math.max(budget, ALLOWANCE)) {
            throw new IOException(tooLarge(config, maxHeap, budget, journal, "holds at least " + lowerBound
                    + " bytes of scopes beyond what a compaction could remove", lowerBound));
        }
        long slotBytes = ReplayedScopes.slotsFootprint(1 << 16) >> 16;
        int bySize = Segments.expectedRecords(config.journal());
        int byBudget = (int) Math.max(16, Math.min(Integer.MAX_VALUE / 4, budget / 2 / Math.max(1, slotBytes)));
        return new ReplayBudget(config, maxHeap, budget, journal, Math.min(bySize, byBudget));
    }

    /** The replay's table, sized for the journal within the budget, refusing to grow past it. */
    ReplayedScopes table() {
        return new ReplayedScopes(expectedScopes, this::growing);
    }

    /** Before the table allocates: refused when what it would take is over the budget. */
    private void growing(long footprint) {
        if (footprint > Math.max(budget, ALLOWANCE)) {
            double read = Math.min(1.0, Math.max(0.01, (double) bytesRead / Math.max(1, journalBytes)));
            throw new Exceeded(tooLarge(config, maxHeap, budget, journalBytes, "would take " + footprint
                    + " bytes of heap for its scopes after " + records + " records (about " + Math.round(read * 100)
                    + " % of it)", (long) (footprint / read)));
        }
    }

    /**
     * After each replayed record: every {@value #EVERY} records, the table's footprint against the budget.
     *
     * @throws Exceeded naming the heap the whole journal needs, extrapolated from what was read so far
     */
    void afterRecord(ReplayedScopes replayed, int scopeBytes) {
        bytesRead += scopeBytes + RecordCodec.HEADER_BYTES + RecordCodec.MIN_PAYLOAD;
        if (++records % EVERY != 0 && bytesRead - bytesAtLastCheck < EVERY_BYTES) {
            return;
        }
        bytesAtLastCheck = bytesRead;
        check(replayed);
    }

    /** After the replay: what it took, against the budget. */
    void check(ReplayedScopes replayed) {
        long used = replayed.footprint();
        if (used > Math.max(budget, ALLOWANCE)) {
            double read = Math.min(1.0, Math.max(0.01, (double) bytesRead / Math.max(1, journalBytes)));
            long needed = (long) (used / read);
            throw new Exceeded(tooLarge(config, maxHeap, budget, journalBytes, "took " + used + " bytes of heap for"
                    + " its scopes after " + records + " records (about " + Math.round(read * 100) + " % of it)",
                    needed));
        }
    }

    private static String tooLarge(StoreConfig.Memory config, long maxHeap, long budget, long journal, String what,
                                   long needed) {
        long heap = config.maxScopeMemory().heapFor(needed);
        return "the journal " + config.journal() + " (" + journal + " bytes) " + what + ", more than this JVM lets"
                + " the store's scopes take (max-scope-memory " + config.maxScopeMemory() + " of a " + mib(maxHeap)
                + " MiB heap = " + mib(budget) + " MiB); nothing was replayed and the proxy does not start. Start it"
                + " with a heap of at least " + (mib(heap) + 1) + " MiB (STOCKADE_JAVA_OPTS=-Xmx" + (mib(heap) * 5 / 4
                + 64) + "m leaves room for requests), or a larger max-scope-memory";
    }

    private static long mib(long bytes) {
        return bytes >> 20;
    }

    private static long journalBytes(Path dir) throws IOException {
        long bytes = 0;
        if (Files.isDirectory(dir)) {
            for (Segments.Segment s : Segments.list(dir)) {
                bytes += Files.size(s.path());
            }
        }
        return bytes;
    }
}
