package io.stockade.proxy.bench;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Random;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.LongAdder;

import io.stockade.proxy.S3Fixture;

import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;

/**
 * PutObject and GetObject of 4 KiB and 4 MiB objects through the proxy (S3 backend, fence-scope object: the atomic
 * class, HEAD + conditional PUT per fenced write) against the same in-process s3proxy 3.0.0 (transient blob store)
 * directly, in one run, with the same AWS SDK v2 client configuration on both paths. Not a test: run
 * {@code bench/s3.sh} (or this main with the test class path).
 * <p>
 * Both clients use {@code requestChecksumCalculation(WHEN_REQUIRED)}: with the SDK's default trailing checksums
 * s3proxy itself refuses PutObject ({@code XAmzContentSHA256Mismatch}), so the direct path could not be
 * measured with the defaults; the proxy accepts both. Each writer has its own key and keeps its token, so every
 * fenced PUT is accepted: the figure is the cost of the proxy and the fence, not of contention. PUTs are measured
 * a third time through a second proxy with {@code etag-cache: 10000} (path {@code cached}): no HEAD before a write
 * of an object that proxy wrote last.
 * Arguments: {@code [threads=4] [seconds=5] [warmupSeconds=2]}.
 */
public final class S3Bench {
    private static final String BUCKET = "bench";

    private S3Bench() {
    }

    public static void main(String[] args) throws Exception {
        int threads = args.length > 0 ? Integer.parseInt(args[0]) : 4;
        int seconds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int warmup = args.length > 2 ? Integer.parseInt(args[2]) : 2;
        Path journal = Files.createTempDirectory("stockade-s3bench-");
        try (S3Fixture fixture = S3Fixture.start(journal.resolve("j"));
             var cachedProxy = fixture.anotherProxy(journal.resolve("c"), java.util.Map.of("ETAG_CACHE", "10000"));
             S3Client direct = client(fixture.directUri(), S3Fixture.UPSTREAM_KEY, S3Fixture.UPSTREAM_SECRET);
             S3Client proxied = client(fixture.proxyUri(), S3Fixture.APP_KEY, S3Fixture.APP_SECRET);
             S3Client cached = client(cachedProxy.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            direct.createBucket(b -> b.bucket(BUCKET));
            System.out.printf(Locale.ROOT, "S3Bench: %d threads, %d s measured after %d s warm-up, s3proxy 3.0.0"
                    + " (transient) in-process, proxy in-process, fence-scope object%n", threads, seconds, warmup);
            System.out.printf(Locale.ROOT, "%-14s %-7s %12s %10s %10s%n", "object", "path", "requests/s",
                    "MiB/s", "p50 ms");
            List<String> ratios = new ArrayList<>();
            for (int size : new int[] {4 * 1024, 4 * 1024 * 1024}) {
                String label = size >= 1 << 20 ? (size >> 20) + " MiB" : (size >> 10) + " KiB";
                byte[] body = new byte[size];
                new Random(size).nextBytes(body);
                for (String op : size < 1 << 20 ? new String[] {"PUT", "GET", "HEAD"} : new String[] {"PUT", "GET"}) {
                    // Objects exist before GETs are measured (written through the proxy, so they carry a token).
                    for (int t = 0; t < threads; t++) {
                        put(proxied, key(size, t), body, true);
                    }
                    Result d = run(threads, warmup, seconds, size, t -> op(op, direct, key(size, t), body, false));
                    Result p = run(threads, warmup, seconds, size, t -> op(op, proxied, key(size, t), body, true));
                    print(label, op, "direct", d, size);
                    print(label, op, "proxy", p, size);
                    ratios.add(String.format(Locale.ROOT, "%s %s proxy/direct = %.2f", op, label,
                            p.perSecond / d.perSecond));
                    if (op.equals("PUT")) {
                        for (int t = 0; t < threads; t++) {
                            put(cached, key(size, t), body, true); // the cached proxy's own first write
                        }
                        Result c = run(threads, warmup, seconds, size, t -> op(op, cached, key(size, t), body, true));
                        print(label, op, "cached", c, size);
                        ratios.add(String.format(Locale.ROOT, "%s %s cached/direct = %.2f", op, label,
                                c.perSecond / d.perSecond));
                    }
                }
            }
            ratios.forEach(System.out::println);
        } finally {
            try (var files = Files.walk(journal)) {
                files.sorted(java.util.Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
            }
        }
    }

    private static String key(int size, int thread) {
        return "objects/" + size + "/w" + thread;
    }

    private static void op(String op, S3Client client, String key, byte[] body, boolean fenced) {
        if (op.equals("PUT")) {
            put(client, key, body, fenced);
        } else if (op.equals("HEAD")) {
            client.headObject(b -> b.bucket(BUCKET).key(key)); // what a fenced write asks the store before it
        } else {
            int n = client.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray().length;
            if (n != body.length) {
                throw new IllegalStateException("got " + n + " bytes, expected " + body.length);
            }
        }
    }

    private static void put(S3Client client, String key, byte[] body, boolean fenced) {
        client.putObject(b -> {
            b.bucket(BUCKET).key(key);
            if (fenced) {
                b.overrideConfiguration(o -> o.putHeader("Fencing-Token", "7"));
            }
        }, RequestBody.fromBytes(body));
    }

    private static void print(String label, String op, String path, Result r, int size) {
        System.out.printf(Locale.ROOT, "%-14s %-7s %12.0f %10.1f %10.2f%n", op + " " + label, path, r.perSecond,
                r.perSecond * size / (1024.0 * 1024.0), r.p50Millis);
    }

    interface Op {
        void run(int thread) throws Exception;
    }

    record Result(double perSecond, double p50Millis) {
    }

    /** Runs {@code threads} loops of {@code op}: warm-up, then {@code seconds} measured. */
    private static Result run(int threads, int warmup, int seconds, int size, Op op) throws Exception {
        AtomicBoolean measuring = new AtomicBoolean();
        AtomicBoolean stop = new AtomicBoolean();
        LongAdder done = new LongAdder();
        List<long[]> latencies = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        Throwable[] failure = new Throwable[1];
        for (int t = 0; t < threads; t++) {
            int thread = t;
            long[] samples = new long[1 << 16];
            latencies.add(samples);
            workers.add(Thread.ofPlatform().start(() -> {
                int n = 0;
                try {
                    while (!stop.get()) {
                        long start = System.nanoTime();
                        op.run(thread);
                        if (measuring.get()) {
                            done.increment();
                            samples[n++ & 0xffff] = System.nanoTime() - start;
                        }
                    }
                } catch (Throwable e) {
                    failure[0] = e;
                    stop.set(true);
                }
                samples[samples.length - 1] = n; // count, read below
            }));
        }
        Thread.sleep(warmup * 1000L);
        long from = System.nanoTime();
        measuring.set(true);
        Thread.sleep(seconds * 1000L);
        measuring.set(false);
        long elapsed = System.nanoTime() - from;
        stop.set(true);
        for (Thread w : workers) {
            w.join();
        }
        if (failure[0] != null) {
            throw new IllegalStateException("a request failed", failure[0]);
        }
        List<Long> all = new ArrayList<>();
        for (long[] samples : latencies) {
            int n = (int) Math.min(samples[samples.length - 1], samples.length - 1);
            for (int i = 0; i < n; i++) {
                all.add(samples[i]);
            }
        }
        all.sort(null);
        double p50 = all.isEmpty() ? Double.NaN : all.get(all.size() / 2) / 1e6;
        return new Result(done.sum() / (elapsed / 1e9), p50);
    }

    private static S3Client client(URI endpoint, String key, String secret) {
        return S3Fixture.clientWithRequiredChecksumsOnly(endpoint, key, secret);
    }
}
