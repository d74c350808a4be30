package io.stockade.client;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;

import org.jspecify.annotations.Nullable;

/** The one {@link Lease} implementation: local validity on the ticker, a watchdog step, listeners. */
final class WatchedLease implements Lease {

    private static final System.Logger LOG = System.getLogger(WatchedLease.class.getName());

    private final String name;
    private final String holder;
    private final LeaseService service;
    private final LeaseService.Grant grant;
    private final Ticker ticker;
    private final long ttlNanos;
    private final long renewDeadlineNanos;
    private final @Nullable IntConsumer onLossExit;   // null: do not stop the process
    private final int exitStatus;

    private volatile long validUntil;
    private volatile long lastRenewalSent;

    private final Object lock = new Object();
    /**
     * Held around each call to the lock service (a watchdog step, the release): a release sent while a renewal is
     * on its way carried the fencing value the renewal was replacing (DynamoDB's rvn), failed its condition and left
     * the lease held until it expired (seen in CI: a lease run's command exited, its item not released). The release
     * now waits for the renewal in flight, which is bounded by the renew deadline; no step starts after a close.
     */
    private final Object serviceCalls = new Object();
    private @Nullable LossReason lost;                      // guarded by lock
    private final List<LeaseListener> listeners = new ArrayList<>(); // guarded by lock
    private final AtomicBoolean released = new AtomicBoolean();
    private volatile @Nullable ScheduledFuture<?> watchdog;

    WatchedLease(String name, String holder, LeaseService service, LeaseService.Grant grant, Ticker ticker,
                 Duration ttl, Duration renewDeadline, @Nullable IntConsumer onLossExit, int exitStatus) {
        this.name = name;
        this.holder = holder;
        this.service = service;
        this.grant = grant;
        this.ticker = ticker;
        this.ttlNanos = ttl.toNanos();
        this.renewDeadlineNanos = renewDeadline.toNanos();
        this.onLossExit = onLossExit;
        this.exitStatus = exitStatus;
        this.validUntil = grant.sentAt() + ttlNanos;
        this.lastRenewalSent = grant.sentAt();
    }

    LeaseService.Grant grant() {
        return grant;
    }

    void watchdog(ScheduledFuture<?> task) {
        this.watchdog = task;
    }

    long lastRenewalSent() {
        return lastRenewalSent;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public long token() {
        return grant.token();
    }

    @Override
    public Duration remaining() {
        if (!isValid()) {
            return Duration.ZERO;
        }
        return Duration.ofNanos(Math.max(0, validUntil - ticker.read()));
    }

    @Override
    public boolean isValid() {
        return currentLoss() == null;
    }

    @Override
    public void checkpoint(Duration budget) {
        if (budget.isNegative()) {
            throw new IllegalArgumentException("budget must not be negative: " + budget);
        }
        LossReason reason = currentLoss();
        if (reason != null) {
            throw new LeaseLostException("lease '" + name + "' (token " + token() + ") is lost: " + reason,
                    reason, Duration.ZERO);
        }
        long left = validUntil - ticker.read();
        if (left < budget.toNanos()) {
            throw new LeaseLostException("lease '" + name + "' (token " + token() + ") has " + Duration.ofNanos(left)
                    + " of validity left, less than the budget " + budget + ": past the point of no return",
                    LossReason.EXPIRED, Duration.ofNanos(Math.max(0, left)));
        }
    }

    @Override
    public Optional<LossReason> lossReason() {
        return Optional.ofNullable(currentLoss());
    }

    @Override
    public void addListener(LeaseListener listener) {
        Objects.requireNonNull(listener, "listener");
        currentLoss(); // an expiry noticed now is reported to the listeners already registered first
        LossReason reason;
        synchronized (lock) {
            reason = lost;
            if (reason == null) {
                listeners.add(listener);
                return;
            }
        }
        notify(listener, reason);
    }

    @Override
    public void close() {
        markLost(LossReason.RELEASED);
        ScheduledFuture<?> task = watchdog;
        if (task != null) {
            task.cancel(false);
        }
        releaseQuietly();
    }

    /**
     * One watchdog step: give up if late, otherwise renew by compare-and-set on the token. Package-private so tests
     * run it by hand with an injected ticker. Never throws: an exception would silently end a scheduled task, and
     * with it the only thread that would have noticed the loss.
     */
    void tick() {
        try {
            synchronized (serviceCalls) {
                step();
            }
        } catch (RuntimeException | Error e) {
            lose(LossReason.CONNECTION_LOST, "the watchdog failed: " + e);
        }
    }

    private void step() {
        if (currentLoss() != null) {
            return;
        }
        long now = ticker.read();
        long sinceRenewal = now - lastRenewalSent;
        if (sinceRenewal > renewDeadlineNanos) {
            lose(LossReason.EXPIRED, "watchdog ran " + Duration.ofNanos(sinceRenewal)
                    + " after the last renewal was sent, later than the renew deadline "
                    + Duration.ofNanos(renewDeadlineNanos));
            return;
        }
        long sent = ticker.read();
        // the renewal must answer before the lease could have expired (and within the renew deadline)
        long budget = Math.min(validUntil, lastRenewalSent + renewDeadlineNanos) - sent;
        LeaseService.Renewal answer;
        try {
            answer = service.renew(name, holder, grant, Duration.ofNanos(ttlNanos), Duration.ofNanos(budget));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            lose(LossReason.CONNECTION_LOST, "renewal interrupted");
            return;
        } catch (Exception e) {
            lose(LossReason.CONNECTION_LOST, "renewal failed: " + e);
            return;
        }
        long answered = ticker.read();
        switch (answer) {
            case RENEWED -> {
                if (answered >= validUntil) {
                    lose(LossReason.EXPIRED, "renewal answered " + Duration.ofNanos(answered - validUntil)
                            + " after the lease had expired locally");
                } else {
                    validUntil = sent + ttlNanos;
                    lastRenewalSent = sent;
                }
            }
            case REFUSED -> lose(LossReason.RENEWAL_REFUSED, "the lock service refused the renewal: token "
                    + token() + " is no longer the holder's");
            case REVOKED -> lose(LossReason.REVOKED, "the lock service no longer has the lease");
        }
    }

    /** A loss the lock service reported between renewals ({@link LeaseService#watch}). */
    void lost(LossReason reason, String detail) {
        lose(reason, detail);
    }

    /** The loss, noticing an expiry on the way. */
    private @Nullable LossReason currentLoss() {
        LossReason reason;
        synchronized (lock) {
            reason = lost;
        }
        if (reason == null && ticker.read() - validUntil >= 0) {
            lose(LossReason.EXPIRED, "validity ran out on the monotonic clock before a renewal succeeded");
            synchronized (lock) {
                reason = lost;
            }
        }
        return reason;
    }

    private void lose(LossReason reason, String detail) {
        if (markLost(reason)) {
            // the token as digits (a number argument would be formatted with grouping commas)
            LOG.log(System.Logger.Level.WARNING, "lease ''{0}'' (token {1}) lost: {2}: {3}",
                    name, Long.toString(token()), reason, detail);
            ScheduledFuture<?> task = watchdog;
            if (task != null) {
                task.cancel(false);
            }
            if (onLossExit != null) {
                LOG.log(System.Logger.Level.ERROR, "stopping the process with status {0}: the lease is lost",
                        exitStatus);
                onLossExit.accept(exitStatus);
            }
            if (reason != LossReason.REVOKED) {
                releaseQuietly(); // let the next holder in sooner; guarded by the token, so never someone else's
            }
        }
    }

    /** Records the loss and calls the listeners; false if the lease had already ended. */
    private boolean markLost(LossReason reason) {
        List<LeaseListener> toCall;
        synchronized (lock) {
            if (lost != null) {
                return false;
            }
            lost = reason;
            toCall = List.copyOf(listeners);
            listeners.clear();
        }
        for (LeaseListener l : toCall) {
            notify(l, reason);
        }
        return true;
    }

    private void notify(LeaseListener listener, LossReason reason) {
        try {
            listener.leaseLost(this, reason);
        } catch (RuntimeException | Error e) {
            LOG.log(System.Logger.Level.WARNING, "a listener of lease '" + name + "' failed", e);
        }
    }

    private void releaseQuietly() {
        if (released.compareAndSet(false, true)) {
            try {
                synchronized (serviceCalls) {
                    service.release(name, holder, grant);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                LOG.log(System.Logger.Level.INFO, "release of lease ''{0}'' failed (it expires on its own): {1}",
                        name, e.toString());
            }
        }
    }

    long renewIntervalNanos(double fraction) {
        return Math.max(TimeUnit.MILLISECONDS.toNanos(1), (long) (ttlNanos * fraction));
    }

    @Override
    public String toString() {
        return "Lease[" + name + ", token " + token() + ", " + lossReason().map(Enum::name).orElse("held") + "]";
    }
}
