package io.stockade.proxy.pipeline;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Function;

import io.stockade.policy.Policy;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.store.memory.MemoryFenceStore;
import io.stockade.proxy.token.FencingToken;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.helidon.http.Status;
import io.helidon.webclient.http1.Http1ClientResponse;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.testing.junit5.DirectClient;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The pipeline on its own, with a fake backend whose plan each test sets and no socket (Helidon's
 * {@link DirectClient} drives the routing): the pipeline carries the plan out and decides nothing of its own. A
 * refusal reaches no action; a write reaches its keeper only once the store admitted its token on every scope, by the
 * plan's rule (not the policy's); an observed write is forwarded whatever the verdict and raises nothing enforce
 * would refuse; an unknown outcome quarantines only what may still land. The real memory fence store keeps the
 * fences.
 */
class FencePipelineTest {
    private static final AtomicReference<Function<Exchange, Plan>> PLANS = new AtomicReference<>();
    private static Path dir;
    private static MemoryFenceStore store;
    private static ProxyMetrics metrics;
    private static Policy policy;
    private static DirectClient client;
    private static int next;
    /** What the fake backend's actions were called with, in order. */
    private final List<String> called = new ArrayList<>();
    private String scope;

    /** A backend that plans what the test says and writes nothing itself. */
    private static final class FakeBackend implements Backend {
        @Override
        public Plan plan(Exchange exchange) {
            return PLANS.get().apply(exchange);
        }

        @Override
        public Duration settle() {
            return Duration.ofSeconds(30);
        }

        @Override
        public void close() {
        }
    }

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-pipeline");
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: %s}
                policies:
                  - name: docs
                    match: {path: "/docs/{id}"}
                    scope: "docs/{id}"
                    fence: {max-advance: 10}
                    backend: {type: file, root: %s}
                """.formatted(dir.resolve("journal"), dir.resolve("root")), Path.of("pipeline.yaml"), Map.of());
        policy = config.policies().getFirst();
        store = MemoryFenceStore.open(new StoreConfig.Memory(dir.resolve("journal"),
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES));
        metrics = new ProxyMetrics();
        FencePipeline pipeline = new FencePipeline(config, Map.of("docs", new FakeBackend()), store,
                new ScopeGuard(), metrics, System::nanoTime, new TokenVerifiers(Clock.systemUTC()));
        pipeline.previousRunStoppedCleanly(); // no settle after start: the tests start clean
        client = new DirectClient(HttpRouting.builder().any(pipeline));
    }

    @AfterAll
    static void stop() {
        if (client != null) {
            client.close();
        }
        if (store != null) {
            store.close();
        }
    }

    @BeforeEach
    void newScope() {
        scope = "docs/s" + (++next);
    }

    private Http1ClientResponse put() {
        return client.put("/" + scope).submit("body");
    }

    /** The count of {@code outcome} once it reached {@code expected} (the count follows the answer), or after 2 s. */
    private static double counted(Outcome outcome, double expected) throws InterruptedException {
        long deadline = System.nanoTime() + 2_000_000_000L;
        while (metrics.count("docs", outcome) < expected && System.nanoTime() < deadline) {
            Thread.sleep(5);
        }
        return metrics.count("docs", outcome);
    }

    private OptionalLong fence(String s) throws Exception {
        return store.get(s).map(f -> OptionalLong.of(f.token())).orElse(OptionalLong.empty());
    }

    /** An action that records its call and answers 204, as a backend that wrote would. */
    private Plan.Action answering(String name) {
        return ex -> {
            called.add(name);
            ex.response().status(Status.NO_CONTENT_204).send();
            return new WriteResult.Answered(204);
        };
    }

    /** A serialized keeper that records its call and the fence the store held when it was called. */
    private Keeper serialized(List<Admission> admissions) {
        return new Keeper.Serialized((ex, admission) -> {
            admissions.add(admission);
            return answering("write").run(ex);
        });
    }

    @Test
    void aRefusalReachesNoActionAndMovesNoFence() throws Exception {
        PLANS.set(ex -> new Plan.Refuse(ex.scope(), Problem.of(ProblemType.NOT_SUPPORTED, "not in the table")));
        try (Http1ClientResponse r = put()) {
            assertEquals(501, r.status().code());
            assertTrue(r.as(String.class).contains("not in the table"));
        }
        assertEquals(List.of(), called);
        assertEquals(OptionalLong.empty(), fence(scope));
    }

    @Test
    void aForwardIsSentOnceWithoutAToken() throws Exception {
        double before = metrics.count("docs", Outcome.UNFENCED);
        PLANS.set(ex -> new Plan.Forward(ex.scope(), Plan.Unfenced.READ, answering("forward")));
        try (Http1ClientResponse r = put()) {
            assertEquals(204, r.status().code());
        }
        assertEquals(List.of("forward"), called);
        assertEquals(OptionalLong.empty(), fence(scope));
        assertEquals(before + 1, counted(Outcome.UNFENCED, before + 1));
    }

    @Test
    void aWriteReachesItsKeeperOnlyOnceItsTokenIsAdmittedDurably() throws Exception {
        List<Admission> admissions = new ArrayList<>();
        AtomicReference<OptionalLong> atWrite = new AtomicReference<>();
        PLANS.set(ex -> ex.fencing().plan("PUT", List.of(ex.scope()), new FencingToken.Present(5),
                new Keeper.Serialized((e, admission) -> {
                    try {
                        atWrite.set(fence(scope));
                    } catch (Exception x) {
                        throw new IllegalStateException(x);
                    }
                    admissions.add(admission);
                    return answering("write").run(e);
                }), answering("unfenced")));
        try (Http1ClientResponse r = put()) {
            assertEquals(204, r.status().code());
        }
        assertEquals(List.of("write"), called);
        assertEquals(OptionalLong.of(5), atWrite.get(), "admitted before the keeper wrote");
        assertEquals(5, admissions.getFirst().token());
        assertEquals(10, admissions.getFirst().rule().maxAdvance(), "the plan's rule reaches the keeper");
    }

    @Test
    void aStaleWriteNeverReachesItsKeeper() throws Exception {
        store.advance(scope, 7, true);
        List<Admission> admissions = new ArrayList<>();
        PLANS.set(ex -> ex.fencing().plan("PUT", List.of(ex.scope()), new FencingToken.Present(5),
                serialized(admissions), answering("unfenced")));
        try (Http1ClientResponse r = put()) {
            assertEquals(409, r.status().code());
        }
        assertEquals(List.of(), called);
        assertEquals(OptionalLong.of(7), fence(scope));
    }

    /** A write of two scopes stale on the second raises neither: every scope is judged before any fence moves. */
    @Test
    void aWriteOfTwoScopesStaleOnOneRaisesNeither() throws Exception {
        String other = scope + "-other";
        store.advance(other, 9, true);
        List<Admission> admissions = new ArrayList<>();
        PLANS.set(ex -> ex.fencing().plan("MOVE", List.of(ex.scope(), other), new FencingToken.Present(6),
                serialized(admissions), answering("unfenced")));
        try (Http1ClientResponse r = put()) {
            assertEquals(409, r.status().code());
            assertTrue(r.as(String.class).contains(other), "names the scope it is stale on");
        }
        assertEquals(List.of(), called);
        assertEquals(OptionalLong.empty(), fence(scope));
        assertEquals(OptionalLong.of(9), fence(other));
    }

    /**
     * The one decider: the pipeline judges by the rule the plan carries, not by the policy's. This policy admits an
     * equal token; a plan that says each token counts once (as an S3 plan may for a step of its own) is obeyed.
     */
    @Test
    void theRuleOfThePlanJudgesNotThePolicy() throws Exception {
        store.advance(scope, 5, true);
        Fencing.Rule strict = new Fencing.Rule(policy.fence(), false);
        PLANS.set(ex -> new Plan.Write(List.of(ex.scope()), 5, strict, serialized(new ArrayList<>())));
        try (Http1ClientResponse r = put()) {
            assertEquals(409, r.status().code());
        }
        assertEquals(List.of(), called);
        // and the same token under the policy's own rule passes
        PLANS.set(ex -> new Plan.Write(List.of(ex.scope()), 5, ex.fencing().rule(), serialized(new ArrayList<>())));
        try (Http1ClientResponse r = put()) {
            assertEquals(204, r.status().code());
        }
        assertEquals(List.of("write"), called);
    }

    @Test
    void aTooFarTokenIsRefusedAndRaisesNothing() throws Exception {
        store.advance(scope, 5, true);
        PLANS.set(ex -> ex.fencing().plan("PUT", List.of(ex.scope()), new FencingToken.Present(100),
                serialized(new ArrayList<>()), answering("unfenced")));
        try (Http1ClientResponse r = put()) {
            assertEquals(422, r.status().code());
        }
        assertEquals(List.of(), called);
        assertEquals(OptionalLong.of(5), fence(scope));
    }

    /** Observe mode: a too-far token is forwarded (enforce would refuse it) and raises nothing. */
    @Test
    void anObservedTooFarTokenIsForwardedAndRaisesNothing() throws Exception {
        store.advance(scope, 5, true);
        double before = metrics.count("docs", Outcome.WOULD_REJECT);
        PLANS.set(ex -> new Plan.Observe(List.of(ex.scope()), new FencingToken.Present(100), ex.fencing().rule(),
                serialized(new ArrayList<>()), answering("forward")));
        try (Http1ClientResponse r = put()) {
            assertEquals(204, r.status().code());
        }
        assertEquals(List.of("forward"), called);
        assertEquals(OptionalLong.of(5), fence(scope));
        assertEquals(before + 1, counted(Outcome.WOULD_REJECT, before + 1));
    }

    /** An unknown outcome quarantines a serialized scope only while the write may still land. */
    @Test
    void anUnknownOutcomeQuarantinesOnlyWhatMayStillLand() throws Exception {
        AtomicInteger writes = new AtomicInteger();
        for (boolean mayLandLater : new boolean[] {false, true}) {
            String s = scope + "-" + mayLandLater;
            PLANS.set(ex -> new Plan.Write(List.of(s), 5, ex.fencing().rule(), new Keeper.Serialized((e, a) -> {
                writes.incrementAndGet();
                return new WriteResult.Unknown("the storage said nothing", mayLandLater);
            })));
            try (Http1ClientResponse r = put()) {
                assertEquals(504, r.status().code());
            }
            try (Http1ClientResponse r = put()) {
                assertEquals(mayLandLater ? 503 : 504, r.status().code(), "quarantined: " + mayLandLater);
            }
        }
        assertEquals(3, writes.get(), "the second write of the scope that may still be written to never ran");
    }
}
