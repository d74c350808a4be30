package io.stockade.client;

import java.io.IOException;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./quickstart.sh --example NAME} as a user runs it: the example starts with what it needs, the session it
 * prints behaves as printed (driven with curl), and SIGTERM stops the proxy and everything the script started (their
 * ports are closed). Runs after the proxy's jar is built (the reactor packages the proxy before this module's tests).
 * The examples keep their data under the repository's ./stockade-data/EXAMPLE/, as documented; a test run removes
 * what it made there.
 */
class ExamplesIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    /** A running example: its process, the proxy's base URL and the lines it printed. */
    record Running(Process process, URI proxy, List<String> printed) {
    }

    private Running start(String example, String... env) throws Exception {
        return start(dir, ROOT, 120, example, env);
    }

    /**
     * {@code ROOT/quickstart.sh --example EXAMPLE} run in {@code dir}, started within {@code seconds} (a first build
     * included). Its JVMs (the proxies, the small HTTP store) on C1 and the serial collector, as every child JVM of
     * the tests (test-tools' {@code Jvm}), through the {@code STOCKADE_JAVA_OPTS} the example honours: ~0.7 s of CPU
     * less a JVM (measured 2026-12-06: a proxy start 2.4 → 1.7 s, the store's 2.2 → 1.5 s).
     */
    static Running start(Path dir, Path root, int seconds, String example, String... env) throws Exception {
        Path out = Files.createTempFile(dir, example, ".out");
        ProcessBuilder pb = new ProcessBuilder(root.resolve("quickstart.sh").toString(), "--example", example)
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(out.toFile());
        pb.environment().put("STOCKADE_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC");
        for (int i = 0; i < env.length; i += 2) {
            pb.environment().put(env[i], env[i + 1]);
        }
        Process p = pb.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (true) {
            List<String> lines = Files.readAllLines(out);
            if (lines.contains("(Ctrl-C stops the proxy and what this script started)")) {
                String url = lines.stream().filter(l -> l.startsWith("proxy: ")).findFirst().orElseThrow()
                        .substring("proxy: ".length());
                return new Running(p, URI.create(url), lines);
            }
            assertTrue(p.isAlive() && System.nanoTime() < deadline, example + " did not start: " + lines);
            Thread.sleep(100);
        }
    }

    /** SIGTERM to the script: it ends, and so does every process it started (their ports no longer listen). */
    static void stop(Running r, int... ports) throws Exception {
        r.process().destroy();
        assertTrue(r.process().waitFor(30, TimeUnit.SECONDS), "the example did not stop");
        for (int port : ports) {
            assertFalse(listening(port), "port " + port + " still listens after the example stopped");
        }
    }

    private static boolean listening(int port) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", port), 1000);
            return true;
        } catch (ConnectException e) {
            return false;
        } catch (IOException e) {
            return false;
        }
    }

    private static int upstreamPort(String example) throws IOException {
        String log = Files.readString(ROOT.resolve("stockade-data").resolve(example).resolve("upstream.log"));
        return URI.create(log.lines().filter(l -> l.startsWith("example-upstream listening on "))
                .findFirst().orElseThrow().substring("example-upstream listening on ".length())).getPort();
    }

    private static void forget(String example) throws IOException {
        Path data = ROOT.resolve("stockade-data").resolve(example);
        if (Files.exists(data)) {
            try (var walk = Files.walk(data)) {
                walk.sorted(java.util.Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
            }
        }
    }

    /**
     * The session, run twice: each run starts from a clean state of its own (the script empties the example's data
     * directory, whose journal would otherwise remember the first run's token 5 while the new stores, in memory,
     * remember nothing: the second run's first write answered 409), so both runs give the same answers.
     */
    @Test
    void httpUpstreamBehavesAsItsSessionSaysEveryRun() throws Exception {
        forget("http-upstream");
        try {
            List<String> first = httpUpstreamSession();
            assertEquals(List.of("201", "409", "v5", "201"), first);
            assertEquals(first, httpUpstreamSession(), "a second run gives the first run's answers");
        } finally {
            forget("http-upstream");
        }
    }

    private List<String> httpUpstreamSession() throws Exception {
        Running r = start("http-upstream");
        assertTrue(r.printed().stream().anyMatch(l -> l.contains("emptied at start")), r.printed().toString());
        int upstream = upstreamPort("http-upstream");
        try {
            String objects = r.proxy().resolve("/objects/b/report.txt").toString();
            return List.of(Curl.status("-X", "PUT", "-H", "Fencing-Token: 5", "--data", "v5", objects),
                    Curl.status("-X", "PUT", "-H", "Fencing-Token: 4", "--data", "v4", objects),
                    Curl.get(URI.create(objects)),
                    // serialized: open at once on a new journal (each run's is), as the session says
                    Curl.status("-X", "PUT", "-H", "Fencing-Token: 7", "--data", "d",
                            r.proxy().resolve("/docs/acme/plan.md").toString()));
        } finally {
            stop(r, r.proxy().getPort(), upstream);
        }
    }

    @Test
    void observeForwardsAStaleWriteAndCountsIt() throws Exception {
        forget("observe");
        Running r = start("observe");
        int upstream = upstreamPort("observe");
        try {
            String report = r.proxy().resolve("/reports/q3").toString();
            assertEquals("201", Curl.status("-X", "PUT", "-H", "Fencing-Token: 5", "--data", "v5", report));
            assertEquals("204", Curl.status("-X", "PUT", "-H", "Fencing-Token: 4", "--data", "v4", report));
            assertEquals("v4", Curl.get(URI.create(report)), "observe mode forwards what enforce would refuse");
            assertTrue(Curl.get(r.proxy().resolve("/metrics")).lines()
                    .anyMatch(l -> l.contains("would_reject") && !l.startsWith("#") && !l.endsWith(" 0.0")),
                    "the stale write is counted");
        } finally {
            stop(r, r.proxy().getPort(), upstream);
            forget("observe");
        }
    }

    /** Issue 49: {@code ./quickstart.sh --help} showed the proxy's usage, not the script's own options. */
    @Test
    void quickstartHelpNamesItsOwnOptions() throws Exception {
        Process p = new ProcessBuilder(ROOT.resolve("quickstart.sh").toString(), "--help").redirectErrorStream(true)
                .start();
        String said = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(30, TimeUnit.SECONDS));
        assertEquals(0, p.exitValue(), said);
        assertTrue(said.startsWith("usage: ./quickstart.sh [--fresh]") && said.contains("--example NAME")
                && said.contains("replicas") && said.contains("--port 9090"), said);
        assertFalse(said.contains("stockade-proxy --config"), "not the proxy's usage: " + said);
    }

    @Test
    void twoReplicasShareOneFenceInEtcd() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        forget("replicas");
        Running r = start("replicas");
        URI second = URI.create(r.printed().stream().filter(l -> l.startsWith("# replica 2: ")).findFirst()
                .orElseThrow().substring("# replica 2: ".length()).split(" ")[0]);
        int upstream = upstreamPort("replicas");
        try {
            // issue 49: the slow examples were silent while they started; each step is said as it begins
            for (String step : List.of("example: starting etcd on ", "example: starting a small HTTP store",
                    "example: starting replica 2 on ", "example: starting the proxy on ")) {
                assertTrue(r.printed().stream().anyMatch(l -> l.startsWith(step)), step + " in " + r.printed());
            }
            assertEquals("201", Curl.status("-X", "PUT", "-H", "Fencing-Token: 5", "--data", "v5",
                    r.proxy().resolve("/objects/b/report.txt").toString()));
            assertEquals("409", Curl.status("-X", "PUT", "-H", "Fencing-Token: 4", "--data", "v4",
                    second.resolve("/objects/b/report.txt").toString()), "the second replica knows token 5");
            assertEquals("v5", Curl.get(second.resolve("/objects/b/report.txt")));
        } finally {
            stop(r, r.proxy().getPort(), second.getPort(), upstream);
            forget("replicas");
        }
    }

    @Test
    void postgresRunsItsSessionOnAFreshDatabase() throws Exception {
        forget("postgres");
        String db = "stockade_example_" + Long.toString(System.nanoTime(), 36);
        Running r = start("postgres", "PGDATABASE", db);
        try {
            String balance = r.proxy().resolve("/accounts/acc-1/balance").toString();
            assertEquals("200", Curl.status("-X", "PUT", "-H", "Fencing-Token: 42", "-d", "{\"balance\": 120.50}",
                    balance));
            assertEquals("409", Curl.status("-X", "PUT", "-H", "Fencing-Token: 41", "-d", "{\"balance\": 1}", balance));
            assertTrue(Curl.get(r.proxy().resolve("/accounts/acc-1")).contains("120.5"), "the row holds the write");
            assertEquals("404", Curl.status(r.proxy().resolve("/accounts/nobody").toString()));
        } finally {
            stop(r, r.proxy().getPort());
            forget("postgres");
            new ProcessBuilder("psql", "-q", "-h", "127.0.0.1", "-U", "postgres", "-d", "postgres", "-c",
                    "DROP DATABASE IF EXISTS " + db).inheritIO().start().waitFor(30, TimeUnit.SECONDS);
        }
    }

    /**
     * {@code ./quickstart.sh --example sql}: the PostgreSQL listener in front of the machine's PostgreSQL, its session
     * of psql commands replayed as printed (each answer starts with what its comment says), on a database the example
     * made afresh: one left from an earlier run, with a fence row that would make token 7 stale, is gone.
     */
    @Test
    void sqlReplaysItsPsqlSessionOnADatabaseMadeAfresh() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.PSQL);
        forget("sql");
        String db = "stockade_sql_example_" + Long.toString(System.nanoTime(), 36);
        shell("psql -q -h 127.0.0.1 -U postgres -d postgres -c 'CREATE DATABASE " + db + "' && psql -q -h 127.0.0.1"
                + " -U postgres -d " + db + " -c 'CREATE TABLE left_over (scope text, token bigint); INSERT INTO"
                + " left_over VALUES ($$jobs/1$$, 9)'");
        Running r = start("sql", "STOCKADE_SQL_DATABASE", db);
        int listener = URI.create(r.printed().stream().filter(l -> l.startsWith("# SQL listener: ")).findFirst()
                .orElseThrow().substring("# SQL listener: ".length()).split(" ")[0]).getPort();
        try {
            List<String> session = r.printed().stream().filter(l -> l.startsWith("psql ")).toList();
            assertEquals(3, session.size(), r.printed().toString());
            List<String> answers = new ArrayList<>();
            for (String line : session) {
                int comment = line.lastIndexOf(" # ");
                String expected = line.substring(comment + 3).strip();
                String answer = shell(line.substring(0, comment).strip());
                assertTrue(answer.startsWith(expected), line + "\n" + answer);
                answers.add(expected);
            }
            assertEquals(List.of("UPDATE 1", "ERROR:  stockade: stale fencing token 6", "done by 7"), answers);
            String psql = "psql -h 127.0.0.1 -U postgres -d " + db + " -tA -c ";
            assertEquals("7", shell(psql + "\"SELECT token FROM stockade.stockade_fences WHERE scope = 'jobs/1'\"")
                    .strip(), "the fence row, in the database");
            assertEquals("", shell(psql + "\"SELECT to_regclass('left_over')\"").strip(), "the database is new");
        } finally {
            stop(r, r.proxy().getPort(), listener);
            forget("sql");
            shell("psql -q -h 127.0.0.1 -U postgres -d postgres -c 'DROP DATABASE IF EXISTS " + db
                    + " WITH (FORCE)'");
        }
    }

    /** Runs a command line with bash; what it printed, standard output and error together, whatever its exit. */
    private String shell(String command) throws Exception {
        Process p = new ProcessBuilder("bash", "-c", command).directory(dir.toFile()).redirectErrorStream(true)
                .start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), command + " did not end");
        return out;
    }
}
