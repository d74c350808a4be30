package io.stockade.client;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.concurrent.atomic.AtomicInteger;

/** A scripted lock service: each renewal takes the next scripted answer (and its simulated round trip). */
final class FakeLeaseService implements LeaseService {

    /** A scripted renewal: the answer, or an exception, after a round trip on the fake ticker. */
    record Step(Renewal answer, Exception failure, Duration roundTrip) {
    }

    private final FakeTicker ticker;
    final Deque<Step> script = new ArrayDeque<>();
    final AtomicInteger renewals = new AtomicInteger();
    final AtomicInteger releases = new AtomicInteger();
    long nextToken = 7;
    Duration acquireRoundTrip = Duration.ZERO;

    FakeLeaseService(FakeTicker ticker) {
        this.ticker = ticker;
    }

    FakeLeaseService then(Renewal answer, Duration roundTrip) {
        script.add(new Step(answer, null, roundTrip));
        return this;
    }

    FakeLeaseService thenFail(Exception e) {
        script.add(new Step(null, e, Duration.ZERO));
        return this;
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) {
        long sent = ticker.read();
        ticker.advance(acquireRoundTrip);
        return new Grant(nextToken++, sent, null);
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        renewals.incrementAndGet();
        Step s = script.poll();
        if (s == null) {
            return Renewal.RENEWED;
        }
        ticker.advance(s.roundTrip());
        if (s.failure() != null) {
            throw s.failure();
        }
        return s.answer();
    }

    @Override
    public void release(String name, String holder, Grant grant) {
        releases.incrementAndGet();
    }

    @Override
    public void close() {
    }
}
