package io.stockade.conformance;

import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;

import io.stockade.conformance.report.Reports;
import io.stockade.conformance.report.RunInfo;
import io.stockade.conformance.run.Endpoint;
import io.stockade.conformance.run.ProxyProcess;
import io.stockade.conformance.run.RunResult;
import io.stockade.conformance.run.ScenarioRunner;
import io.stockade.conformance.run.StoreProcess;
import io.stockade.conformance.storage.JdbcHttpStore;
import io.stockade.conformance.storage.PlainHttpStore;
import io.stockade.conformance.storage.StorageReader;
import io.stockade.conformance.writer.SigV4;

import org.jspecify.annotations.Nullable;

/**
 * The conformance suite as a library: the command line ({@link Main}) and users' own JUnit tests call it.
 *
 * <pre>{@code
 * @Test
 * void noStaleWriteLandsOnMyDeployment() throws Exception {
 *     Conformance.Result r = Conformance.of(Target.load(Path.of("target.yaml")))
 *             .duration(Duration.ofSeconds(10))
 *             .run();
 *     r.assertPassed();   // AssertionError with the table and every violation otherwise
 * }
 * }</pre>
 *
 * Each scenario runs twice: as the paired control, straight against the storage, where a stale write must land;
 * then through the proxy, where none may. The writers run on this host as child processes of this JVM, with this
 * JVM's {@code java} and class path.
 */
public final class Conformance {

    private final Target target;
    private Set<Scenario> scenarios = EnumSet.allOf(Scenario.class);
    private boolean explicitScenarios;
    private Duration duration = Duration.ofSeconds(5);
    private Duration readEvery = Duration.ofMillis(10);
    private @Nullable Path workDir;   // null: a temp directory
    private PrintStream log = System.err;
    private boolean proxyAnnounced;

    private Conformance(Target target) {
        this.target = target;
    }

    /** A suite against {@code target}: every scenario, 5 s per run. */
    public static Conformance of(Target target) {
        return new Conformance(target);
    }

    /** Only these scenarios (a scenario asked for explicitly is never skipped silently). */
    public Conformance scenarios(Scenario... s) {
        this.scenarios = EnumSet.copyOf(List.of(s));
        this.explicitScenarios = true;
        return this;
    }

    /** How long each run keeps injecting faults (at least one fault cycle always runs). */
    public Conformance duration(Duration d) {
        this.duration = d;
        return this;
    }

    /** How often the storage is read directly during a run. */
    public Conformance readEvery(Duration d) {
        this.readEvery = d;
        return this;
    }

    /** Where logs (a launched proxy's) go; default a temp directory. */
    public Conformance workDir(Path dir) {
        this.workDir = dir;
        return this;
    }

    /** Progress lines go here (default stderr). */
    public Conformance log(PrintStream out) {
        this.log = out;
        return this;
    }

    /**
     * The results of one suite run.
     *
     * @param info the run's facts for the report (date, builds, storage, lease, durations); null when unknown
     */
    public record Result(Target target, List<ScenarioResult> scenarios, @Nullable RunInfo info) {
        /** Results without the run's facts. */
        public Result(Target target, List<ScenarioResult> scenarios) {
            this(target, scenarios, null);
        }

        /** The summary line (overall verdict, counts of verdicts, Stockade build, date, duration). */
        public String summary() {
            return Reports.summary(target.name(), info, scenarios);
        }

        /** The JSON report. */
        public String json() {
            return Reports.json(target.name(), info, scenarios);
        }

        /** The HTML report. */
        public String html() {
            return Reports.html(target.name(), info, scenarios);
        }

        /** True when every scenario that ran passed (and at least one ran). */
        public boolean passed() {
            return scenarios.stream().anyMatch(s -> s.verdict() != Verdict.SKIPPED)
                    && scenarios.stream().allMatch(s -> s.verdict() == Verdict.PASS || s.verdict() == Verdict.SKIPPED);
        }

        /** Throws an {@link AssertionError} with the table and the violations unless {@link #passed()}. */
        public void assertPassed() {
            if (!passed()) {
                throw new AssertionError("conformance did not pass:\n" + Reports.table(scenarios)
                        + Reports.details(scenarios));
            }
        }
    }

    /** Runs every scenario: control first, then through the proxy. */
    public Result run() throws Exception {
        Path work = workDir != null ? Files.createDirectories(workDir) : Files.createTempDirectory("stockade-conf-");
        Instant started = Instant.now().truncatedTo(ChronoUnit.SECONDS);
        long startNanos = System.nanoTime();
        String[] stockade = {"unknown (no run reached the proxy)", "unknown"};
        String proxyAt = target.sql() != null ? "the PostgreSQL listener at " + hidePassword(target.sql().url())
                : target.proxyUrl() == null ? "launched by the suite" : target.proxyUrl();
        String storage = "?";
        String runId = Long.toString(System.currentTimeMillis(), 36);
        proxyAnnounced = false;
        List<ScenarioResult> results = new ArrayList<>();
        ProxyProcess launched = null;
        StoreProcess store = null;
        List<AutoCloseable> servers = new ArrayList<>();   // the control's shims
        try (StorageReader reader = target.reader(); StorageReader controlReader = target.controlReader()) {
            storage = reader.describe();
            if (target.store() != null) {   // before the proxy, which needs it
                store = new StoreProcess(target.store().launch(), target.store().ready(), work.resolve("store.log"));
                store.start(Duration.ofSeconds(60));
                log.println("conformance: launched the fence store, pid " + store.pid() + " (log " + store.log()
                        + ")");
            }
            // A launched proxy starts while the first control runs (the control does not use it); it is waited for
            // before the first run through the proxy, and before a store-stop control stops the store under it.
            launched = target.launch() == null ? null : new ProxyProcess(target.launch(), work.resolve("proxy.log"));
            CompletableFuture<URI> proxyStart = startProxy(launched);
            Endpoint controlEndpoint = null;
            if (target.control() != null) {
                controlEndpoint = controlEndpoint(target.control(), servers);
            }
            if (controlEndpoint == null) {
                awaitProxy(proxyStart, launched);
            }
            Endpoint proxied = null;
            for (Scenario s : scenarios) {
                String notApplicable = notApplicable(s, launched != null, store != null);
                if (notApplicable != null) {
                    results.add(new ScenarioResult(s, target.name(), null, null,
                            explicitScenarios ? Verdict.INCONCLUSIVE : Verdict.SKIPPED, List.of(notApplicable), 0));
                    continue;
                }
                if (s == Scenario.STORE_STOP) {   // its control stops the store the proxy needs to start
                    awaitProxy(proxyStart, launched);
                }
                long t0 = System.nanoTime();
                String key = "conformance/" + runId + "/" + s.id();
                String counter = counterInstead(s, target.leaseProvider());
                RunResult control = null;
                if (controlEndpoint != null) {
                    log.println("conformance: " + s.id() + " control (no proxy) ...");
                    try {
                        control = new ScenarioRunner(s, true, key + "-control", controlEndpoint, controlReader,
                                options(work, store, s)).note(counter).run();
                    } catch (UncheckedIOException e) {   // its read-back failed: it proves nothing
                        ScenarioResult broke = new ScenarioResult(s, target.name(), null, null, Verdict.INCONCLUSIVE,
                                List.of("the control run broke off: " + e.getMessage()),
                                (System.nanoTime() - t0) / 1e9);
                        log.println("conformance: " + Reports.line(broke));
                        results.add(broke);
                        continue;
                    }
                }
                if (proxied == null && target.sql() != null) {
                    proxied = Endpoint.sql(target.sql());
                    stockade = target.metricsUrl() == null ? new String[] {"unknown (no sql.metrics: the proxy's "
                            + "/metrics address)", "unknown"} : RunInfo.proxyBuild(URI.create(target.metricsUrl()));
                } else if (proxied == null) {
                    URI base = awaitProxy(proxyStart, launched);
                    proxied = proxyEndpoint(base, launched);
                    proxyAt = launched == null ? base.toString() : "launched by the suite, on " + base;
                    URI metricsBase = launched != null && launched.management() != null ? launched.management() : base;
                    stockade = RunInfo.proxyBuild(URI.create(target.metricsUrl() != null ? target.metricsUrl()
                            : metricsBase.toString().replaceAll("/$", "") + "/metrics"));
                }
                log.println("conformance: " + s.id() + " through the proxy ..." + (counter == null ? "" : " (counter"
                        + " lease)"));
                RunResult through;
                try {
                    through = new ScenarioRunner(s, false, key, proxied, reader, options(work, store, s)).note(counter)
                            .run();
                } catch (IllegalStateException | UncheckedIOException e) {
                    // The run broke off (the proxy did not come back from a restart): this scenario proves nothing,
                    // the others and the report are kept.
                    ScenarioResult broke = new ScenarioResult(s, target.name(), null, control, Verdict.INCONCLUSIVE,
                            List.of("the run through the proxy broke off: " + e.getMessage()),
                            (System.nanoTime() - t0) / 1e9);
                    log.println("conformance: " + Reports.line(broke));
                    results.add(broke);
                    continue;
                }
                ScenarioResult r = ScenarioResult.judge(s, target.name(), through, control,
                        (System.nanoTime() - t0) / 1e9);
                log.println("conformance: " + Reports.line(r));
                results.add(r);
            }
        } finally {
            if (launched != null) {
                launched.close();
            }
            if (store != null) {
                store.close();
            }
            for (AutoCloseable c : servers) {
                c.close();
            }
        }
        String[] suite = RunInfo.suiteBuild();
        RunInfo info = new RunInfo(started, (System.nanoTime() - startNanos) / 1e9, target.name(), proxyAt,
                stockade[0], stockade[1], suite[0], suite[1], writeDescription(), storage, controlDescription(),
                Objects.requireNonNull(RunInfo.hideSecrets(target.leaseProvider()), "a spec hides to a spec"),
                target.ttl(), target.writers(), duration);
        return new Result(target, List.copyOf(results), info);
    }

    /**
     * Starts a launched proxy in the background ({@code launched} not null), or the address of a running one: the
     * target's {@code proxy.url}, or its listener's for a SQL target.
     */
    private CompletableFuture<URI> startProxy(@Nullable ProxyProcess launched) {
        if (launched == null) {
            return CompletableFuture.completedFuture(URI.create(target.sql() != null
                    ? target.sql().url().substring("jdbc:".length()) : target.proxyUrl()));
        }
        CompletableFuture<URI> proxyStart = new CompletableFuture<>();
        Thread.ofPlatform().daemon().name("proxy-start").start(() -> {
            try {
                proxyStart.complete(launched.start(Duration.ofSeconds(60)));
            } catch (Throwable t) {
                proxyStart.completeExceptionally(t);
            }
        });
        return proxyStart;
    }

    /** The write the writers send, for the report. */
    private String writeDescription() {
        if (target.sql() != null) {
            return "SQL " + target.sql().statement() + " with " + target.sql().params()
                    + ", token in the startup options (options=-c stockade.fencing_token=N)";
        }
        Target.Request q = target.request();
        return q.method() + " " + target.proxyPath() + (q.contentType() == null ? "" : " Content-Type: "
                + q.contentType()) + " body " + q.body() + ", token in " + target.header();
    }

    /**
     * The control's way into the storage ({@code c}: the target's control); the servers the suite starts for it are
     * added to {@code servers}.
     */
    private Endpoint controlEndpoint(Map<String, String> c, List<AutoCloseable> servers) {
        Target.Sql sql = target.sql();
        if (sql != null) {   // the same SQL writers, straight on the database, on a table without the fence
            return Endpoint.sql(sql.on(
                    Objects.requireNonNull(c.get("jdbc"), "Target.parse checked: a sql control has jdbc"),
                    c.get("user"), c.get("password"),
                    c.getOrDefault("sql", sql.statement())));
        }
        if (c.containsKey("directory")) {
            PlainHttpStore controlStore = PlainHttpStore.start(Path.of(c.get("directory")));
            servers.add(controlStore);
            return Endpoint.fixed(controlStore.baseUri(), "/" + c.getOrDefault("file", "{key}"));
        } else if (c.containsKey("jdbc")) {
            JdbcHttpStore controlShim = JdbcHttpStore.start(c.get("jdbc"), c.get("user"), c.get("password"),
                    Objects.requireNonNull(c.get("sql"), "Target.parse checked: control.jdbc needs control.sql"));
            servers.add(controlShim);
            return Endpoint.fixed(controlShim.baseUri(), "/" + c.getOrDefault("param",
                    target.read().getOrDefault("param", "{key}")));
        } else if (c.containsKey("s3")) {   // path style, signed with the bucket's own key
            return Endpoint.fixed(URI.create(c.get("s3")),
                    "/" + c.get("bucket") + "/" + c.getOrDefault("key", "{key}"),
                    new SigV4(Objects.requireNonNull(c.get("access-key"), "Target.parse checked: s3 has access-key"),
                            Objects.requireNonNull(c.get("secret-key"), "Target.parse checked: s3 has secret-key"),
                            c.getOrDefault("region", "us-east-1")));
        }
        return Endpoint.fixed(URI.create(c.get("url")), c.getOrDefault("path", "/{key}"), null,
                c.getOrDefault("method", target.request().method()).toUpperCase(Locale.ROOT));
    }

    /** How the control writes the storage, for the report. */
    private String controlDescription() {
        Map<String, String> c = target.control();
        if (c == null) {
            return "none";
        }
        if (target.sql() != null) {
            return "SQL straight to " + hidePassword(Objects.requireNonNull(c.get("jdbc"),
                    "Target.parse checked: a sql control has jdbc")) + ": " + c.getOrDefault("sql",
                    target.sql().statement()) + " (read back with " + c.getOrDefault("read-sql",
                    target.read().get("sql")) + ")";
        }
        if (c.containsKey("directory")) {
            return "directory " + c.get("directory") + "/" + c.getOrDefault("file", "{key}") + " (served by the suite)";
        }
        if (c.containsKey("jdbc")) {
            return "jdbc " + c.get("jdbc") + " " + c.get("sql") + " (? = " + c.getOrDefault("param",
                    target.read().getOrDefault("param", "{key}")) + ", then the body)";
        }
        if (c.containsKey("s3")) {
            return "s3 " + c.get("s3") + " bucket " + c.get("bucket") + " key " + c.getOrDefault("key", "{key}");
        }
        return c.getOrDefault("method", target.request().method()).toUpperCase(Locale.ROOT) + " " + c.get("url")
                + c.getOrDefault("path", "/{key}");
    }

    /** A JDBC URL with the value of a {@code password=} parameter hidden. */
    private static String hidePassword(String url) {
        return url.replaceAll("(?i)([?&]password=)[^&]*", "$1…");
    }

    /** The launched proxy's address once it is ready (or the target's {@code proxy.url}). */
    private URI awaitProxy(CompletableFuture<URI> start, @Nullable ProxyProcess launched) throws Exception {
        try {
            URI base = start.get();
            if (launched != null && !proxyAnnounced) {
                proxyAnnounced = true;
                log.println("conformance: launched the proxy on " + base + " (log " + launched.log() + ")");
            }
            return base;
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception x) {
                throw x;
            }
            throw e;
        }
    }

    /** Why a scenario cannot run on this target, or null. */
    private static @Nullable String notApplicable(Scenario s, boolean proxyLaunched, boolean storeLaunched) {
        return s == Scenario.PROXY_RESTART && !proxyLaunched
                ? "the proxy is not launched by the suite (target proxy.launch)"
                : s == Scenario.STORE_STOP && (!storeLaunched || !proxyLaunched)
                ? "the fence store and the proxy are not both launched by the suite (target store.launch, "
                + "proxy.launch)" : null;
    }

    /**
     * Why a scenario runs with the suite's counter lease although the target names a real one, or null: it faults
     * only the holder's connection to the proxy, and the client SDK's watchdog keeps renewing a real lease through it
     * ({@link Scenario#faultsOnlyTheConnection()}). A {@code class:} provider is used as named: the suite cannot
     * tell whether it renews by itself.
     */
    static @Nullable String counterInstead(Scenario s, String provider) {
        if (!s.faultsOnlyTheConnection() || provider.equals("counter") || provider.startsWith("class:")) {
            return null;
        }
        return "ran with the suite's counter lease, not " + RunInfo.hideSecrets(provider) + ": " + s.id()
                + " faults only the holder's connection to the proxy, and a real lease's watchdog, on a connection"
                + " the fault does not touch, keeps renewing it, so no other writer could take it; pause,"
                + " proxy-restart and store-stop run with the lease named";
    }

    private ScenarioRunner.Options options(Path work, @Nullable StoreProcess store, Scenario scenario) {
        String p = counterInstead(scenario, target.leaseProvider()) != null ? "counter" : target.leaseProvider();
        String spec;
        if (p.equals("counter")) {
            spec = null;
        } else if (p.startsWith("etcd:") || p.startsWith("postgres:") || p.startsWith("redis:")
                || p.startsWith("zookeeper:") || p.startsWith("dynamodb:") || p.startsWith("consul:")) {
            // the SDK's: one lock per run
            int colon = p.indexOf(':');
            spec = p.substring(0, colon) + ":" + target.ttl().toMillis() + ":{lock}:" + p.substring(colon + 1);
        } else {
            spec = p;
        }
        return new ScenarioRunner.Options(duration, target.ttl(), target.writers(), spec, target.header(), readEvery,
                work, store, target.request());
    }

    private Endpoint proxyEndpoint(URI base, @Nullable ProxyProcess launched) {
        InetSocketAddress[] current = {new InetSocketAddress(base.getHost(), base.getPort())};
        String prefix = base.getRawPath() == null ? "" : base.getRawPath().replaceAll("/$", "");
        return new Endpoint() {
            @Override
            public InetSocketAddress address() {
                return current[0];
            }

            @Override
            public String path(String key) {
                return prefix + Template.expand(Objects.requireNonNull(target.proxyPath(),
                        "Target.parse gives an HTTP target a proxy.path"), key);
            }

            @Override
            public String method() {
                return target.request().method();
            }

            @Override
            public @Nullable SigV4 signer() {
                return target.proxySigner();
            }

            @Override
            public Endpoint.@Nullable Restarter restarter() {
                if (launched == null) {
                    return null;
                }
                return () -> {
                    String doubt = launched.kill9();
                    // A start that fails (a database slow to hand out its first connection on a loaded machine)
                    // is tried again, twice, and said in the report; a third failure ends the run.
                    List<String> failedStarts = new ArrayList<>();
                    URI u = null;
                    for (int attempt = 1; u == null; attempt++) {
                        try {
                            u = launched.start(Duration.ofSeconds(60));
                        } catch (IllegalStateException e) {
                            if (attempt == 3) {
                                throw e;
                            }
                            failedStarts.add("restart attempt " + attempt + " failed, tried again: " + e.getMessage());
                        }
                    }
                    current[0] = new InetSocketAddress(u.getHost(), u.getPort());
                    return new Endpoint.Restarted(current[0], doubt, failedStarts);
                };
            }
        };
    }
}
