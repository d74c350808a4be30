package io.stockade.conformance.lease;

import java.io.IOException;
import java.net.URI;
import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;

import io.stockade.conformance.writer.RawHttp;

/** Leases from a {@link CounterLeaseServer}. */
public final class CounterLeaseProvider implements LeaseProvider {

    private static final Duration TIMEOUT = Duration.ofSeconds(2);
    private final URI base;

    public CounterLeaseProvider(URI base) {
        this.base = base;
    }

    @Override
    public Optional<Lease> tryAcquire(String holder) throws IOException {
        long before = System.nanoTime();
        RawHttp.Response r = RawHttp.send(base.resolve("/acquire?holder=" + enc(holder)), "POST", null, null, TIMEOUT);
        if (r.status() != 200) {
            return Optional.empty();
        }
        String[] parts = r.body().trim().split(" ", -1);
        long token = Long.parseLong(parts[0]);
        long ttl = Long.parseLong(parts[1]) * 1_000_000L;
        return Optional.of(new CounterLease(holder, token, ttl, before + ttl));
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8);
    }

    private final class CounterLease implements Lease {
        private final String holder;
        private final long token;
        private final long ttl;
        private volatile long deadline;
        private volatile boolean closed;

        CounterLease(String holder, long token, long ttl, long deadline) {
            this.holder = holder;
            this.token = token;
            this.ttl = ttl;
            this.deadline = deadline;
        }

        @Override
        public long token() {
            return token;
        }

        @Override
        public long deadlineNanos() {
            return deadline;
        }

        @Override
        public boolean renew() throws IOException {
            long before = System.nanoTime();
            RawHttp.Response r = RawHttp.send(base.resolve("/renew?holder=" + enc(holder) + "&token=" + token),
                    "POST", null, null, TIMEOUT);
            if (r.status() != 200) {
                return false;
            }
            deadline = before + ttl;
            return true;
        }

        @Override
        public void close() {
            if (closed) {
                return;
            }
            closed = true;
            try {
                RawHttp.send(base.resolve("/release?holder=" + enc(holder) + "&token=" + token), "POST", null, null,
                        TIMEOUT);
            } catch (IOException ignored) {
                // the lease expires by itself
            }
        }
    }
}
