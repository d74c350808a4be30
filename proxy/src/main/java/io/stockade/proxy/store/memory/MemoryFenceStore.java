package io.stockade.proxy.store.memory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeLimitException;
import io.stockade.proxy.fence.StoreUnavailableException;

import org.jspecify.annotations.Nullable;

/**
 * Fence state in a {@link ConcurrentHashMap}, made durable by a group-committed, fsync'd {@link Journal}.
 * <p>
 * Every answer ({@link #advance}, {@link #recordVersion}, {@link #get}) is given only once the journal record that
 * produced the state it was computed from is fsync'd, also when that record was written by another thread that
 * has not returned yet: an equal-token accept or a stale answer never leans on a raise a crash could undo.
 * <p>
 * Per scope the map holds the scope string and one small immutable {@link Entry}; there are no per-scope locks.
 * <p>
 * Prefix floors ({@link FenceAdmin}) live in a second, small map, journaled as their own record type; with no floor
 * the request path pays one volatile read for them. "Recent activity" is the journal LSN of a scope's last change
 * since this process opened the store (replayed scopes rank last, as 0).
 */
public final class MemoryFenceStore implements FenceStore, FenceAdmin {

    private static final FenceState NEVER_SEEN = new FenceState(-1, null);

    /**
     * What the store holds.
     *
     * @param scopes       scopes tracked
     * @param segments     journal segment files on disk
     * @param journalBytes bytes in those segments
     * @param records      state-change records journaled since open (snapshot records not counted)
     * @param fsyncs       segment fsyncs since open (compaction snapshots included)
     * @param compactions  compactions since open
     */
    public record Stats(long scopes, int segments, long journalBytes, long records, long fsyncs, long compactions) {
    }

    /**
     * The state of one scope.
     *
     * @param lsn the journal LSN of the record that established this state (0 when replayed: already durable)
     */
    private record Entry(long token, @Nullable String version, long lsn) {
        FenceState state() {
            return new FenceState(token, version);
        }
    }

    /** The result of a compute, carried out of the lambda: {@link #lsn} is what the caller waits to be durable. */
    private static final class Outcome {
        /** The scope's state the change saw; null: none. */
        @Nullable Entry before;
        boolean ok;
        /** What {@link #retire} answers; not found unless the change saw a state. */
        Retired retired = Retired.NOT_FOUND;
        long lsn;
    }

    /** In {@link #states}: a replayed scope retired since open. */
    private static final Entry RETIRED = new Entry(-1, null, 0);

    /** A prefix floor and the LSN of the record that established it. */
    private record FloorEntry(long token, long lsn) {
    }

    /** The scopes as the journal replay left them: a compact read-only table behind {@link #states}. */
    private final ReplayedScopes replayed;
    /**
     * Every scope changed since open (a raise, a recorded version, a retire): in front of {@link #replayed}, and
     * the only place a change is made. {@link #RETIRED} hides a replayed scope that was retired since.
     */
    private final ConcurrentHashMap<String, Entry> states;
    /** Scopes added minus scopes retired since open: the count is {@code replayed.size()} plus this. */
    private final LongAdder addedSinceOpen = new LongAdder();
    /** The heap the scopes added since open take, estimated ({@link #SCOPE_OVERHEAD} plus two bytes a character). */
    private final LongAdder memoryAddedSinceOpen =
            new LongAdder();
    /** The most scopes the store may hold ({@code max-scopes}). */
    private final long maxScopes;
    /** Each policy's share of the bound ({@link #shareScopes}); none until the server sets them. */
    private volatile ScopeShares shares = ScopeShares.NONE;
    /** How long a failed journal may keep retrying before {@link #unhealed} reports it ({@code heal-within}). */
    private final long healWithinNanos;
    /** The most heap its scopes may take ({@code max-scope-memory}, resolved against {@code -Xmx}). */
    private final long maxMemory;
    /** What {@code max-scope-memory} said, for messages. */
    private final String maxMemorySetting;
    /** Whether the journal had no segment when the store opened: no run before this one wrote to it. */
    private boolean fresh;
    private final ConcurrentHashMap<String, FloorEntry> floors;
    /** A copy of {@link #floors} for the request path; replaced (under the floors' lock) on every change. */
    private volatile Map<String, FloorEntry> floorView;
    private final Journal journal;
    private volatile boolean closed;
    /** Test seam: runs inside the per-scope critical section, right after a raise queued its record. */
    @Nullable Consumer<String> afterQueueingRaise;

    /**
     * What a scope in the concurrent map costs beyond its characters (the String, its byte array's header, the map
     * node, the entry): measured ~140 bytes on a 64-bit JVM with compressed references (docs/benchmarks.md).
     */
    static final int SCOPE_OVERHEAD = 140;

    private MemoryFenceStore(ReplayedScopes replayed, ConcurrentHashMap<String, FloorEntry> floors, Journal journal,
                             StoreConfig.Memory config, long maxMemory) {
        this.maxScopes = config.maxScopes();
        this.healWithinNanos = config.healWithin().toNanos();
        this.maxMemory = maxMemory;
        this.maxMemorySetting = config.maxScopeMemory().toString();
        this.replayed = replayed;
        this.states = new ConcurrentHashMap<>();
        this.floors = floors;
        this.floorView = Map.copyOf(floors);
        this.journal = journal;
    }

    /**
     * Opens the store: creates the journal directory if missing, replays its segments (truncating a torn tail
     * left by a crash) and starts the journal writer.
     *
     * @throws IOException when the journal cannot be read, is corrupt other than at its tail, or is in use
     */
    public static MemoryFenceStore open(StoreConfig.Memory config) throws IOException {
        return open(config, Journal.ChannelOpener.DEFAULT);
    }

    static MemoryFenceStore open(StoreConfig.Memory config, Journal.ChannelOpener opener) throws IOException {
        boolean fresh = !Files.isDirectory(config.journal())
                || Segments.list(config.journal()).isEmpty();
        long maxHeap = Runtime.getRuntime().maxMemory();
        long budget = Math.max(ReplayBudget.ALLOWANCE, config.maxScopeMemory().resolve(maxHeap));
        ReplayBudget replayBudget = ReplayBudget.check(config, maxHeap, budget);
        // Sized for the journal's records up front (it still grows if they are more scopes than that), never past
        // what the budget allows for slots.
        ReplayedScopes replayed = replayBudget.table();
        ConcurrentHashMap<String, FloorEntry> floors = new ConcurrentHashMap<>();
        Journal journal;
        try {
            journal = Journal.open(config.journal(), config.compactAfterBytes(), opener,
                    (type, a, off, len, token, version) -> {
                        replayBudget.afterRecord(replayed, len);
                        switch (type) {
                            // Per prefix the highest floor wins.
                            case RecordCodec.TYPE_FLOOR -> floors.merge(new String(a, off, len,
                                            StandardCharsets.UTF_8), new FloorEntry(token, 0),
                                    (old, now) -> now.token() >= old.token() ? now : old);
                            // Retired only when covered by a floor, journaled earlier; a later state record brings it
                            // back.
                            case RecordCodec.TYPE_RETIRE -> replayed.retire(a, off, len);
                            // An operator's reset: this token, whatever was higher before it.
                            case RecordCodec.TYPE_RESET -> {
                                replayed.retire(a, off, len);
                                replayed.put(a, off, len, token, null);
                            }
                            // Per scope the highest token wins; for equal tokens the later record (a recorded version).
                            default -> replayed.put(a, off, len, token, version);
                        }
                    });
        } catch (ReplayBudget.Exceeded e) {
            throw new IOException(e.getMessage());
        }
        try {
            replayBudget.check(replayed);
        } catch (ReplayBudget.Exceeded e) {
            journal.close();
            throw new IOException(e.getMessage());
        }
        replayed.freeze();
        MemoryFenceStore store = new MemoryFenceStore(replayed, floors, journal, config, budget);
        store.fresh = fresh;
        journal.start(store::snapshot, store::covers);
        return store;
    }

    @Override
    public Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        ensureOpen();
        Map<String, FloorEntry> fl = floorView;
        if (!fl.isEmpty()) {
            FloorEntry floor = floorOf(fl, scope);
            if (floor != null && FenceRule.stale(token, floor.token(), acceptEqual)) {
                Entry current = current(scope);
                journal.awaitDurable(Math.max(floor.lsn(), current == null ? 0 : current.lsn()));
                long own = current == null ? -1 : current.token();
                return new Advance.Stale(Math.max(floor.token(), own), floor.token() > own);
            }
        }
        Entry current = current(scope);
        if (current == null) {
            checkRoomFor(scope);
        }
        if (current != null && token <= current.token()) {
            // Nothing to change. Tokens never go down, so this read is a linearizable answer.
            Advance answer = FenceRule.admits(token, current.token(), acceptEqual)
                    ? new Advance.Accepted(current.state())
                    : new Advance.Stale(current.token());
            journal.awaitDurable(current.lsn());
            return answer;
        }
        byte[] record = RecordCodec.encode(scope, token, null);  // outside the critical section
        Outcome o = new Outcome();
        updateDurably(scope, false, o, (k, e) -> {
            o.before = e;
            if (e == null || token > e.token()) {
                o.ok = true;
                o.lsn = journal.append(record);
                if (afterQueueingRaise != null) {
                    afterQueueingRaise.accept(k);
                }
                return new Entry(token, null, o.lsn);
            }
            o.ok = token == e.token() && acceptEqual;
            o.lsn = e.lsn();
            return e;
        });
        if (o.ok) {
            return new Advance.Accepted(o.before == null ? NEVER_SEEN : o.before.state());
        }
        // Not ok: the change saw a state (it accepts a scope without one), at least as high as token.
        return new Advance.Stale(Objects.requireNonNull(o.before, "a stale token met a state").token());
    }

    @Override
    public Optional<FenceState> get(String scope) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        ensureOpen();
        Entry e = current(scope);
        if (e == null) {
            return Optional.empty();
        }
        journal.awaitDurable(e.lsn());
        return Optional.of(e.state());
    }

    @Override
    public boolean recordVersion(String scope, long token, @Nullable String version) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        ensureOpen();
        Entry current = current(scope);
        if (current == null) {
            return false;  // no token was ever accepted, so token is not the highest (and entries never vanish)
        }
        if (current.token() != token || Objects.equals(version, current.version())) {
            // Another token is current (tokens never go down: it stays so), or the version is already recorded.
            boolean recorded = current.token() == token;
            journal.awaitDurable(current.lsn());
            return recorded;
        }
        byte[] record = RecordCodec.encode(scope, token, version);
        Outcome o = new Outcome();
        updateDurably(scope, true, o, (k, e) -> {
            Objects.requireNonNull(e, "with ifPresent, update() applies a change only to a state");
            o.before = e;
            if (e.token() != token) {
                o.lsn = e.lsn();
                return e;
            }
            o.ok = true;
            if (Objects.equals(version, e.version())) {
                o.lsn = e.lsn();
                return e;
            }
            o.lsn = journal.append(record);
            return new Entry(token, version, o.lsn);
        });
        return o.ok;
    }

    private static @Nullable FloorEntry floorOf(Map<String, FloorEntry> floors, String scope) {
        FloorEntry best = null;
        for (Map.Entry<String, FloorEntry> f : floors.entrySet()) {
            if (scope.startsWith(f.getKey()) && (best == null || f.getValue().token() > best.token())) {
                best = f.getValue();
            }
        }
        return best;
    }

    // ---- FenceAdmin ----

    @Override
    public Optional<ScopeEntry> scope(String scope) throws StoreUnavailableException {
        ensureOpen();
        Entry e = current(scope);
        if (e == null) {
            return Optional.empty();
        }
        journal.awaitDurable(e.lsn());
        return Optional.of(new ScopeEntry(scope, e.token(), e.version(), e.lsn()));
    }

    @Override
    public List<ScopeEntry> scopes(String prefix, int limit) throws StoreUnavailableException {
        ensureOpen();
        List<ScopeEntry> all = new ArrayList<>();
        long[] maxLsn = {0};
        eachScope((scope, e) -> {
            if (scope.startsWith(prefix)) {
                all.add(new ScopeEntry(scope, e.token(), e.version(), e.lsn()));
                maxLsn[0] = Math.max(maxLsn[0], e.lsn());
            }
        });
        journal.awaitDurable(maxLsn[0]);
        all.sort(Comparator.comparingLong(ScopeEntry::activity).reversed().thenComparing(ScopeEntry::scope));
        return List.copyOf(all.subList(0, Math.min(limit, all.size())));
    }

    @Override
    public boolean listsByActivity() {
        return true;
    }

    @Override
    public void forEachScope(Consumer<ScopeEntry> sink) throws StoreUnavailableException {
        ensureOpen();
        long maxLsn = 0;
        for (Entry e : states.values()) {
            maxLsn = Math.max(maxLsn, e.lsn());
        }
        journal.awaitDurable(maxLsn);
        eachScope((scope, e) -> sink.accept(new ScopeEntry(scope, e.token(), e.version(), e.lsn())));
    }

    @Override
    public List<Floor> floors() throws StoreUnavailableException {
        ensureOpen();
        List<Floor> out = new ArrayList<>();
        long maxLsn = 0;
        for (Map.Entry<String, FloorEntry> f : floorView.entrySet()) {
            out.add(new Floor(f.getKey(), f.getValue().token()));
            maxLsn = Math.max(maxLsn, f.getValue().lsn());
        }
        journal.awaitDurable(maxLsn);
        out.sort(Comparator.comparing(Floor::prefix));
        return out;
    }

    @Override
    public long raise(String scope, long token) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        ensureOpen();
        byte[] record = RecordCodec.encode(scope, token, null);
        Outcome o = new Outcome();
        updateDurably(scope, false, o, (k, e) -> {
            o.before = e;
            if (e == null || token > e.token()) {
                o.lsn = journal.append(record);
                return new Entry(token, null, o.lsn);
            }
            o.lsn = e.lsn();
            return e;
        });
        return o.before == null ? token : Math.max(token, o.before.token());
    }

    @Override
    public long raiseFloor(String prefix, long token) throws StoreUnavailableException {
        Objects.requireNonNull(prefix, "prefix");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        ensureOpen();
        byte[] record = RecordCodec.encodeFloor(prefix, token);
        FloorEntry after;
        synchronized (floors) {
            long stamp = journal.beginUpdate();
            try {
                after = floors.compute(prefix, (k, f) -> f == null || token > f.token()
                        ? new FloorEntry(token, journal.append(record)) : f);
            } catch (Journal.Unavailable u) {
                throw u.toChecked();
            } finally {
                journal.endUpdate(stamp);
            }
            floorView = Map.copyOf(floors);
        }
        journal.awaitDurable(after.lsn());
        return after.token();
    }

    @Override
    public Retired retire(String scope) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        ensureOpen();
        byte[] record = RecordCodec.encodeRetire(scope);
        Outcome o = new Outcome();
        updateDurably(scope, true, o, (k, e) -> {
            Objects.requireNonNull(e, "with ifPresent, update() applies a change only to a state");
            FloorEntry floor = floorOf(floorView, scope);
            if (floor == null || floor.token() < e.token()) {
                o.retired = Retired.NOT_COVERED;
                o.lsn = e.lsn();
                return e;
            }
            o.retired = Retired.RETIRED;
            // The floor's record precedes this one in the journal: replay never sees the scope gone uncovered.
            o.lsn = journal.append(record);
            return null;
        });
        return o.retired;
    }

    @Override
    public long reset(String scope, long expected, long token) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        ensureOpen();
        byte[] record = RecordCodec.encodeReset(scope, token);
        Outcome o = new Outcome();
        updateDurably(scope, true, o, (k, e) -> {
            Objects.requireNonNull(e, "with ifPresent, update() applies a change only to a state");
            o.before = e;
            if (e.token() != expected) {
                o.lsn = e.lsn();
                return e;
            }
            o.lsn = journal.append(record);
            return new Entry(token, null, o.lsn);
        });
        return o.before == null ? -1 : o.before.token();
    }

    /**
     * Refuses a new scope when the store holds as many as it may: never an eviction, which would forget a fence
     * and let a zombie write. Concurrent writes of new scopes may each pass this check together and go over the
     * bound by as many as there are of them; the bound is on memory, not a fence, so that is safe.
     */
    private void checkRoomFor(String scope) throws ScopeLimitException {
        long scopes = replayed.size() + addedSinceOpen.sum();
        if (scopes >= maxScopes) {
            throw new ScopeLimitException("the memory store holds " + scopes + " scopes, its max-scopes (" + maxScopes
                    + "); a write of a new scope is refused rather than forget a fence");
        }
        long memory = memoryUsed() + cost(scope);
        if (memory > maxMemory) {
            throw new ScopeLimitException("the memory store's scopes would take " + memory + " bytes of heap, more than"
                    + " its max-scope-memory (" + maxMemorySetting + ": " + maxMemory + " bytes); a write of a new"
                    + " scope is refused rather than forget a fence");
        }
        String share = shares.refusal(scope, cost(scope));
        if (share != null) {
            throw new ScopeLimitException(share);
        }
    }

    /**
     * Sets each policy's share of the store's bound ({@link ScopeShares}: a prefix, its policies, their
     * {@code limits.max-scopes}), counting the scopes the store holds now into them: at start and at each reload.
     *
     * @param claims each literal scope prefix of the policies whose fence the store keeps, with those policies and
     *               the least {@code limits.max-scopes} among them ({@link Long#MAX_VALUE}: none)
     */
    public void shareScopes(List<ShareClaim> claims) {
        ScopeShares next = new ScopeShares(claims.stream().map(c -> new ScopeShares.Claim(c.prefix(), c.policies(),
                c.maxScopes())).toList(), maxScopes, maxMemory);
        if (next.unbounded()) {
            shares = ScopeShares.NONE; // one policy, no max-scopes: no pass over the scopes, nothing to check
            return;
        }
        eachScope((scope, e) -> next.counted(scope, cost(scope), 1));
        shares = next;
    }

    /**
     * A literal scope prefix of the policies whose fence the store keeps ({@link #shareScopes}).
     *
     * @param maxScopes the least {@code limits.max-scopes} of those policies, or {@link Long#MAX_VALUE}
     */
    public record ShareClaim(String prefix, List<String> policies, long maxScopes) {
    }

    /** How many scopes the share of {@code prefix} holds now; -1 when there is no such share (tests). */
    long sharedScopes(String prefix) {
        return shares.held(prefix);
    }

    /** The heap a scope added to the concurrent map takes, estimated. */
    private static long cost(String scope) {
        return SCOPE_OVERHEAD + 2L * scope.length();
    }

    /** The heap the scopes take now, estimated: the replayed table and the scopes added since. */
    public long memoryUsed() {
        return replayed.footprint() + memoryAddedSinceOpen.sum();
    }

    /** The most heap the scopes may take ({@code max-scope-memory} resolved against this JVM's maximum heap). */
    public long memoryLimit() {
        return maxMemory;
    }

    /**
     * Whether this store's journal was new when it opened (no segment): there was no run before this one on it, so
     * none of its writes can still be in flight.
     */
    public boolean freshAtOpen() {
        return fresh;
    }

    /** The scopes the store holds now. */
    public long scopeCount() {
        return replayed.size() + addedSinceOpen.sum();
    }

    /**
     * While the journal is failed and has not healed within {@code heal-within}: why, for {@code /health/live}
     * (DOWN, so that the platform restarts the replica; the journal keeps retrying meanwhile).
     */
    @Override
    public Optional<String> unhealed() {
        Journal.Failed failed = journal.failed();
        if (failed == null || closed) {
            return Optional.empty();
        }
        long forNanos = System.nanoTime() - failed.sinceNanos();
        if (forNanos < healWithinNanos) {
            return Optional.empty();
        }
        return Optional.of("the fence journal failed " + TimeUnit.NANOSECONDS.toSeconds(forNanos) + " s ago and has"
                + " not healed within heal-within (" + TimeUnit.NANOSECONDS.toSeconds(healWithinNanos) + " s): "
                + failed.reason());
    }

    /** Seconds since the journal failed, 0 while it works (a gauge: {@code stockade_store_journal_failed_seconds}). */
    public double journalFailedSeconds() {
        Journal.Failed failed = journal.failed();
        return failed == null ? 0 : Math.max(1e-9, (System.nanoTime() - failed.sinceNanos()) / 1e9);
    }

    /** How many times the journal healed since open (a gauge: {@code stockade_store_journal_heals}). */
    public long journalHeals() {
        return journal.heals();
    }

    /**
     * Whether the state in memory covers a record on disk (checked before the journal heals): a floor at least the
     * record's; a scope's token at least the record's, or, for a scope no longer held (retired), a floor over it at
     * least the record's token. A retire record is covered by construction (it needed such a floor).
     */
    private boolean covers(byte type, byte[] a, int off, int len, long token) {
        String name = new String(a, off, len, StandardCharsets.UTF_8);
        return switch (type) {
            case RecordCodec.TYPE_FLOOR -> {
                FloorEntry floor = floors.get(name);
                yield floor != null && floor.token() >= token;
            }
            case RecordCodec.TYPE_RETIRE, RecordCodec.TYPE_RESET -> true; // a reset's own token: the map's or above
            default -> {
                Entry e = current(name);
                FloorEntry floor = floorOf(floorView, name);
                yield e != null ? e.token() >= token : floor != null && floor.token() >= token;
            }
        };
    }

    /** Counters for tests and metrics; cheap, and not a consistent cut across fields. */
    public Stats stats() {
        return new Stats(replayed.size() + addedSinceOpen.sum(), journal.segmentCount(), journal.journalBytes(),
                journal.recordsWritten(), journal.fsyncs(), journal.compactions());
    }

    /**
     * The scope's state as the map holds it now, durable or not, without waiting: for tests that must know a change
     * is in the map (a change's record can reach fsync before {@code ConcurrentHashMap.compute} has published it).
     */
    Optional<FenceState> peek(String scope) {
        Entry e = current(scope);
        return e == null ? Optional.empty() : Optional.of(e.state());
    }

    /** The visible state of a scope: what was changed since open, else what the replay left; null: none. */
    @SuppressWarnings("ReferenceEquality") // RETIRED is a sentinel: identity, an equal Entry is not it
    private @Nullable Entry current(String scope) {
        Entry e = states.get(scope);
        if (e != null) {
            return e == RETIRED ? null : e;
        }
        return replayedEntry(scope);
    }

    private @Nullable Entry replayedEntry(String scope) {
        if (replayed.size() == 0) {
            return null;
        }
        byte[] key;
        try {
            key = RecordCodec.utf8(scope, "scope");
        } catch (IllegalArgumentException e) {
            return null; // a scope that cannot be journaled was never replayed
        }
        int slot = replayed.slotOf(key);
        return slot < 0 ? null : new Entry(replayed.tokenAt(slot), replayed.versionAt(slot), 0);
    }

    /**
     * {@link #update} inside the journal's update section (so that a compaction sees the change or its record),
     * then waits until the outcome's LSN is durable: the record the change appended, or the one behind the state
     * it saw (a caller never answers from a state that a crash could still take back).
     */
    private void updateDurably(String scope, boolean ifPresent, Outcome o, Change change)
            throws StoreUnavailableException {
        long stamp = journal.beginUpdate();
        try {
            update(scope, ifPresent, change);
        } catch (Journal.Unavailable u) {
            throw u.toChecked();
        } finally {
            journal.endUpdate(stamp);
        }
        journal.awaitDurable(o.lsn);
    }

    /** A change of one scope: gets its visible state (null: none), returns the new one (null: removed). */
    private interface Change {
        @Nullable Entry apply(String scope, @Nullable Entry current);
    }

    /**
     * Changes one scope atomically ({@code ConcurrentHashMap.compute} on {@link #states}, with the replayed state
     * as the starting point when the scope was not changed since open). Returning the state it was given changes
     * nothing. With {@code ifPresent}, a scope without state is left alone (as {@code computeIfPresent}).
     */
    @SuppressWarnings("ReferenceEquality") // identity meant: the RETIRED sentinel; the very state given back
    private void update(String scope, boolean ifPresent, Change change) {
        states.compute(scope, (k, front) -> {
            Entry current = front == null ? replayedEntry(k) : front == RETIRED ? null : front;
            if (ifPresent && current == null) {
                return front;
            }
            Entry next = change.apply(k, current);
            if (next == current) {
                return front;
            }
            int added = (next != null ? 1 : 0) - (current != null ? 1 : 0);
            if (added != 0) {
                addedSinceOpen.add(added);
                memoryAddedSinceOpen.add(added * cost(k));
                shares.counted(k, cost(k), added);
            }
            if (next != null) {
                return next;
            }
            boolean replayedHasIt = front == null ? current != null : replayedEntry(k) != null;
            return replayedHasIt ? RETIRED : null;
        });
    }

    /** Every visible scope: the replayed ones not changed since open, then those changed since (weakly consistent). */
    @SuppressWarnings("ReferenceEquality") // RETIRED is a sentinel: identity, an equal Entry is not it
    private void eachScope(BiConsumer<String, Entry> sink) {
        replayed.forEach((scope, token, version) -> {
            if (!states.containsKey(scope)) {
                sink.accept(scope, new Entry(token, version, 0));
            }
        });
        states.forEach((scope, e) -> {
            if (e != RETIRED) {
                sink.accept(scope, e);
            }
        });
    }

    /**
     * The compaction snapshot: every floor, then every scope. Why no concurrent update is lost is argued at
     * {@code Journal#compact}; a replayed scope is skipped when a change since open is in front of it, and a change
     * made after it was written has its record after the snapshot.
     */
    private void snapshot(Consumer<byte[]> sink) {
        floors.forEach((prefix, f) -> sink.accept(RecordCodec.encodeFloor(prefix, f.token())));
        eachScope((scope, e) -> sink.accept(RecordCodec.encode(scope, e.token(), e.version())));
    }

    /** Flushes and fsyncs what is queued, stops the journal writer and releases the journal directory. */
    @Override
    public void close() {
        closed = true;
        journal.close();
    }

    private void ensureOpen() throws StoreUnavailableException {
        if (closed) {
            throw new StoreUnavailableException("fence store closed");
        }
        journal.checkUsable();
    }
}
