package io.stockade.client;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.IntConsumer;

/** The provider behind every lock service: acquires, checks the arithmetic, schedules each lease's watchdog. */
final class WatchdogProvider implements LeaseProvider {

    private final LeaseService service;
    private final Leases.Settings settings;
    private final ScheduledExecutorService scheduler;
    private final AtomicBoolean closed = new AtomicBoolean();
    private final Set<WatchedLease> held = ConcurrentHashMap.newKeySet();

    WatchdogProvider(LeaseService service, Leases.Settings settings) {
        this.service = service;
        this.settings = settings;
        this.scheduler = Executors.newScheduledThreadPool(2, r -> {
            Thread t = new Thread(r, "stockade-lease-watchdog");
            t.setDaemon(true);
            return t;
        });
    }

    @Override
    public Lease acquire(String name, Duration ttl, Duration timeout) throws TimeoutException, InterruptedException {
        Objects.requireNonNull(name, "name");
        if (name.isEmpty()) {
            throw new IllegalArgumentException("name must not be empty");
        }
        if (ttl.isNegative() || ttl.isZero()) {
            throw new IllegalArgumentException("ttl must be positive: " + ttl);
        }
        if (timeout.isNegative()) {
            throw new IllegalArgumentException("timeout must not be negative: " + timeout);
        }
        if (closed.get()) {
            throw new IllegalStateException("the lease provider is closed");
        }
        Duration retry = Leases.Settings.scale(ttl, settings.renewFraction());
        Duration deadline = Leases.Settings.scale(ttl, settings.renewDeadlineFraction());
        Leases.checkArithmetic(ttl, deadline, retry);
        LeaseService.Grant grant;
        try {
            grant = service.acquire(name, settings.holder(), ttl, timeout);
        } catch (TimeoutException | InterruptedException | RuntimeException e) {
            throw e;
        } catch (Exception e) {
            throw new IllegalStateException("cannot acquire lease '" + name + "': " + e, e);
        }
        IntConsumer exit = settings.exitStatus() == null ? null : settings.exiter();
        WatchedLease lease = new WatchedLease(name, settings.holder(), service, grant, settings.ticker(), ttl,
                deadline, exit, settings.exitStatus() == null ? 0 : settings.exitStatus());
        if (!lease.isValid()) {
            lease.close();
            throw new TimeoutException("lease '" + name + "' was granted, but the round trip took longer than its "
                    + "ttl " + ttl + ": it had expired on arrival");
        }
        held.add(lease);
        lease.addListener((l, reason) -> held.remove(lease));
        service.watch(grant, lease::lost);
        schedule(lease, lease.renewIntervalNanos(settings.renewFraction()));
        return lease;
    }

    /**
     * Runs the lease's next watchdog step one renew interval after its last renewal was <em>sent</em> (for the
     * first step: after the acquiring request was sent, which may be long before acquire returned), so a slow
     * acquisition or renewal does not push the next renewal towards the renew deadline.
     */
    private void schedule(WatchedLease lease, long every) {
        long delay = Math.max(0, lease.lastRenewalSent() + every - settings.ticker().read());
        try {
            lease.watchdog(scheduler.schedule(() -> {
                lease.tick();
                if (lease.isValid()) {
                    schedule(lease, every);
                }
            }, delay, TimeUnit.NANOSECONDS));
        } catch (RejectedExecutionException closing) {
            lease.close();
        }
    }

    @Override
    public void close() {
        if (closed.compareAndSet(false, true)) {
            held.forEach(WatchedLease::close);
            scheduler.shutdownNow();
            service.close();
        }
    }
}
