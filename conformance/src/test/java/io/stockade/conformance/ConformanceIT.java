package io.stockade.conformance;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

import io.stockade.conformance.run.RunResult;
import io.stockade.conformance.storage.PlainHttpStore;
import io.stockade.testing.RedisServer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The suite in this repository's CI: every scenario against the real proxy (a child process the suite launches,
 * so it can kill -9 it) in front of the file, HTTP, PostgreSQL and S3 backends, and the HTTP backend on the etcd and
 * PostgreSQL fence stores, each with its paired control, which must see a stale write land. Short budget: one fault
 * cycle per run. {@code -Dconformance.scenarios=pause,delay} narrows it. Each case writes the proxy's policy file
 * and the target file with the helpers below ({@link #policy}, {@link #target}) and states only what differs.
 */
class ConformanceIT {

    /** Every scenario but {@code store-stop} (which needs a store the suite launches). */
    private static final Scenario[] WITHOUT_STORE = Arrays.stream(Scenario.values())
            .filter(s -> s != Scenario.STORE_STOP).toArray(Scenario[]::new);

    /** {@code applicable}, narrowed by {@code -Dconformance.scenarios} (a test none of whose scenarios is asked
     *  for runs nothing). */
    private static List<Scenario> scenarios(Scenario... applicable) {
        String s = System.getProperty("conformance.scenarios");
        List<Scenario> asked = s == null || s.isBlank() ? List.of(applicable)
                : Arrays.stream(s.split(",")).map(Scenario::parse).toList();
        return Arrays.stream(applicable).filter(asked::contains).toList();
    }

    private static List<String> launch(Path policy) {
        String java = ProcessHandle.current().info().command().orElse("java");
        return List.of(java, "-XX:+ExitOnOutOfMemoryError", "-cp", System.getProperty("java.class.path"),
                "io.stockade.proxy.Main",
                "--config", policy.toString());
    }

    private static String yamlList(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (String i : items) {
            b.append(b.length() > 1 ? ", " : "").append('"').append(i.replace("\\", "\\\\").replace("\"", "\\\""))
                    .append('"');
        }
        return b.append(']').toString();
    }

    /**
     * Runs the scenarios; one that comes out INCONCLUSIVE (its paired control saw no stale write land, so the run
     * proved nothing either way) is run again, at most four times. A FAIL is never re-run, and the verdict of the last
     * attempt is the one asserted: a scenario passes only in a run whose control caught a stale write.
     */
    private static final int MAX_ATTEMPTS = 5;

    private static Conformance.Result runConclusively(Target target, Path work, Scenario... applicable)
            throws Exception {
        List<ScenarioResult> settled = new java.util.ArrayList<>();
        List<Scenario> todo = new java.util.ArrayList<>(scenarios(applicable.length == 0 ? WITHOUT_STORE
                : applicable));
        org.junit.jupiter.api.Assumptions.assumeFalse(todo.isEmpty(), "no scenario of this test was asked for");
        // An inconclusive control asks for another run (the README): the delay controls of the s3 and http cases see
        // the stale value in a window of one writer's pace (~120 ms), where a loaded machine's direct reads catch it
        // as few as once (caught (1)), and three misses in a row happened once in CI (2026-12-01). Five attempts;
        // the cause is written down in conformance/README.md.
        for (int attempt = 1; attempt <= MAX_ATTEMPTS && !todo.isEmpty(); attempt++) {
            Conformance.Result r = Conformance.of(target).scenarios(todo.toArray(Scenario[]::new))
                    .duration(Duration.ofSeconds(1)).workDir(work.resolve("attempt-" + attempt)).run();
            for (ScenarioResult s : r.scenarios()) {
                if (s.verdict() == Verdict.INCONCLUSIVE && attempt < MAX_ATTEMPTS) {
                    System.out.println("attempt " + attempt + ": " + s.scenario().id() + " inconclusive, run again");
                    continue;
                }
                settled.add(s);
                todo.remove(s.scenario());
            }
        }
        return new Conformance.Result(target, settled);
    }

    private static void assertEveryScenarioPassedAndEveryControlCaught(Conformance.Result r) {
        System.out.println(io.stockade.conformance.report.Reports.table(r.scenarios()));
        System.out.println(io.stockade.conformance.report.Reports.details(r.scenarios()));
        r.assertPassed();
        for (ScenarioResult s : r.scenarios()) {
            s.control().notes().forEach(n -> System.out.println(s.scenario().id() + " control: " + n));
            s.proxied().notes().forEach(n -> System.out.println(s.scenario().id() + " proxied: " + n));
            assertEquals(Verdict.PASS, s.verdict(), s.scenario().id());
            assertFalse(s.control().check().ok(), s.scenario().id() + ": the control must see a stale write land");
            assertTrue(s.proxied().faultsEffective() > 0, s.scenario().id());
            assertTrue(s.proxied().handoffs() > 0, s.scenario().id());
            if (s.scenario() == Scenario.STORE_STOP) {   // fail closed: the store was down, the write not forwarded
                assertTrue(s.proxied().history().ops().stream().anyMatch(o -> o.status() == 503),
                        s.scenario().id() + ": the proxy must have refused a write with 503 during the outage");
            } else if (s.scenario() != Scenario.TIMEOUT) {   // there the zombie hears nothing: it timed out first
                assertTrue(s.proxied().history().ops().stream().anyMatch(o -> o.status() == 409
                                || o.status() == 412),   // S3: 412 PreconditionFailed
                        s.scenario().id() + ": the proxy must have refused the zombie's write with 409/412");
            }
        }
    }

    // ------------------------------------------------------------------ the files each case writes

    /** {@code dir/stockade.yaml}: a proxy on port 0 with this {@code store:} block and these policies (list items). */
    private static Path policy(Path dir, String store, String policies) throws IOException {
        Path policy = dir.resolve("stockade.yaml");
        Files.writeString(policy, "server:\n  port: 0\n" + store + "policies:\n" + policies);
        return policy;
    }

    /** The in-memory fence store with its journal under {@code dir} (survives the proxy's kill -9). */
    private static String memoryStore(Path dir) {
        return """
                store:
                  type: memory
                  journal: %s
                """.formatted(dir.resolve("journal"));
    }

    /**
     * The policy {@code docs}: {@code /docs/{path...}} fenced per path on the HTTP backend in front of
     * {@code upstream}.
     */
    private static String httpPolicy(URI upstream) {
        return """
                  - name: docs
                    match:
                      path: /docs/{path...}
                      methods: [GET, HEAD, PUT, DELETE]
                    scope: docs/{path}
                    fence:
                      methods: [PUT, DELETE]
                    backend:
                      type: http
                      url: %s
                      conditional: none
                      timeout: 10s
                      settle: 1s
                """.formatted(upstream);
    }

    /**
     * {@code dir/target.yaml}, loaded: {@code name}, the proxy launched by the suite with {@code policy} and written at
     * {@code proxyPath}, then {@code rest} (indented lines at its start still belong to {@code proxy:}).
     */
    private static Target target(Path dir, String name, String proxyPath, Path policy, String rest)
            throws IOException {
        Path target = dir.resolve("target.yaml");
        Files.writeString(target, "name: " + name + "\nproxy:\n  path: " + proxyPath + "\n  launch: "
                + yamlList(launch(policy)) + "\n" + rest);
        return Target.load(target);
    }

    /** Read back with a GET on the upstream, the control PUTs on it: {@code read:} and {@code control:}. */
    private static String readAndControlOn(URI upstream) {
        return """
                read:
                  url: %s
                  path: /docs/{key}
                control:
                  url: %s
                  path: /docs/{key}
                """.formatted(upstream, upstream);
    }

    /**
     * The HTTP backend ({@link #httpPolicy}) in front of a fresh {@link PlainHttpStore} under {@code dir}, on the fence
     * store {@code store}, read back and controlled on that upstream ({@link #readAndControlOn}); {@code moreTarget}
     * adds to the target file. Runs the scenarios (none: every one but store-stop) and asserts they all passed.
     */
    private static Conformance.Result httpBackendOn(Path dir, String name, String store, String moreTarget,
                                                    Scenario... scenarios) throws Exception {
        try (PlainHttpStore upstream = PlainHttpStore.start(dir.resolve("upstream"))) {
            Path policy = policy(dir, store, httpPolicy(upstream.baseUri()));
            Target target = target(dir, name, "/docs/{key}", policy, readAndControlOn(upstream.baseUri()) + moreTarget);
            Conformance.Result r = runConclusively(target, dir.resolve("work"), scenarios);
            assertEveryScenarioPassedAndEveryControlCaught(r);
            return r;
        }
    }

    /** A case's work in a fresh schema of the CI database, dropped afterwards. */
    private interface InSchema {
        void run(String schema, String url) throws Exception;
    }

    private static void inFreshSchema(InSchema body) throws Exception {
        String schema = "conf_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        pg("CREATE SCHEMA " + schema);
        try {
            body.run(schema, PG + "?currentSchema=" + schema);
        } finally {
            pg("DROP SCHEMA " + schema + " CASCADE");
        }
    }

    // ------------------------------------------------------------------ the cases

    @Test
    void fileBackendPassesEveryScenarioAndItsControlFails(@TempDir Path dir) throws Exception {
        Conformance.Result r = runConclusively(fileTarget(dir), dir.resolve("work"));
        assertEveryScenarioPassedAndEveryControlCaught(r);
        theHtmlReportDrawsTheRunInABrowser(r, dir);
    }

    /**
     * The HTML report of a real run, in a real browser (Debian's chromium, headless): the page's script ran without
     * error and drew one mark per write of the run, one shaded interval per fault, a section per scenario, and ringed
     * the writes of the control's violations (the stale writes that landed).
     */
    private static void theHtmlReportDrawsTheRunInABrowser(Conformance.Result r, Path dir) throws Exception {
        assertTrue(HeadlessBrowser.available(), "chromium is not installed (./test.sh installs it)");
        // kept under target/ to look at after the build
        Path page = Files.createDirectories(Path.of("target")).resolve("conformance-report-file.html");
        Files.writeString(page, io.stockade.conformance.report.Reports.html("file", r.scenarios()));
        String dom = HeadlessBrowser.dumpDom(page, Files.createDirectories(dir.resolve("browser")));
        String body = dom.substring(dom.indexOf("<body"), dom.indexOf('>', dom.indexOf("<body")) + 1);
        assertFalse(body.contains("data-error"), body);
        long writes = 0;
        long faults = 0;
        long ringed = 0;
        for (ScenarioResult s : r.scenarios()) {
            assertTrue(dom.contains("data-scenario=\"" + s.scenario().id() + "\""), s.scenario().id());
            for (io.stockade.conformance.run.RunResult run : java.util.Arrays.asList(s.proxied(), s.control())) {
                writes += run.history().ops().size();
                faults += run.faultWindows().size();
            }
            ringed += s.control().check().details().stream().flatMap(v -> v.ops().stream()).distinct().count();
        }
        assertTrue(writes > 0 && faults > 0 && ringed > 0, writes + " " + faults + " " + ringed);
        assertTrue(body.contains("data-rendered=\"" + writes + "\""), body + ": marks drawn, expected " + writes);
        assertEquals(writes, count(dom, "<circle class=\"write "), "one mark per write");
        assertEquals(faults, count(dom, "<rect class=\"fault\""), "one shaded interval per fault");
        assertTrue(count(dom, "stroke=\"#000\"") >= ringed, "the control's stale writes are ringed");
    }

    private static long count(String text, String needle) {
        long n = 0;
        for (int i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + 1)) {
            n++;
        }
        return n;
    }

    /**
     * A longer run keeps injecting faults until its duration is spent, in the control and through the proxy: each
     * cycle faults the writer that holds the lease now. (The suite used to pick any writer with two acknowledged
     * writes, which after the first handoff could be the fenced ex-holder: it made no lease check, and the run
     * ended after one or two cycles whatever the duration.)
     */
    @Test
    void aLongerRunKeepsFaultingTheCurrentHolder(@TempDir Path dir) throws Exception {
        org.junit.jupiter.api.Assumptions.assumeFalse(scenarios(Scenario.PAUSE).isEmpty(), "pause was not asked for");
        Conformance.Result r = Conformance.of(fileTarget(dir)).scenarios(Scenario.PAUSE)
                .duration(Duration.ofSeconds(12)).workDir(dir.resolve("work")).run();
        System.out.println(io.stockade.conformance.report.Reports.table(r.scenarios()));
        System.out.println(io.stockade.conformance.report.Reports.details(r.scenarios()));
        ScenarioResult s = r.scenarios().getFirst();
        assertTrue(s.proxied().check().ok(), s.proxied().check().toString());
        for (RunResult run : List.of(s.control(), s.proxied())) {
            String which = run.control() ? "control" : "through the proxy";
            assertTrue(run.faultsInjected() >= 3, which + ": " + run.faultsInjected() + " fault cycles in 12 s, notes "
                    + run.notes());
            assertTrue(run.notes().stream().noneMatch(n -> n.contains("made no lease check")), which + ": "
                    + run.notes());
        }
    }

    /** The file backend over {@code dir/files} on the memory store, read and controlled on that directory. */
    private static Target fileTarget(Path dir) throws IOException {
        Path root = dir.resolve("files");
        Path policy = policy(dir, memoryStore(dir), """
                  - name: files
                    match:
                      path: /files/{path...}
                      methods: [GET, HEAD, PUT, DELETE]
                    scope: files/{path}
                    fence:
                      methods: [PUT, DELETE]
                    backend:
                      type: file
                      root: %s
                """.formatted(root));
        return target(dir, "file", "/files/{key}", policy, """
                read:
                  directory: %s
                  file: files/{key}
                control:
                  directory: %s
                  file: files/{key}
                lease:
                  ttl: 1s
                """.formatted(root, root));
    }

    /**
     * The file backend with the writers holding real leases from a real redis-server (the client SDK's Redis provider,
     * TTL 1 s: the zombie's lock really expires in Redis while it is stopped or delayed), and the proxy verifying every
     * token against the same Redis ({@code fence.verify: {kind: redis}}: the lock key is the run's key, which the
     * policy's scope {@code {path}} gives): {@code pause} and {@code proxy-restart}. ({@code delay}, {@code timeout}
     * and {@code lost-response} fault the writer's connection to the proxy only; the SDK's watchdog keeps renewing
     * the lease meanwhile, so no handoff happens and they stay inconclusive, as with the etcd and PostgreSQL
     * providers.)
     */
    @Test
    void fileBackendWithRedisLeasesPassesPauseAndProxyRestart(@TempDir Path dir) throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.REDIS);
        try (RedisServer redis = RedisServer.start(RedisServer.options())) {
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: redis, url: "%s"}
                        backend:
                          type: file
                          root: %s
                    """.formatted(redis.url(), root));
            Target target = target(dir, "file+redis-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: redis
                      redis: %s
                      ttl: 1s
                    """.formatted(root, root, redis.url()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE, Scenario.PROXY_RESTART);
            assertEveryScenarioPassedAndEveryControlCaught(r);
            try (Jedis locks = new Jedis(redis.url())) {   // the leases came from Redis, one lock per run
                for (ScenarioResult s : r.scenarios()) {
                    for (String key : List.of(s.proxied().key(), s.control().key())) {
                        String counter = locks.get("stockade:token:{" + key + "}");
                        assertTrue(counter != null && Long.parseLong(counter) > 1_000_000_000_000L,
                                s.scenario().id() + ": " + key + " -> " + counter);
                    }
                }
            }
        }
    }

    /**
     * As the Redis run, with ZooKeeper: the writers hold real leases from a real ZooKeeper server (Curator's
     * {@code TestingServer} in process, tickTime 200 ms so that the 1 s TTL is an allowed session timeout; the client
     * SDK's ZooKeeper provider, token = the lock node's czxid) and the proxy verifies every token against the same
     * server ({@code fence.verify: {kind: zookeeper}}, lock path {@code /<run key>}). An accepted write is one the
     * verifier found to be the current holder's node: the leases came from ZooKeeper.
     */
    @Test
    void fileBackendWithZooKeeperLeasesPassesPauseAndProxyRestart(@TempDir Path dir) throws Exception {
        try (org.apache.curator.test.TestingServer zk = new org.apache.curator.test.TestingServer(
                new org.apache.curator.test.InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true)) {
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: zookeeper, servers: "%s", prefix: /}
                        backend:
                          type: file
                          root: %s
                    """.formatted(zk.getConnectString(), root));
            Target target = target(dir, "file+zookeeper-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: zookeeper
                      zookeeper: "%s"
                      ttl: 1s
                    """.formatted(root, root, zk.getConnectString()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE, Scenario.PROXY_RESTART);
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }

    /**
     * As the ZooKeeper run, with DynamoDB: the writers hold real leases from dynalite (a DynamoDB API server; the
     * client SDK's DynamoDB provider, token = the lock item's counter, credentials from the environment the failsafe
     * configuration gives the test JVM) and the proxy verifies every token against the same table
     * ({@code fence.verify: {kind: dynamodb}}, the item's rvn rule included). An accepted write is one the verifier
     * found to carry the current holder's token: the leases came from DynamoDB.
     */
    @Test
    void fileBackendWithDynamoDbLeasesPassesPauseAndProxyRestart(@TempDir Path dir) throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.DYNALITE);
        try (io.stockade.testing.Dynalite dynalite = io.stockade.testing.Dynalite.start()) {
            String table = dynalite.createLockTable("conformance-locks");
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: dynamodb, table: %s, region: %s, endpoint: "%s",
                                   access-key: %s, secret-key: %s, cache: {enabled: false}}
                        backend:
                          type: file
                          root: %s
                    """.formatted(table, io.stockade.testing.Dynalite.REGION, dynalite.endpoint(),
                    io.stockade.testing.Dynalite.ACCESS_KEY, io.stockade.testing.Dynalite.SECRET_KEY,
                    root));
            Target target = target(dir, "file+dynamodb-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: dynamodb
                      dynamodb: %s
                      dynamodb-region: %s
                      dynamodb-endpoint: "%s"
                      ttl: 1s
                    """.formatted(root, root, table, io.stockade.testing.Dynalite.REGION, dynalite.endpoint()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE, Scenario.PROXY_RESTART);
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }

    /**
     * As the ZooKeeper run, with Consul: the writers hold leases from {@code ConsulStandIn} in real-time mode (an
     * in-process stand-in of Consul's session and KV API — <b>not a real Consul</b>, none can be installed here;
     * sessions expire by themselves at 2 × TTL and leave a 15 s lock-delay) through the client SDK's Consul provider
     * (token = the key's {@code ModifyIndex}), and the proxy verifies every token against it
     * ({@code fence.verify: {kind: consul}}). Consul's shortest session TTL is 10 s, so this run is the slow one:
     * pause only.
     */
    @Test
    void fileBackendWithConsulLeasesPassesPause(@TempDir Path dir) throws Exception {
        try (io.stockade.testing.ConsulStandIn consul = io.stockade.testing.ConsulStandIn.realTime()) {
            Path root = dir.resolve("files");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: files
                        match:
                          path: /files/{path...}
                          methods: [GET, HEAD, PUT, DELETE]
                        scope: "{path}"
                        fence:
                          methods: [PUT, DELETE]
                          verify: {kind: consul, url: "%s", cache: {enabled: false}}
                        backend:
                          type: file
                          root: %s
                    """.formatted(consul.url(), root));
            Target target = target(dir, "file+consul-leases", "/files/{key}", policy, """
                    read:
                      directory: %s
                      file: files/{key}
                    control:
                      directory: %s
                      file: files/{key}
                    lease:
                      provider: consul
                      consul: "%s"
                      ttl: 10s
                    """.formatted(root, root, consul.url()));
            Conformance.Result r = runConclusively(target, dir.resolve("work"), Scenario.PAUSE);
            assertEveryScenarioPassedAndEveryControlCaught(r);
        }
    }

    @Test
    void httpBackendPassesEveryScenarioAndItsControlFails(@TempDir Path dir) throws Exception {
        httpBackendOn(dir, "http", memoryStore(dir), "");
    }

    /** The shared CI database (trust auth); {@code -Dconformance.pg=jdbc:postgresql://host:port/db} overrides it. */
    private static final String PG = System.getProperty("conformance.pg", "jdbc:postgresql://127.0.0.1:5432/test");
    private static final String PG_USER = System.getProperty("conformance.pg.user", "postgres");

    private static final String UPSERT_PROXY = "INSERT INTO docs (id, body) VALUES (:id, :body) "
            + "ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body";
    private static final String UPSERT_CONTROL = "INSERT INTO docs (id, body) VALUES (?, ?) "
            + "ON CONFLICT (id) DO UPDATE SET body = EXCLUDED.body";

    private static String pgOne(String url, String sql, String param) throws Exception {
        try (Connection c = DriverManager.getConnection(url, PG_USER, null);
             java.sql.PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, param);
            try (java.sql.ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    private static void pg(String sql) throws Exception {
        try (Connection c = DriverManager.getConnection(PG, PG_USER, null); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    /**
     * The postgres backend, table fence mode, in a fresh schema of database {@code test}: {@code PUT /docs/{id...}}
     * upserts the body text into {@code docs} in one transaction with the fence. Read back with the JDBC reader;
     * the control runs the same upsert over JDBC with no fence (through the suite's HTTP shim, since the writers
     * speak HTTP).
     */
    @Test
    void postgresBackendPassesAndItsControlFails(@TempDir Path dir) throws Exception {
        inFreshSchema((schema, url) -> {
            pg("CREATE TABLE " + schema + ".docs (id text PRIMARY KEY, body text NOT NULL)");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: docs
                        match:
                          path: /docs/{id...}
                          methods: [PUT]
                        scope: docs/{id}
                        backend:
                          type: postgres
                          datasource:
                            url: "%s"
                            user: %s
                            statement-timeout: 5s
                          params:
                            id: path
                            body: {from: body-text}
                          statements:
                            PUT: "%s"
                    """.formatted(url, PG_USER, UPSERT_PROXY));
            Target target = target(dir, "postgres", "/docs/{key}", policy, """
                    read:
                      jdbc: "%s"
                      user: %s
                      sql: select body from docs where id = ?
                    control:
                      jdbc: "%s"
                      user: %s
                      sql: "%s"
                    """.formatted(url, PG_USER, url, PG_USER, UPSERT_CONTROL));
            Conformance.Result r = runConclusively(target, dir.resolve("work"));
            assertEveryScenarioPassedAndEveryControlCaught(r);
            // The storage itself, independently of the suite's reader: both runs' rows are there with the values
            // the suite read last; only the proxied key went through the fence (a stockade_fences row), the
            // control's did not.
            for (ScenarioResult s : r.scenarios()) {
                RunResult through = s.proxied();
                RunResult control = s.control();
                assertEquals(through.finalValue(), pgOne(url, "select body from docs where id = ?", through.key()));
                assertEquals(control.finalValue(), pgOne(url, "select body from docs where id = ?", control.key()));
                assertTrue(through.finalValue() != null && control.finalValue() != null, s.scenario().id());
                assertTrue(pgOne(url, "select token from stockade_fences where scope = ?", "docs/" + through.key())
                        != null, s.scenario().id() + ": the proxied writes must have gone through the fence");
                assertEquals(null, pgOne(url, "select token from stockade_fences where scope = ?",
                        "docs/" + control.key()), s.scenario().id() + ": the control must not touch the fence");
            }
        });
    }

    /**
     * The S3 backend (atomic: conditional PUTs with the token in the object's metadata) in front of a real S3 API
     * in-process ({@code org.gaul:s3proxy} over a transient blob store, SigV4 required). The writers sign their PUTs
     * with a client key of the policy ({@code auth: sigv4}, the proxy checks it); the bucket is read back with the
     * AWS SDK v2 and the upstream's own key; the control PUTs straight into the bucket, signed with that key.
     */
    @Test
    void s3BackendPassesEveryScenarioAndItsControlFails(@TempDir Path dir) throws Exception {
        org.jclouds.blobstore.BlobStoreContext blobs = org.jclouds.ContextBuilder.newBuilder("transient")
                .credentials("identity", "credential").build(org.jclouds.blobstore.BlobStoreContext.class);
        org.gaul.s3proxy.S3Proxy s3 = org.gaul.s3proxy.S3Proxy.builder()
                .blobStore(blobs.getBlobStore())
                .awsAuthentication(org.gaul.s3proxy.AuthenticationType.AWS_V4, "upstream-key", "upstream-secret")
                .endpoint(java.net.URI.create("http://127.0.0.1:0"))
                .build();
        s3.start();
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!s3.getState().equals("STARTED") && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            String endpoint = "http://127.0.0.1:" + s3.getPort();
            blobs.getBlobStore().createContainerInLocation(null, "conformance");
            Path policy = policy(dir, memoryStore(dir), """
                      - name: s3
                        match: {path: "/{path...}"}
                        scope: s3
                        backend:
                          type: s3
                          endpoint: %s
                          access-key: upstream-key
                          secret-key: upstream-secret
                          auth: sigv4
                          clients:
                            - {access-key: app-key, secret-key: app-secret}
                          timeout: 10s
                    """.formatted(endpoint));
            Target target = target(dir, "s3", "/conformance/{key}", policy, """
                      access-key: app-key
                      secret-key: app-secret
                    read:
                      s3: %s
                      bucket: conformance
                      access-key: upstream-key
                      secret-key: upstream-secret
                    control:
                      s3: %s
                      bucket: conformance
                      access-key: upstream-key
                      secret-key: upstream-secret
                    """.formatted(endpoint, endpoint));
            Conformance.Result r = runConclusively(target, dir.resolve("work"));
            assertEveryScenarioPassedAndEveryControlCaught(r);
            // The proxied objects carry the token in their metadata (the atomic class), the control's do not.
            for (ScenarioResult s : r.scenarios()) {
                var through = blobs.getBlobStore().blobMetadata("conformance", s.proxied().key());
                var control = blobs.getBlobStore().blobMetadata("conformance", s.control().key());
                assertTrue(through.getUserMetadata().containsKey("fencing-token"), s.scenario().id() + ": "
                        + through.getUserMetadata());
                assertFalse(control.getUserMetadata().containsKey("fencing-token"), s.scenario().id());
            }
        } finally {
            s3.stop();
            blobs.close();
        }
    }

    private static int freePort() {
        return io.stockade.testing.FreePorts.next();
    }

    /** A one-member etcd ({@code /usr/bin/etcd}, Debian etcd-server) on free loopback ports: command and client URL. */
    private static List<String> etcd(Path dataDir, int client) throws java.io.IOException {
        String c = "http://127.0.0.1:" + client;
        String p = "http://127.0.0.1:" + freePort();
        return List.of("/usr/bin/etcd", "--name", "conf", "--data-dir", dataDir.toString(),
                "--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
                "--initial-advertise-peer-urls", p, "--initial-cluster", "conf=" + p, "--initial-cluster-state", "new");
    }

    /**
     * The etcd fence store, launched by the suite (so {@code store-stop} can SIGSTOP it, kill -9 it and start it
     * again on the same data), behind the proxy's HTTP backend; the writers hold real leases from a second etcd (the
     * lock service: the client SDK's etcd provider, TTL 2 s, token = the lock key's create revision), so in
     * {@code pause} the zombie's lease really expires in etcd while it is stopped. The token cache is off, so the
     * zombie's write during the outage has to ask the stopped store (and be refused, 503).
     */
    @Test
    void etcdStoreSurvivesAStoreStopWithEtcdLeases(@TempDir Path dir) throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        int storePort = freePort();
        List<String> lockCmd = etcd(dir.resolve("locks-etcd"), freePort());
        String lockUrl = lockCmd.get(lockCmd.indexOf("--listen-client-urls") + 1);
        try (io.stockade.conformance.run.StoreProcess lockService = new io.stockade.conformance.run.StoreProcess(
                lockCmd, lockUrl.substring("http://".length()), dir.resolve("locks.log"))) {
            lockService.start(Duration.ofSeconds(30));
            httpBackendOn(dir, "http+etcd-store", """
                    store:
                      type: etcd
                      endpoints: [http://127.0.0.1:%d]
                      timeout: 1s
                      cache: {enabled: false}
                    """.formatted(storePort), """
                    store:
                      launch: %s
                      ready: 127.0.0.1:%d
                    lease:
                      provider: etcd
                      etcd: %s
                      ttl: 2s
                    """.formatted(yamlList(etcd(dir.resolve("store-etcd"), storePort)), storePort, lockUrl),
                    Scenario.PAUSE, Scenario.STORE_STOP);
        }
    }

    /**
     * The PostgreSQL fence store (a fresh schema of database {@code test}) behind the proxy's HTTP backend, the
     * writers holding leases from the client SDK's PostgreSQL provider ({@code stockade_leases}, expiry on the
     * database's clock) in the same schema: {@code pause} and {@code proxy-restart}.
     */
    @Test
    void postgresStoreWithPostgresLeases(@TempDir Path dir) throws Exception {
        inFreshSchema((schema, url) -> {
            Conformance.Result r = httpBackendOn(dir, "http+pg-store", """
                    store:
                      type: postgres
                      datasource:
                        url: "%s"
                        user: %s
                    """.formatted(url, PG_USER), """
                    lease:
                      provider: postgres
                      jdbc: "%s&user=%s"
                      ttl: 1s
                    """.formatted(url, PG_USER), Scenario.PAUSE, Scenario.PROXY_RESTART);
            for (ScenarioResult s : r.scenarios()) {   // the leases came from the table, with real tokens
                assertTrue(pgOne(url, "select token from stockade_leases where name = ?", s.proxied().key()) != null,
                        s.scenario().id());
            }
        });
    }
}
