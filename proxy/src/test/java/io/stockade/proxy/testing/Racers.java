package io.stockade.proxy.testing;

import java.net.URI;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.IntFunction;

import io.stockade.conformance.check.History;
import io.stockade.testing.Http;

import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Racing writers for the history-checked tests: many threads start together, each writes through the proxy with
 * a token from a shared lease, and every write goes into a {@link History} with what the writer was told.
 */
public final class Racers {
    /** The writers of {@link #raceOnReplicas} and the writes each sends. */
    public static final int REPLICA_WRITERS = 12;
    public static final int REPLICA_OPS_PER_WRITER = 30;

    private Racers() {
    }

    /**
     * One write a racer makes.
     *
     * @param scope  the fence scope (the history's key)
     * @param target where the PUT goes
     * @param token  the token it carries
     * @param value  a value unique in the race
     */
    public record Write(String scope, URI target, long token, String value) {
    }

    /** Chooses racer {@code writer}'s {@code n}-th write. */
    @FunctionalInterface
    public interface Plan {
        Write next(int writer, int n);
    }

    /**
     * A token from a lease counter, in the mix every race uses: 25 % take the lease over (a higher token), 15 % are
     * zombies (a token below the current one), 60 % write as the current holder.
     */
    public static long token(AtomicLong lease) {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        double dice = random.nextDouble();
        return dice < 0.25 ? lease.incrementAndGet()
                : dice < 0.40 ? Math.max(0, lease.get() - 1 - random.nextInt(3))
                : lease.get();
    }

    /**
     * Runs {@code writers} threads of {@code ops} writes each from one start signal. A 2xx is recorded as ok, a 409
     * or 412 as a refusal, and so is a 503 {@code slow-down} (the upstream refused the condition under a token no
     * newer holder raised: nothing was written); anything else (or an I/O error) as an unknown outcome. Asserts that
     * the race had both accepts and refusals: a race with either missing proves nothing.
     */
    public static void race(History history, int writers, int ops, Plan plan) throws Exception {
        CountDownLatch go = new CountDownLatch(1);
        ExecutorService pool = Executors.newFixedThreadPool(writers);
        try {
            List<Future<int[]>> running = new ArrayList<>();
            for (int w = 0; w < writers; w++) {
                int writer = w;
                running.add(pool.submit(() -> {
                    int[] counts = new int[2]; // accepted, refused
                    go.await();
                    for (int n = 0; n < ops; n++) {
                        Write write = plan.next(writer, n);
                        History.Op op = history.invoke(write.scope(), write.token(), write.value());
                        try {
                            Http.Response r = Http.put(write.target(), write.value(),
                                    Map.of("Fencing-Token", Long.toString(write.token())));
                            if (r.status() / 100 == 2) {
                                op.ok(r.status());
                                counts[0]++;
                            } else if (r.status() == 409 || r.status() == 412) {
                                op.fail(r.status());
                                counts[1]++;
                            } else if (r.status() == 503 && r.body().contains("urn:stockade:problem:slow-down")) {
                                op.fail(r.status()); // a definite "not written", retryable; not a fencing refusal
                            } else {
                                op.unknown("status " + r.status() + ": " + r.body());
                            }
                        } catch (Exception e) {
                            op.unknown(e.toString());
                        }
                    }
                    return counts;
                }));
            }
            go.countDown();
            int accepted = 0;
            int refused = 0;
            for (Future<int[]> f : running) {
                int[] c = f.get();
                accepted += c[0];
                refused += c[1];
            }
            assertTrue(accepted > 0 && refused > 0, "accepted " + accepted + ", refused " + refused);
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * {@link #REPLICA_WRITERS} writers on one scope, through proxy replicas: writer {@code w} sends its n-th request
     * to {@code target(w + n)}.
     */
    public static void raceOnReplicas(History history, String scope, IntFunction<URI> target) throws Exception {
        AtomicLong lease = new AtomicLong(1 + history.ops().stream().mapToLong(History.Op::token).max().orElse(0));
        race(history, REPLICA_WRITERS, REPLICA_OPS_PER_WRITER, (writer, n) -> {
            long token = token(lease);
            return new Write(scope, target.apply(writer + n), token,
                    scope + "-w" + writer + "-n" + n + "-t" + token + "-" + UUID.randomUUID());
        });
    }
}
