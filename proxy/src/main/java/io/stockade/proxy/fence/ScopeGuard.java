package io.stockade.proxy.fence;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

import org.jspecify.annotations.Nullable;

/**
 * Serializes writes per scope and remembers quarantined scopes. This is the engine's half of the
 * <em>serialized</em> class: a scope is held from the fence check until the upstream has answered, so two
 * admitted writes of one scope never travel to the storage at the same time.
 * <p>
 * A write whose outcome is unknown (the upstream timed out after the request left) may still land later. Its
 * scope is quarantined until a settle time has passed; until then every write to it is refused (503), so a
 * newer write cannot be overtaken by the late one.
 * <p>
 * Lock entries exist only while some request holds or waits for the scope; memory does not grow with the
 * number of scopes ever seen. Time comes from an injected nanosecond clock so tests need not sleep.
 */
public final class ScopeGuard {
    private final ConcurrentHashMap<String, Entry> locks = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Long> quarantinedUntil = new ConcurrentHashMap<>();
    private final LongSupplier nanoTime;

    public ScopeGuard(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    public ScopeGuard() {
        this(System::nanoTime);
    }

    /**
     * Waits for the scope, at most {@code timeoutNanos}.
     *
     * @return the held scope (close it to release), or {@code null} if the wait timed out
     * @throws InterruptedException if interrupted while waiting
     */
    public @Nullable Held acquire(String scope, long timeoutNanos) throws InterruptedException {
        Entry entry = locks.compute(scope, (k, e) -> {
            Entry result = e == null ? new Entry() : e;
            result.users++;
            return result;
        });
        boolean locked = false;
        try {
            locked = entry.lock.tryLock(timeoutNanos, TimeUnit.NANOSECONDS);
        } finally {
            if (!locked) {
                release(scope, entry);
            }
        }
        return locked ? new Held(scope, entry) : null;
    }

    /** Number of scopes currently held or waited for. */
    public int activeScopes() {
        return locks.size();
    }

    /**
     * Quarantines a scope until {@code settleNanos} from now (or longer, if already quarantined for longer).
     */
    public void quarantine(String scope, long settleNanos) {
        long until = nanoTime.getAsLong() + settleNanos;
        quarantinedUntil.merge(scope, until, (a, b) -> a - b >= 0 ? a : b);
    }

    /**
     * Nanoseconds left in the scope's quarantine, or 0 if it is not quarantined. An expired quarantine is
     * forgotten here.
     */
    public long quarantineRemaining(String scope) {
        Long until = quarantinedUntil.get(scope);
        if (until == null) {
            return 0;
        }
        long left = until - nanoTime.getAsLong();
        if (left > 0) {
            return left;
        }
        quarantinedUntil.remove(scope, until);
        return 0;
    }

    /** Number of scopes in quarantine now (expired entries are dropped while counting). */
    public int quarantinedScopes() {
        long now = nanoTime.getAsLong();
        quarantinedUntil.entrySet().removeIf(e -> e.getValue() - now <= 0);
        return quarantinedUntil.size();
    }

    private void release(String scope, Entry entry) {
        locks.compute(scope, (k, e) -> {
            if (e != entry) {
                throw new IllegalStateException("scope lock entry replaced while in use: " + scope);
            }
            return --e.users == 0 ? null : e;
        });
    }

    /** A held scope. Close exactly once, from the thread that acquired it. */
    public final class Held implements AutoCloseable {
        private final String scope;
        private final Entry entry;
        private boolean closed;

        private Held(String scope, Entry entry) {
            this.scope = scope;
            this.entry = entry;
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            entry.lock.unlock();
            release(scope, entry);
        }
    }

    private static final class Entry {
        // Fair: writers of one scope are served in arrival order, so a convoy is visible as waiting time
        // rather than as starvation of an unlucky writer.
        final ReentrantLock lock = new ReentrantLock(true);
        int users; // guarded by the map's compute
    }
}
