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

import io.stockade.conformance.storage.PlainHttpStore;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the conformance ITs share: each case writes the proxy's policy file and the target file with the helpers
 * below ({@link #policy}, {@link #target}) and states only what differs; {@link #runConclusively} runs its scenarios
 * and {@link #assertEveryScenarioPassedAndEveryControlCaught} asserts what every case must show.
 */
final class ConformanceCases {
    private ConformanceCases() {
    }

    /** Every scenario but {@code store-stop} (which needs a store the suite launches). */
    static final Scenario[] WITHOUT_STORE = Arrays.stream(Scenario.values())
            .filter(s -> s != Scenario.STORE_STOP).toArray(Scenario[]::new);

    /** {@code applicable}, narrowed by {@code -Dconformance.scenarios} (a test none of whose scenarios is asked
     *  for runs nothing). */
    static List<Scenario> scenarios(Scenario... applicable) {
        String s = System.getProperty("conformance.scenarios");
        List<Scenario> asked = s == null || s.isBlank() ? List.of(applicable)
                : Arrays.stream(s.split(",")).map(Scenario::parse).toList();
        return Arrays.stream(applicable).filter(asked::contains).toList();
    }

    static List<String> launch(Path policy) {
        String java = ProcessHandle.current().info().command().orElse("java");
        // C1 alone, as test-tools' Jvm starts every child: a proxy that lives for one case starts on half the CPU
        return List.of(java, "-XX:+ExitOnOutOfMemoryError", "-XX:TieredStopAtLevel=1", "-cp",
                System.getProperty("java.class.path"),
                "io.stockade.proxy.Main",
                "--config", policy.toString());
    }

    static String yamlList(List<String> items) {
        StringBuilder b = new StringBuilder("[");
        for (String i : items) {
            b.append(b.length() > 1 ? ", " : "").append('"').append(i.replace("\\", "\\\\").replace("\"", "\\\""))
                    .append('"');
        }
        return b.append(']').toString();
    }

    /**
     * Runs the scenarios; one that comes out INCONCLUSIVE (its paired control saw no stale write land, so the run
     * proved nothing either way) is run again, at most four times; so is one that passed without the refusal the
     * assertions ask for (see below). A FAIL is never re-run, and the verdict of the last
     * attempt is the one asserted: a scenario passes only in a run whose control caught a stale write.
     */
    static final int MAX_ATTEMPTS = 5;

    static Conformance.Result runConclusively(Target target, Path work, Scenario... applicable)
            throws Exception {
        return runConclusively(target, work, Duration.ofSeconds(1), applicable);
    }

    /** As {@link #runConclusively(Target, Path, Scenario...)}, each run's fault budget {@code duration}. */
    static Conformance.Result runConclusively(Target target, Path work, Duration duration, Scenario... applicable)
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
                    .duration(duration).workDir(work.resolve("attempt-" + attempt)).run();
            for (ScenarioResult s : r.scenarios()) {
                if (s.verdict() == Verdict.INCONCLUSIVE && attempt < MAX_ATTEMPTS) {
                    System.out.println("attempt " + attempt + ": " + s.scenario().id() + " inconclusive, run again"
                            + io.stockade.conformance.report.Reports.details(List.of(s)));
                    continue;
                }
                if (s.verdict() == Verdict.PASS && !zombieRefused(s) && attempt < MAX_ATTEMPTS) {
                    // The suite counts a fault effective when the faulted holder's write ended after a newer
                    // token's acknowledged write; a write already on its way when SIGSTOP landed (late, on a
                    // saturated machine) ends after the handoff though the proxy took it before: PASS, but no stale
                    // write met the proxy. Seen once in CI (2026-12-02, http+etcd-store pause); such a run proves
                    // nothing the assertions below ask for: run again, as an inconclusive one.
                    System.out.println("attempt " + attempt + ": " + s.scenario().id()
                            + " passed, but no stale write reached the proxy, run again");
                    continue;
                }
                settled.add(s);
                todo.remove(s.scenario());
            }
        }
        return new Conformance.Result(target, settled);
    }

    /**
     * Did the proxy refuse as the assertions below require: a write with 503 during the outage in {@code store-stop},
     * the zombie's write with 409 (S3: 412) elsewhere; {@code timeout} needs none (the zombie hears nothing there).
     */
    static boolean zombieRefused(ScenarioResult s) {
        if (s.scenario() == Scenario.TIMEOUT) {
            return true;
        }
        return s.proxied().history().ops().stream().anyMatch(o -> s.scenario() == Scenario.STORE_STOP
                ? o.status() == 503 : o.status() == 409 || o.status() == 412);
    }

    static void assertEveryScenarioPassedAndEveryControlCaught(Conformance.Result r) {
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
            // store-stop fails closed (503: the store was down, the write not forwarded); elsewhere 409 (S3: 412)
            assertTrue(zombieRefused(s), s.scenario().id() + (s.scenario() == Scenario.STORE_STOP
                    ? ": the proxy must have refused a write with 503 during the outage"
                    : ": the proxy must have refused the zombie's write with 409/412"));
        }
    }

    // ------------------------------------------------------------------ the files each case writes

    /** {@code dir/stockade.yaml}: a proxy on port 0 with this {@code store:} block and these policies (list items). */
    static Path policy(Path dir, String store, String policies) throws IOException {
        Path policy = dir.resolve("stockade.yaml");
        Files.writeString(policy, "server:\n  port: 0\n" + store + "policies:\n" + policies);
        return policy;
    }

    /** The in-memory fence store with its journal under {@code dir} (survives the proxy's kill -9). */
    static String memoryStore(Path dir) {
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
    static String httpPolicy(URI upstream) {
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
    static Target target(Path dir, String name, String proxyPath, Path policy, String rest)
            throws IOException {
        Path target = dir.resolve("target.yaml");
        Files.writeString(target, "name: " + name + "\nproxy:\n  path: " + proxyPath + "\n  launch: "
                + yamlList(launch(policy)) + "\n" + rest);
        return Target.load(target);
    }

    /** Read back with a GET on the upstream, the control PUTs on it: {@code read:} and {@code control:}. */
    static String readAndControlOn(URI upstream) {
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
    static Conformance.Result httpBackendOn(Path dir, String name, String store, String moreTarget,
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
    interface InSchema {
        void run(String schema, String url) throws Exception;
    }

    static void inFreshSchema(InSchema body) throws Exception {
        String schema = "conf_" + Long.toHexString(ThreadLocalRandom.current().nextLong() & Long.MAX_VALUE);
        pg("CREATE SCHEMA " + schema);
        try {
            body.run(schema, PG + "?currentSchema=" + schema);
        } finally {
            pg("DROP SCHEMA " + schema + " CASCADE");
        }
    }

    // ------------------------------------------------------------------ the cases

    /** The file backend over {@code dir/files} on the memory store, read and controlled on that directory. */
    static Target fileTarget(Path dir) throws IOException {
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

    /** The shared CI database (trust auth); {@code -Dconformance.pg=jdbc:postgresql://host:port/db} overrides it. */
    static final String PG = System.getProperty("conformance.pg", "jdbc:postgresql://127.0.0.1:5432/test");
    static final String PG_USER = System.getProperty("conformance.pg.user", "postgres");

    static String pgOne(String url, String sql, String param) throws Exception {
        try (Connection c = DriverManager.getConnection(url, PG_USER, null);
             java.sql.PreparedStatement st = c.prepareStatement(sql)) {
            st.setString(1, param);
            try (java.sql.ResultSet rs = st.executeQuery()) {
                return rs.next() ? rs.getString(1) : null;
            }
        }
    }

    static void pg(String sql) throws Exception {
        try (Connection c = DriverManager.getConnection(PG, PG_USER, null); Statement s = c.createStatement()) {
            s.execute(sql);
        }
    }

    static int freePort() {
        return io.stockade.testing.FreePorts.next();
    }

    /** A one-member etcd ({@code /usr/bin/etcd}, Debian etcd-server) on free loopback ports: command and client URL. */
    static List<String> etcd(Path dataDir, int client) throws java.io.IOException {
        String c = "http://127.0.0.1:" + client;
        String p = "http://127.0.0.1:" + freePort();
        return List.of("/usr/bin/etcd", "--name", "conf", "--data-dir", dataDir.toString(),
                "--listen-client-urls", c, "--advertise-client-urls", c, "--listen-peer-urls", p,
                "--initial-advertise-peer-urls", p, "--initial-cluster", "conf=" + p, "--initial-cluster-state", "new");
    }
}
