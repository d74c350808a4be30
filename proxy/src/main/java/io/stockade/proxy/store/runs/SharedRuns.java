package io.stockade.proxy.store.runs;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.fence.RunRecords;
import io.stockade.proxy.fence.StoreUnavailableException;

import org.jspecify.annotations.Nullable;

/**
 * Whether a start on a shared fence store (etcd, PostgreSQL) must settle: the memory store's record of a clean stop
 * ({@code CleanShutdown}), for stores that many replicas share. A serialized policy stays closed for its
 * {@code settle} after start because a write a crashed run sent may still land; on a shared store the run that
 * crashed may be any replica's, so one record of "the last stop was clean" would lie (replica A stops cleanly and
 * writes it while replica B, crashed a moment before, still has a write in flight). Instead each run keeps a record
 * of its own ({@link RunRecords}):
 * <ol>
 * <li>before it may admit a token (the store refuses, {@link RegisteredStore}, until then) it reads the records and
 * registers its own, rewritten every {@link #BEAT} from then on;</li>
 * <li>a clean stop — every write drained, nothing quarantined or of unknown outcome, not settling — removes its record
 * ({@link #stopCleanly}); any other end (a crash, {@code kill -9}, a stop with writes in flight, a store that cannot
 * be reached at the stop) leaves it;</li>
 * <li>a start that finds no other record opens its serialized policies at once. One that finds some watches them for
 * {@link #WATCHED_BEATS} beats: a record that was removed meanwhile stopped cleanly, one whose version rose is a run
 * still serving (its writes are its own, as any replica's beside this one are: the shared-store row of the guarantee
 * matrix), and one that did neither is taken for dead — its run crashed, or stalls — and the start settles as after a
 * crash. After its settle (and the dead run's own, recorded with it) it removes that record, unless it has beaten
 * since;</li>
 * <li>a store whose registry was never started (an earlier version's replicas, which record nothing) settles once.</li>
 * </ol>
 * Every doubt settles: a store that cannot be read, a run that beats too late, a record that cannot be removed.
 */
public final class SharedRuns implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(SharedRuns.class.getName());
    /** How often a run rewrites its record. */
    static final Duration BEAT = Duration.ofSeconds(1);
    /** How many beats a start waits for each other record to move before it takes its run for dead. */
    static final int WATCHED_BEATS = 3;

    private final RunRecords records;
    private final String run = UUID.randomUUID().toString();
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor(r -> {
        Thread t = new Thread(r, "stockade-runs");
        t.setDaemon(true);
        return t;
    });
    private volatile Duration settle = Duration.ZERO;
    private volatile Runnable open = () -> { };
    private volatile boolean registered;
    /** Why the last attempt to register failed (the store's own words), or null. */
    private volatile @Nullable String notRegisteredBecause;
    /** Whether the failure to register was logged (once, not every beat). */
    private boolean toldUnregistered;

    public SharedRuns(RunRecords records) {
        this.records = records;
    }

    /** This run's id in the registry. */
    public String id() {
        return run;
    }

    /** Whether this run's record is in the store: until then no token may be admitted. */
    public boolean registered() {
        return registered;
    }

    /** Why this run is not recorded yet: the store's answer to the last attempt, or that none ended yet. */
    public String notRegisteredBecause() {
        String why = notRegisteredBecause;
        return why == null ? "the first attempt has not ended" : why;
    }

    /**
     * Registers this run (one attempt now, then every {@link #BEAT} until the store answers) and decides whether
     * the earlier runs left writes in flight; calls {@code open} if none can have.
     *
     * @param longestSettle the longest settle of this run's serialized backends, recorded for later runs
     * @param open          opens the serialized policies at once (the pipeline's "previous run stopped cleanly")
     */
    public void start(Duration longestSettle, Runnable open) {
        this.settle = longestSettle;
        this.open = open;
        register();
    }

    private void register() {
        Map<String, RunRecords.Run> before;
        boolean started;
        try {
            started = records.exists();
            before = new LinkedHashMap<>(records.list());
            records.beat(run, settle);
        } catch (StoreUnavailableException e) {
            notRegisteredBecause = e.getMessage();
            if (!toldUnregistered) {
                toldUnregistered = true;
                LOG.warning("could not record this run in the fence store (" + e.getMessage() + "); retrying every "
                        + BEAT.toSeconds() + " s, store-fenced writes refused until then");
            }
            schedule(this::register, BEAT);
            return;
        }
        registered = true;
        // beat() catches everything: a failure must not end the schedule (the store may answer again)
        Future<?> unused = timer.scheduleWithFixedDelay(this::beat, BEAT.toMillis(), BEAT.toMillis(),
                TimeUnit.MILLISECONDS);
        before.remove(run);
        if (!started) {
            LOG.info("run " + run + " recorded; the store kept no record of runs before (a first start, or"
                    + " replicas of an earlier version): serialized policies settle after start, once");
        } else if (before.isEmpty()) {
            LOG.info("run " + run + " recorded; every earlier run stopped cleanly: serialized policies open at once");
            open.run();
        } else {
            schedule(() -> decide(before), BEAT.multipliedBy(WATCHED_BEATS).plus(BEAT.dividedBy(2)));
        }
    }

    /** The earlier runs still recorded at registration: alive if they beat since, cleanly gone if removed. */
    private void decide(Map<String, RunRecords.Run> before) {
        Map<String, RunRecords.Run> now;
        try {
            now = records.list();
        } catch (StoreUnavailableException e) {
            LOG.info("could not read the runs again (" + e.getMessage() + "): serialized policies settle after start");
            return;
        }
        Map<String, RunRecords.Run> dead = new LinkedHashMap<>();
        int alive = 0;
        for (Map.Entry<String, RunRecords.Run> e : before.entrySet()) {
            RunRecords.Run later = now.get(e.getKey());
            if (later != null && later.version() == e.getValue().version()) {
                dead.put(e.getKey(), e.getValue());
            } else if (later != null) {
                alive++;
            }
        }
        if (dead.isEmpty()) {
            LOG.info("every earlier run stopped cleanly or still serves (" + alive + " beating): serialized policies"
                    + " open");
            open.run();
            return;
        }
        Duration longest = settle;
        for (RunRecords.Run r : dead.values()) {
            longest = r.settle().compareTo(longest) > 0 ? r.settle() : longest;
        }
        LOG.info("runs " + dead.keySet() + " did not stop cleanly and no longer beat (crashed, or stalled): serialized"
                + " policies settle after start; their records go in " + longest.toSeconds() + " s");
        schedule(() -> forget(dead), longest);
    }

    /** Removes the records of dead runs whose writes can no longer land, unless they have beaten since. */
    private void forget(Map<String, RunRecords.Run> dead) {
        for (Map.Entry<String, RunRecords.Run> e : dead.entrySet()) {
            try {
                records.removeIf(e.getKey(), e.getValue().version());
            } catch (StoreUnavailableException ex) {
                LOG.log(Level.FINE, "could not remove the record of run " + e.getKey() + "; a later start will", ex);
            }
        }
    }

    private void beat() {
        try {
            records.beat(run, settle);
        } catch (StoreUnavailableException | RuntimeException e) {
            LOG.log(Level.FINE, "could not rewrite this run's record", e);
        }
    }

    /** Runs a task later on the timer; what it throws is logged (nobody reads the future). */
    private void schedule(Runnable task, Duration delay) {
        if (timer.isShutdown()) {
            return;
        }
        try {
            Future<?> unused = timer.schedule(() -> {
                try {
                    task.run();
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, "the registry of runs failed: serialized policies settle after start", e);
                }
            }, delay.toMillis(), TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            LOG.log(Level.FINE, "stopping: not scheduled", e);
        }
    }

    /**
     * A clean stop (every write drained, nothing left of unknown outcome): stops beating and removes this run's
     * record, so that the next start need not settle.
     *
     * @return whether the record is gone
     */
    public boolean stopCleanly() {
        stopBeating();
        if (!registered) {
            return false;
        }
        try {
            records.remove(run);
            LOG.info("run " + run + " stopped cleanly: its record is removed from the fence store");
            return true;
        } catch (StoreUnavailableException e) {
            LOG.warning("could not remove this run's record from the fence store (" + e.getMessage()
                    + "): the next start settles as after a crash");
            return false;
        }
    }

    /** Any other stop: the record stays, and the next start settles. */
    @Override
    public void close() {
        stopBeating();
    }

    private void stopBeating() {
        timer.shutdownNow();
        try {
            // a beat under way must not write the record again after it is removed
            timer.awaitTermination(5, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
