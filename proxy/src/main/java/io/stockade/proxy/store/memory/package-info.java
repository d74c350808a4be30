/**
 * The {@code memory} fence store: fence state in a {@code ConcurrentHashMap}, made durable by an fsync'd journal.
 *
 * <h2>Design</h2>
 * <ul>
 *   <li><b>State.</b> What the replay found sits in {@code ReplayedScopes}, a compact read-only table (the scope's
 *   bytes in an arena, token and version in primitive slots: ~63 bytes a scope, nothing for the collector to trace);
 *   every scope changed since open has one small immutable entry in a {@code ConcurrentHashMap} in front of it:
 *   highest token, recorded version, and the LSN (log sequence number) of the journal record that produced it. No
 *   per-scope locks: a change and the queueing of its record happen in one {@code ConcurrentHashMap.compute} (which
 *   starts from the replayed state when the scope has no entry yet), so per scope the journal order is the state
 *   order. Answers that change nothing (equal token, stale token) are read without locking.</li>
 *   <li><b>Durable before answering.</b> Every answer waits until the LSN of the entry it was computed from is
 *   fsync'd, including an equal-token accept or a stale answer that leans on another thread's raise that is still
 *   in flight. A crash can therefore never undo a state that some caller has seen.</li>
 *   <li><b>Group commit.</b> One platform daemon thread, {@code stockade-journal}, takes every queued record, writes
 *   them with one write, forces the file once and wakes the waiters. Callers (virtual threads welcome) block on a
 *   {@code Condition}; nobody spins.</li>
 *   <li><b>Fail closed, then heal.</b> After an I/O error the journal is failed: pending and later calls throw
 *   {@code StoreUnavailableException}. The writer retries {@code Journal#heal} (every 2 s at most): it checks that
 *   the state in memory covers every record on disk, cuts the segment back to its last acknowledged byte and writes
 *   the whole state into a new segment, then takes writes again. A failed fsync is never retried on the same file.
 *   Past {@code heal-within}, {@code unhealed()} says why, and {@code /health/live} is DOWN.</li>
 *   <li><b>Format.</b> Segments {@code journal-<seq>.log} of records {@code [len][crc32c][type scope token version]}
 *   (see {@code RecordCodec}). Replay reads every segment in order; per scope the highest token wins and, for equal
 *   tokens, the later record. A torn tail of the last segment is truncated (and logged); any other damage,
 *   including a bad record followed by a valid one, fails {@code open} with the file and offset.</li>
 *   <li><b>Compaction.</b> When the active segment has grown by more than {@code compactAfterBytes} since its
 *   snapshot, the writer starts a new segment with a snapshot of the map, fsyncs it and the directory, then deletes
 *   the older segments. Why no concurrent update is lost is argued at {@code Journal#compact}.</li>
 *   <li><b>One owner.</b> A {@code journal.lock} file lock keeps a second process (or a second store in this
 *   process) from opening the same directory.</li>
 * </ul>
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.store.memory;

import org.jspecify.annotations.NullMarked;
