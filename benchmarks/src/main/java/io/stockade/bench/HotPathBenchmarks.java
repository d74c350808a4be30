package io.stockade.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.stockade.policy.PolicyException;
import io.stockade.policy.Route;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.store.cache.CachingFenceStore;
import io.stockade.proxy.store.memory.MemoryFenceStore;
import io.stockade.proxy.token.FencingToken;

import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;

/**
 * The proxy's hot path, piece by piece: the fence decision in memory, a stale token refused by the token cache,
 * token parsing and route matching. DESIGN.md's target: a fence decision well under a microsecond, and a cached
 * stale rejection under a microsecond. Run with {@code bench/jmh.sh}.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(1)
@State(Scope.Benchmark)
public class HotPathBenchmarks {
    private static final int SCOPES = 10_000;

    // JMH calls setUp (@Setup) before any benchmark method: it sets each of these
    @SuppressWarnings("NullAway.Init") private Path dir;
    @SuppressWarnings("NullAway.Init") private MemoryFenceStore memory;
    /** The same scopes, reopened: they come from the journal replay (ReplayedScopes), unchanged since open. */
    @SuppressWarnings("NullAway.Init") private MemoryFenceStore replayed;
    @SuppressWarnings("NullAway.Init") private CachingFenceStore cached;
    @SuppressWarnings("NullAway.Init") private String[] scopes;
    @SuppressWarnings("NullAway.Init") private StockadeConfig routes;
    private int i;

    @Setup(Level.Trial)
    public void setUp() throws IOException, StoreUnavailableException, PolicyException {
        dir = Files.createTempDirectory("stockade-jmh");
        memory = MemoryFenceStore.open(new StoreConfig.Memory(dir.resolve("journal"),
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES));
        scopes = new String[SCOPES];
        for (int s = 0; s < SCOPES; s++) {
            scopes[s] = "files/tenant-" + (s % 97) + "/report-" + s + ".txt";
            memory.advance(scopes[s], 1000, true); // durable before the measurement starts
        }
        try (MemoryFenceStore first = MemoryFenceStore.open(new StoreConfig.Memory(dir.resolve("replayed"),
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES))) {
            for (String scope : scopes) {
                first.advance(scope, 1000, true);
            }
        }
        replayed = MemoryFenceStore.open(new StoreConfig.Memory(dir.resolve("replayed"),
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES));
        cached = new CachingFenceStore(memory, SCOPES * 2);
        for (String scope : scopes) {
            cached.advance(scope, 1000, true);
        }
        StringBuilder yaml = new StringBuilder("store: {type: memory, journal: " + dir.resolve("j2")
                + "}\npolicies:\n");
        for (int p = 0; p < 20; p++) {
            yaml.append("  - name: p").append(p).append("\n    match: {path: \"/api").append(p)
                    .append("/{tenant}/items/{id}\"}\n    scope: p").append(p).append("/{tenant}/{id}\n")
                    .append("    backend: {type: http, url: \"http://127.0.0.1:9\"}\n");
        }
        routes = PolicyLoader.parse(yaml.toString(), Path.of("bench.yaml"), Map.of());
    }

    @TearDown(Level.Trial)
    public void tearDown() throws IOException {
        memory.close();
        replayed.close();
        try (Stream<Path> walk = Files.walk(dir)) {
            walk.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        }
    }

    private String nextScope() {
        i = (i + 1) % SCOPES;
        return scopes[i];
    }

    /** The fence decision in memory for the current holder (equal token, state already durable). */
    @Benchmark
    public Advance fenceDecisionInMemory() throws StoreUnavailableException {
        return memory.advance(nextScope(), 1000, true);
    }

    /** The same decision for a scope the journal replay left and nothing changed since open (the compact table). */
    @Benchmark
    public Advance fenceDecisionOnAReplayedScope() throws StoreUnavailableException {
        return replayed.advance(nextScope(), 1000, true);
    }

    /** A stale token refused by the memory store (state already durable). */
    @Benchmark
    public Advance staleRejectionInMemory() throws StoreUnavailableException {
        return memory.advance(nextScope(), 999, true);
    }

    /** A stale token refused by the token cache, without asking the store. */
    @Benchmark
    public Advance staleRejectionFromCache() throws StoreUnavailableException {
        return cached.advance(nextScope(), 999, true);
    }

    @Benchmark
    public FencingToken.Parsed parseToken() {
        return FencingToken.parse("Fencing-Token", "9223372036854775");
    }

    /** Route matching against 20 policies; the request matches the last one. */
    @Benchmark
    public Optional<Route> matchRoute() {
        return routes.route("PUT", "/api19/acme/items/42");
    }
}
