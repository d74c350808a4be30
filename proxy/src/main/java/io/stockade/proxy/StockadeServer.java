package io.stockade.proxy;

import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.net.ssl.SSLContext;

import io.stockade.policy.Policy;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.SqlConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;
import io.stockade.proxy.admin.AdminEndpoint;
import io.stockade.proxy.admin.FenceOperations;
import io.stockade.proxy.admin.FenceRouting;
import io.stockade.proxy.admin.PolicyReload;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.registry.BackendTypes;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.health.HealthEndpoints;
import io.stockade.proxy.listener.HttpDate;
import io.stockade.proxy.listener.ListenerLimits;
import io.stockade.proxy.listener.ListenerTls;
import io.stockade.proxy.listener.PassThroughEncoding;
import io.stockade.proxy.listener.UnreadBody;
import io.stockade.proxy.metrics.MetricsEndpoint;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.pipeline.FencePipeline;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.sql.SqlListener;
import io.stockade.proxy.store.FenceStores;
import io.stockade.proxy.store.cache.CachingFenceStore;
import io.stockade.proxy.store.memory.MemoryFenceStore;
import io.stockade.proxy.store.runs.SharedRuns;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import io.helidon.common.tls.TlsClientAuth;
import io.helidon.http.encoding.ContentEncodingContext;
import io.helidon.webserver.WebServer;
import io.helidon.webserver.http.HttpRouting;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * A running proxy: the fence store, one backend per policy, the pipeline, and the HTTP listener.
 * Tests start one in-process with {@link #start(StockadeConfig)}; {@link Main} does the same for the command
 * line.
 */
public final class StockadeServer implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(StockadeServer.class.getName());
    /** Paths the proxy answers itself; no policy may take them. */
    public static final String LIVE = "/health/live";
    public static final String READY = "/health/ready";
    /** How long a stop waits for writes holding a scope before it gives up recording a clean stop. */
    static final int DRAIN_SECONDS = 10;
    public static final String METRICS = "/metrics";
    /** The name of the management listener's socket ({@code server.management}). */
    static final String MANAGEMENT = "management";
    private static final String DATA_SETTING = "server.port, or --port";
    private static final String MANAGEMENT_SETTING = "server.management.port, or --management-port";

    /** How long replaced backends stay open after a reload, for requests that started before it. */
    static final Duration DRAIN = Duration.ofSeconds(60);

    private final FenceStore store;
    private final ProxyMetrics metrics;
    private final FencePipeline pipeline;
    private final Reloader reloader;
    private final WebServer server;
    private final AutoCloseable listenerLimits;
    /** The memory store's journal directory, where a clean stop is recorded; null for the shared stores. */
    private final @Nullable Path journal;

    /** The PostgreSQL listener ({@code sql}), or {@code null}. */
    private @Nullable SqlListener sql;

    private StockadeServer(FenceStore store, ProxyMetrics metrics, FencePipeline pipeline, Reloader reloader,
                           WebServer server, AutoCloseable listenerLimits, @Nullable Path journal) {
        this.journal = journal;
        this.store = store;
        this.metrics = metrics;
        this.pipeline = pipeline;
        this.reloader = reloader;
        this.server = server;
        this.listenerLimits = listenerLimits;
    }

    /**
     * Opens the store and the backends and starts listening.
     *
     * @throws IOException if the store or a backend cannot be opened
     */
    public static StockadeServer start(StockadeConfig config) throws IOException {
        checkListenable(config.server().host(), config.server().port(), DATA_SETTING);
        ServerConfig.Management management = config.server().management();
        if (management != null) {
            checkListenable(management.host(), management.port(), MANAGEMENT_SETTING);
        }
        FenceStore store = FenceStores.open(config.store());
        Map<String, Backend> backends = new LinkedHashMap<>();
        TokenVerifiers verifiers = new TokenVerifiers(Clock.systemUTC());
        SqlListener sql = null;
        try {
            for (Policy policy : config.policies()) {
                Backend backend = openBackend(policy);
                backends.put(policy.name(), backend);
                backend.checkAtStart(policy.name());
            }
            InvalidDefinitions.check(config.policies(), backends);
            verifiers.open(config.policies());
            ProxyMetrics metrics = new ProxyMetrics();
            ScopeGuard guard = new ScopeGuard();
            gauges(metrics, guard, store);
            FencePipeline pipeline = new FencePipeline(config, backends, store, guard, metrics, System::nanoTime,
                    verifiers);
            // The store has locked the journal: this proxy alone reads and removes the record of a clean stop.
            Path journal = config.store() instanceof StoreConfig.Memory memory ? memory.journal() : null;
            if (journal != null && CleanShutdown.consume(journal)) {
                pipeline.previousRunStoppedCleanly();
                LOG.info("the previous run stopped cleanly (nothing in flight): serialized policies open at once");
            } else if (FenceStores.unwrapped(store) instanceof MemoryFenceStore memory && memory.freshAtOpen()) {
                // A new journal: no run before this one kept fences in it, so none of its writes is awaited. (A
                // run on another journal, or one whose journal was deleted, left no fence to honour either.)
                pipeline.previousRunStoppedCleanly();
                LOG.info("a new journal (no previous run on it): serialized policies open at once");
            }
            // A shared store: this run's record in it, and whether an earlier run's writes may still land
            FenceStores.runs(store).ifPresent(runs -> runs.start(backends.values().stream().map(Backend::settle)
                    .max(Duration::compareTo).orElse(Duration.ZERO), pipeline::previousRunStoppedCleanly));
            sql = SqlListener.start(config.sql(), metrics.registry(), pipeline.readiness()::include);
            shareScopes(store, config.policies());
            Reloader reloader = new Reloader(pipeline, verifiers, policies -> shareScopes(store, policies));
            reloader.started(backends);
            AdminEndpoint admin = config.admin() == null ? null
                    : AdminEndpoint.create(config.admin(), fenceRouting(config.store(), store, reloader,
                    config.sql(), sql == null ? null : sql.fence()), reloader, FenceOperations.Leases.of(verifiers));
            var builder = WebServer.builder()
                    .host(config.server().host())
                    .port(config.server().port());
            ServerConfig.Tls tls = config.server().tls();
            if (tls != null) {
                SSLContext context = ListenerTls.context(tls);
                builder.tls(t -> t.sslContext(context).clientAuth(switch (tls.clientAuth()) {
                    case NONE -> TlsClientAuth.NONE;
                    case OPTIONAL -> TlsClientAuth.OPTIONAL;
                    case REQUIRED -> TlsClientAuth.REQUIRED;
                }));
            }
            AutoCloseable listenerLimits = ListenerLimits.apply(builder, config.server().limits());
            WebServer server = builder
                    // A plaintext listener runs on Helidon's plain sockets: a relayed body is written in one system
                    // call a buffer, not NioSocket's 8 KiB pieces. A TLS one stays on NIO: on plain sockets Helidon
                    // 4.5.0 lets a client without a required certificate in (HelidonPlainSocketTlsFindingIT keeps
                    // the finding, TlsIT checks this listener; docs/benchmarks.md).
                    .useNio(tls != null)
                    .connectionOptions(options -> options.tcpNoDelay(true)
                            .readTimeout(config.server().limits().readTimeout()))
                    // A proxy passes bodies on as they came: no decoding of Content-Encoding (and no 400 for
                    // encodings Helidon does not know, such as S3's aws-chunked).
                    .contentEncoding(new PassThroughEncoding(ContentEncodingContext.create()))
                    .routing(routing -> routing(routing, pipeline, metrics, management == null ? admin : null,
                            management != null))
                    .update(b -> {
                        if (management != null) {
                            b.putSocket(MANAGEMENT, socket -> socket.host(management.host()).port(management.port())
                                    .useNio(false) // plaintext always
                                    .connectionOptions(options -> options.tcpNoDelay(true))
                                    .routing(routing -> managementRouting(routing, pipeline, metrics, admin)));
                        }
                    })
                    .build()
                    .start();
            if (server.port() < 0 || (management != null && server.port(MANAGEMENT) < 0)) {
                // Helidon logs the failure and goes on without a listener (port -1): taken between the check above
                // and its own bind.
                server.stop();
                if (server.port() < 0) {
                    throw new ListenFailure(config.server().host(), config.server().port(),
                            "the listener did not start", DATA_SETTING);
                }
                ServerConfig.Management failed = Objects.requireNonNull(management, "checked in the condition above");
                throw new ListenFailure(failed.host(), failed.port(), "the listener did not start",
                        MANAGEMENT_SETTING);
            }
            StockadeServer started = new StockadeServer(store, metrics, pipeline, reloader, server, listenerLimits,
                    journal);
            started.sql = sql;
            return started;
        } catch (RuntimeException | IOException e) {
            if (sql != null) {
                sql.close();
            }
            backends.values().forEach(Backend::close);
            verifiers.close();
            store.close();
            throw e;
        }
    }

    /**
     * Gives each policy whose fence the memory store keeps its share of the store's bound (by the literal prefix of
     * its scope template; an s3 policy's scopes are {@code <scope>/...}): policies/README.md, {@code max-scopes}.
     */
    static void shareScopes(FenceStore store, List<Policy> policies) {
        if (!(FenceStores.unwrapped(store) instanceof MemoryFenceStore memory)) {
            return;
        }
        Map<String, List<Policy>> byPrefix = new LinkedHashMap<>();
        for (Policy p : policies) {
            BackendType type = BackendTypes.of(p);
            String prefix = type.fencePlace() instanceof FencePlace.ProxyStore ? type.scopes().sharePrefix() : "";
            if (!prefix.isEmpty()) {
                byPrefix.computeIfAbsent(prefix, k -> new ArrayList<>()).add(p);
            }
        }
        memory.shareScopes(byPrefix.entrySet().stream().map(e -> new MemoryFenceStore.ShareClaim(e.getKey(),
                e.getValue().stream().map(Policy::name).toList(),
                e.getValue().stream().mapToLong(p -> p.limits().maxScopes()).min().orElse(Long.MAX_VALUE)))
                .toList());
    }

    /**
     * Where the admin endpoints find the fence of a scope, for the policies in force at each call: the store, the
     * database of a postgres backend ({@code fence: table}) through that backend's own pool (each operation's
     * connection bounded by the datasource's statement timeout plus 5 s, as the store's pool bounds its reads), or
     * the SQL listener's fence table through {@code sql.admin-datasource} (the {@code sql} section cannot change on
     * a reload: the one the proxy started with).
     */
    static Supplier<FenceRouting> fenceRouting(StoreConfig storeConfig, FenceStore store, Reloader reloader,
                                               @Nullable SqlConfig sql,
                                               FenceRouting.@Nullable SqlFence sqlFence) {
        FenceAdmin storeAdmin = FenceStores.admin(store).orElse(null);
        return () -> {
            Reloader.InForce now = reloader.inForce();
            return new FenceRouting(now.config().policies(), sql, sqlFence, storeConfig, () -> storeAdmin, policy -> {
                Backend backend = now.backends().get(policy.name());
                Optional<FenceAdmin> own = backend == null ? Optional.empty() : backend.ownFenceAdmin();
                if (own.isPresent()) {
                    return own.get();
                }
                throw new StoreUnavailableException("the backend of policy '" + policy.name()
                        + "' is not open (a reload is replacing it); try again");
            });
        };
    }

    /**
     * What the storage says is wrong with the policies' definitions at load (a postgres statement naming a column
     * its table does not have), one line a problem: {@code policies[i].backend.statements.PUT[0] ('name'): policy
     * 'p' (/route): the database's message}.
     */
    public static final class InvalidDefinitions extends IOException {
        private final List<String> problems;

        InvalidDefinitions(List<String> problems) {
            super(String.join("\n", problems));
            this.problems = List.copyOf(problems);
        }

        /** Each problem, located. */
        public List<String> problems() {
            return problems;
        }

        /** Asks each policy's backend; throws when any has a problem. */
        static void check(List<Policy> policies, Map<String, Backend> backends) throws InvalidDefinitions {
            List<String> problems = new ArrayList<>();
            for (int i = 0; i < policies.size(); i++) {
                Policy policy = policies.get(i);
                Backend backend = Objects.requireNonNull(backends.get(policy.name()), "start opens one per policy");
                for (String problem : backend.definitionErrors()) {
                    int colon = problem.indexOf(": ");
                    problems.add("policies[" + i + "].backend." + problem.substring(0, colon) + ": policy '"
                            + policy.name() + "' (" + policy.match().path() + "): " + problem.substring(colon + 2));
                }
            }
            if (!problems.isEmpty()) {
                throw new InvalidDefinitions(problems);
            }
        }
    }

    /** The listener's address cannot be bound; the message says where and what to change. */
    public static final class ListenFailure extends IOException {
        ListenFailure(String host, int port, String reason, String setting) {
            super("cannot listen on " + host + ":" + port + ": " + reason + " (" + setting + ")");
        }
    }

    /**
     * Binds the listener's address once and lets it go, so that a port in use (or a host that is not this
     * machine's) is one clear line before anything opens, instead of Helidon's stack trace and a server without a
     * listener. Port 0 (any free port) needs no check.
     */
    static void checkListenable(String host, int port, String setting) throws ListenFailure {
        if (port == 0) {
            return;
        }
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(host, port));
        } catch (BindException e) {
            String message = e.getMessage() == null ? "" : e.getMessage().toLowerCase(Locale.ROOT);
            throw new ListenFailure(host, port, message.contains("in use") ? "address already in use"
                    : message.contains("permission") ? "permission denied (ports below 1024 need privileges)"
                    : message.contains("assign") ? "the host is not an address of this machine" : message, setting);
        } catch (IOException | IllegalArgumentException e) {
            throw new ListenFailure(host, port, String.valueOf(e.getMessage()), setting);
        }
    }

    /**
     * The production routing: the proxy's own endpoints (the admin endpoints under {@value AdminEndpoint#BASE}
     * when configured), then every other request through the pipeline.
     */
    static void routing(HttpRouting.Builder routing, FencePipeline pipeline, ProxyMetrics metrics,
                        @Nullable AdminEndpoint admin, boolean managementListener) {
        health(routing, pipeline);
        if (managementListener) {
            // served on the management listener only; never a policy's either (as without one)
            routing.get(METRICS, (req, res) -> onManagementListener(res, METRICS))
                    .any((req, res) -> {
                        if (AdminEndpoint.claims(req)) {
                            onManagementListener(res, "the admin API");
                        } else {
                            res.next();
                        }
                    });
        } else {
            routing.get(METRICS, (req, res) -> MetricsEndpoint.serve(res, metrics));
            if (admin != null) {
                routing.any(admin);
            }
        }
        routing.any(pipeline)
                .error(RuntimeException.class, (req, res, e) -> internalError(res, e));
    }

    /**
     * The management listener's routing ({@code server.management}): the health endpoints, {@code /metrics} and the
     * admin API; nothing else, and never the pipeline (no write is relayed from it).
     */
    static void managementRouting(HttpRouting.Builder routing, FencePipeline pipeline, ProxyMetrics metrics,
                                  @Nullable AdminEndpoint admin) {
        health(routing, pipeline);
        routing.get(METRICS, (req, res) -> MetricsEndpoint.serve(res, metrics));
        if (admin != null) {
            routing.any(admin);
        }
        routing.any((req, res) -> Problem.of(ProblemType.NOT_FOUND, "the management listener serves " + LIVE + ", "
                        + READY + ", " + METRICS + (admin == null ? "" : " and the admin API") + "; writes go to the"
                        + " data port").send(res))
                .error(RuntimeException.class, (req, res, e) -> internalError(res, e));
    }

    /** The filters every listener runs first, and the health endpoints both answer. */
    private static void health(HttpRouting.Builder routing, FencePipeline pipeline) {
        // first: no answer may leave an unread body on the connection, and Connection: close closes it
        routing.addFilter(new UnreadBody(pipeline.config().server().limits().readTimeout()));
        routing.addFilter(new HttpDate(Clock.systemUTC()));
        routing.get(LIVE, (req, res) -> HealthEndpoints.live(res, pipeline.readiness().unhealed()))
                .get(READY, (req, res) -> HealthEndpoints.ready(res, pipeline.readiness().check()))
                .get(READY + "/{policy}", (req, res) -> HealthEndpoints.policyReady(res,
                        req.path().pathParameters().get("policy"), pipeline.readiness().check()));
    }

    private static void onManagementListener(ServerResponse res, String what) {
        Problem.of(ProblemType.NOT_FOUND, what + " is served on the management listener (server.management), not"
                + " on the port writers reach").send(res);
    }

    /** A bug, not bad input: answered as a problem without internals, logged with its stack trace. */
    private static void internalError(ServerResponse res, RuntimeException e) {
        LOG.log(Level.SEVERE, "internal error", e);
        if (!res.isSent()) {
            Problem.of(ProblemType.INTERNAL_ERROR, "the proxy failed unexpectedly"
                    + " (" + e.getClass().getSimpleName() + "); see its log").send(res);
        }
    }

    /** The gauges of the scope guard and of the store (its cache, and the memory store's scopes and journal). */
    private static void gauges(ProxyMetrics metrics, ScopeGuard guard, FenceStore store) {
        metrics.gauge("stockade.quarantined.scopes", "Scopes refusing writes after an unknown outcome",
                guard::quarantinedScopes);
        metrics.gauge("stockade.scopes.active", "Scopes held or waited for by a write now",
                guard::activeScopes);
        if (store instanceof CachingFenceStore cache) {
            metrics.cache(cache::hits, cache::misses, cache::evictions, cache::size);
        }
        if (FenceStores.unwrapped(store) instanceof MemoryFenceStore memory) {
            metrics.gauge("stockade.store.scopes", "Scopes the memory store holds", memory::scopeCount);
            metrics.gauge("stockade.store.journal.failed.seconds", "How long the memory store's journal has been"
                    + " failed (an I/O error; it retries until it heals), 0 while it works",
                    memory::journalFailedSeconds);
            metrics.gauge("stockade.store.journal.heals", "How many times the memory store's journal healed"
                    + " after an I/O error since start", memory::journalHeals);
            metrics.gauge("stockade.store.scope.memory.bytes", "Heap the memory store's scopes take (estimated)",
                    memory::memoryUsed);
            metrics.gauge("stockade.store.scope.memory.limit.bytes", "The memory store's max-scope-memory,"
                    + " resolved",
                    memory::memoryLimit);
        }
    }

    /** Opens the backend of {@code policy} (its type logs what it should at start). */
    static Backend openBackend(Policy policy) throws IOException {
        return BackendTypes.of(policy).open();
    }

    /** The port actually bound (useful with port 0). */
    public int port() {
        return server.port();
    }

    /** The management listener's port actually bound, or the data port when there is none. */
    public int managementPort() {
        return pipeline.config().server().management() == null ? server.port() : server.port(MANAGEMENT);
    }

    /** The management listener's host, or the data listener's when there is none. */
    public String managementHost() {
        ServerConfig.Management management = pipeline.config().server().management();
        return management == null ? host() : management.host();
    }

    public String host() {
        return pipeline.config().server().host();
    }

    /** {@code https} with TLS on the listener, else {@code http}. */
    public String scheme() {
        return pipeline.config().server().tls() == null ? "http" : "https";
    }

    /**
     * Loads the policy file again and puts it in force (see {@link Reloader}).
     *
     * @return a short summary of what changed
     * @throws PolicyReload.Refused when the file is invalid, or changes what only a restart can change
     */
    public String reload() throws PolicyReload.Refused {
        return reloader.reload();
    }

    /** The PostgreSQL listener ({@code sql} in the policy file), or {@code null} when there is none. */
    public @Nullable SqlListener sql() {
        return sql;
    }

    /** The request pipeline (tests read its per-scope counters). */
    public FencePipeline pipeline() {
        return pipeline;
    }

    public ProxyMetrics metrics() {
        return metrics;
    }

    public FenceStore store() {
        return store;
    }

    /** The backend of a policy (tests use it to take a backend's storage away). */
    public @Nullable Backend backend(String policy) {
        return reloader.backends().get(policy);
    }

    /**
     * Stops listening, then closes the backends (those replaced by reloads too) and the store. A stop that leaves
     * nothing in flight (writes holding a scope are waited for, up to {@value #DRAIN_SECONDS} s) is recorded so
     * that the next start need not settle: in the journal directory with the memory store; on a shared store
     * (etcd, PostgreSQL) by removing this run's record from it ({@code SharedRuns}).
     */
    @Override
    public void close() {
        if (sql != null) {
            sql.close();
        }
        server.stop();
        boolean clean = false;
        Optional<SharedRuns> runs = FenceStores.runs(store);
        if (journal != null || runs.isPresent()) {
            // Wait for the writes in flight (only they can end soon); a quarantine or a settle runs its course.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(DRAIN_SECONDS);
            while (pipeline.writesInFlight() > 0 && System.nanoTime() < deadline) {
                try {
                    Thread.sleep(20);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    break;
                }
            }
            clean = pipeline.quiescent();
        }
        try {
            listenerLimits.close();
        } catch (Exception e) {
            LOG.log(Level.FINE, "closing the listener's timers", e);
        }
        reloader.close();
        if (clean && runs.isPresent()) {
            runs.get().stopCleanly();
        }
        if (clean && journal != null) {
            try {
                CleanShutdown.record(journal);
            } catch (IOException e) {
                LOG.log(Level.WARNING, "could not record the clean stop in " + journal
                        + "; the next start settles as after a crash", e);
            }
        } else if (!clean && (journal != null || runs.isPresent())) {
            LOG.info("stopped with writes in flight, a scope quarantined or policies settling: the next start "
                    + "settles as after a crash");
        }
        store.close();
    }

}
