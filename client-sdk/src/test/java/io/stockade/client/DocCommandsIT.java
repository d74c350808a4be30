package io.stockade.client;

import java.io.IOException;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.stockade.testing.FreePorts;
import io.stockade.testing.Http;
import io.stockade.testing.Jvm;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every command a doc prints runs as printed (issue 49: the README's own {@code java -jar} line failed). The fenced
 * shell blocks ({@code sh}, {@code bash}, {@code console}) of README.md and docs/*.md are read from the files; each
 * is either run by a test here, exactly as written (only the documented ports are moved to free ones, through the
 * options and variables the docs name), or listed in {@link #NOT_RUN} with the reason it cannot run here. A new
 * shell block fails {@link #everyShellBlockIsRunOrSaysWhyNot} until it is one or the other, and so does an
 * unlabelled block that holds commands (it must say {@code sh}).
 * <p>
 * The commands run in a sandbox: a directory whose entries are links to this clone's (the scripts, the built jars),
 * so that {@code ./stockade-data} is the sandbox's and a developer's own is left alone. Runs after the proxy's jar is
 * built (the reactor packages the proxy before this module's tests), like {@link ExamplesIT}.
 */
class DocCommandsIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    /** Blocks run by a test of this class: the block's key and the test. */
    static final Map<String, String> RUN = Map.of(
            "README.md: ./quickstart.sh      # run: builds if needed, then serves policies/examples/quickstart.yaml"
                    + " on 127.0.0.1:8080",
            "theReadmeSessionRunsAsPrinted (its first line; ./test.sh is the whole suite, which runs this test)",
            "README.md: $ curl -i -X PUT -H 'Fencing-Token: 5' --data 'v5' http://127.0.0.1:8080/files/report.txt",
            "theReadmeSessionRunsAsPrinted",
            "README.md: mvn -B -DskipTests package -pl policies,proxy -am",
            "theReadmesJavaJarCommandRunsAsPrinted (its java -jar line; the build that runs this test made the jar"
                    + " with this reactor, and ExampleFromACleanCloneIT builds from a clean clone)",
            "docs/s3.md: scripts/s3proxy.sh ./stockade-data/s3proxy &          # :9000, keys minioadmin/minioadmin,"
                    + " bucket reports",
            "theS3ByHandCommandsAndTheAwsCliSessionRunAsPrinted",
            "docs/s3.md: $ export AWS_ACCESS_KEY_ID=app AWS_SECRET_ACCESS_KEY=app-secret-change-me",
            "theS3ByHandCommandsAndTheAwsCliSessionRunAsPrinted");

    /** Blocks not run here, and why. */
    static final Map<String, String> NOT_RUN = notRun();

    private static Map<String, String> notRun() {
        Map<String, String> m = new LinkedHashMap<>();
        m.put("docs/benchmarks.md: ONE_STATEMENT=true JAR=<this build> DURATION=10s REPEATS=3 bench/postgres-wrk.sh"
                + "    # one statement", "a benchmark (figures need a quiet machine) naming builds of other commits");
        m.put("docs/benchmarks.md: PGBOUNCER=1 BASELINE_JAR=/tmp/pgb-base/proxy/target/stockade-proxy.jar"
                + " bench/postgres-ab.sh", "a benchmark against a baseline jar built from another commit");
        m.put("docs/benchmarks.md: bin/stockade build proxy                      # or JAR=path/to/stockade-proxy.jar"
                + " for another build", "a benchmark (bench/sql.sh: figures need a quiet machine; it was smoke-run"
                + " with DURATION=1s)");
        m.put("docs/admin-api.md: curl -X POST -H \"Authorization: Bearer $ADMIN\" -d '{\"scope\":\"docs/a\","
                + "\"token\":4,\"force\":true,", "needs a running proxy with an admin token and a forged scope;"
                + " FenceResetIT makes the same call, with and without force, against a real proxy");
        m.put("docs/conformance-runs.md: scripts/conformance-long.sh                                  # every"
                + " backend, 10 000 operations each", "10 000 operations per backend: about an hour;"
                + " ConformanceBackendsIT runs the same scenarios a few cycles each");
        m.put("docs/locks-guide.md: SID=$(curl -s -X PUT $CONSUL/v1/session/create \\", "needs a Consul server,"
                + " which cannot be installed here (ConsulLeaseIT runs the recipe against a stand-in of its API)");
        m.put("docs/locks-guide.md: aws dynamodb create-table --table-name stockade-locks --billing-mode"
                + " PAY_PER_REQUEST \\", "addresses AWS itself (the AWS CLI 2.9 here takes no endpoint from the"
                + " environment); DynamoLeaseIT runs the recipe against dynalite");
        m.put("docs/meaning-fuzz.md: mvn -o -B verify -pl proxy -am -Dtest=NONE -Dit.test='*MeaningFuzzIT'"
                + " -Dsurefire.failIfNoSpecifiedTests=false \\", "a nested Maven build and 10 000 tries a property"
                + " (minutes); CI runs the fuzzers with fewer tries");
        m.put("docs/operations.md: mvn -B verify -pl proxy -am -Dtest=NONE -Dit.test=HostileLoadIT"
                + " -Dsoak.seconds=180 \\", "a nested Maven build and a 180 s soak; CI runs HostileLoadIT for 20 s");
        m.put("docs/s3.md: aws --endpoint-url http://127.0.0.1:8080 s3 cp report.csv s3://reports/2026/report.csv"
                + " --metadata fencing-token=7", "needs a policy with token-from-metadata: true, which the example"
                + " leaves off; S3CliIT runs both commands against one");
        m.put("docs/s3.md: export PYTHONPATH=/opt/stockade/client-sdk/python", "S3CliDocIT runs it, read from this"
                + " file, with the AWS CLI v1 through the proxy");
        m.put("docs/s3.md: FENCING_TOKEN=7 aws --endpoint-url http://127.0.0.1:8080 s3 sync ./out"
                + " s3://reports/2026/ --delete", "needs etcd on :2379 beside the S3 example; S3JobZombieIT runs"
                + " this job (lease run around aws s3 sync) and its zombie");
        m.put("docs/s3.md: ./quickstart.sh --example s3", "ExampleFromACleanCloneIT runs it, from a clean clone");
        m.put("docs/s3.md: S3_ENDPOINT=https://s3.eu-west-1.amazonaws.com S3_REGION=eu-west-1 S3_ACCESS_KEY=..."
                + " S3_SECRET_KEY=... \\", "needs an AWS account; the same java -jar line runs in"
                + " theReadmesJavaJarCommandRunsAsPrinted");
        return m;
    }

    @TempDir
    Path dir;

    @Test
    void everyShellBlockIsRunOrSaysWhyNot() throws Exception {
        List<DocBlocks.Block> blocks = DocBlocks.of(ROOT, DocBlocks.docs(ROOT));
        List<String> unclassified = new ArrayList<>();
        Set<String> seen = new TreeSet<>();
        for (DocBlocks.Block b : blocks) {
            if (b.unlabelledCommands()) {
                unclassified.add(b.file() + ":" + b.line() + " holds commands but says no language: write ```sh");
            }
            if (b.shell()) {
                seen.add(b.key());
                if (!RUN.containsKey(b.key()) && !NOT_RUN.containsKey(b.key())) {
                    unclassified.add(b.file() + ":" + b.line() + " is neither run by DocCommandsIT nor listed in its"
                            + " NOT_RUN with a reason: " + b.key());
                }
            }
        }
        assertEquals(List.of(), unclassified);
        Set<String> stale = new TreeSet<>(RUN.keySet());
        stale.addAll(NOT_RUN.keySet());
        stale.removeAll(seen);
        assertEquals(Set.of(), stale, "classified blocks no doc has any more");
    }

    /** The README's quickstart, started as printed, and its curl session compared with what it prints. */
    @Test
    void theReadmeSessionRunsAsPrinted() throws Exception {
        Path sandbox = sandbox();
        String start = block("README.md: ./quickstart.sh").lineStarting("./quickstart.sh").split("#")[0].strip();
        int port = FreePorts.next();
        // the quickstart's policy listens on 8080; the script passes extra arguments to the proxy (its header says so)
        try (Running proxy = Running.start(sandbox, start + " --port " + port, "Stockade listening")) {
            List<DocBlocks.Step> steps = DocBlocks.session(block("README.md: $ curl -i -X PUT"));
            assertEquals(5, steps.size(), steps.toString());
            for (DocBlocks.Step step : steps) {
                // what a terminal shows: curl's standard output (its progress meter, on standard error, shows only
                // when the output is not a terminal)
                String said = shell(sandbox, Map.of(), step.command().replace("127.0.0.1:8080", "127.0.0.1:" + port)
                        + " 2>/dev/null");
                // the README says which headers it trims: Date, Content-Length and Connection
                String shown = said.replace("\r", "").lines()
                        .filter(l -> !l.startsWith("Date: ") && !l.startsWith("Content-Length: ")
                                && !l.startsWith("Connection: "))
                        .reduce("", (a, l) -> a + l + "\n").stripTrailing();
                assertEquals(step.output(), shown, "README.md: $ " + step.command());
            }
            proxy.stop();
            assertTrue(Files.exists(sandbox.resolve("stockade-data/journal/clean-shutdown")),
                    "the quickstart keeps its journal in ./stockade-data and stopped cleanly");
        }
    }

    /**
     * The README's {@code java -jar} line, as printed, on a JDK 21+ found first on the PATH: the policy file is the
     * quickstart's copied to {@code my-policies.yaml}, the optional {@code [--port N] [--management-port N]} given
     * free ports. No {@code -XX:+ExitOnOutOfMemoryError}: on loopback the proxy warns and starts.
     */
    @Test
    void theReadmesJavaJarCommandRunsAsPrinted() throws Exception {
        Path sandbox = sandbox();
        Files.copy(ROOT.resolve("policies/examples/quickstart.yaml"), sandbox.resolve("my-policies.yaml"));
        String line = block("README.md: mvn -B -DskipTests package").lineStarting("java -jar ");
        int port = FreePorts.next();
        int management = FreePorts.next();
        String command = line.replace("[--port N]", "--port " + port)
                .replace("[--management-port N]", "--management-port " + management);
        assertFalse(command.contains("["), command);
        try (Running proxy = Running.start(sandbox, command, "Stockade listening")) {
            assertEquals(200, Http.get(URI.create("http://127.0.0.1:" + port + "/health/ready")).status());
            assertEquals(200, Http.get(URI.create("http://127.0.0.1:" + management + "/metrics")).status());
            assertTrue(proxy.err().contains("warning: the JVM was started without -XX:+ExitOnOutOfMemoryError")
                    && proxy.err().contains("loopback only"), proxy.err());
        }
    }

    /**
     * docs/s3.md, *Running*: the three commands "by hand" (s3proxy, the build, the proxy), then the AWS CLI session
     * with the hook configured as the doc's v2 block says (Debian's AWS CLI is v2), each line's output compared with
     * the printed one (the doc wraps long lines: compared with white space collapsed). The ports move through the
     * variables the scripts and the example name: S3PROXY_PORT, S3_ENDPOINT, STOCKADE_PORT.
     */
    @Test
    void theS3ByHandCommandsAndTheAwsCliSessionRunAsPrinted() throws Exception {
        Tools.require(Tools.Tool.AWS_CLI);  // an aws on the PATH: Debian's (v2), or v1 where one comes first
        Path sandbox = sandbox();
        int store = FreePorts.next();
        int port = FreePorts.next();
        Map<String, String> env = Map.of("S3PROXY_PORT", Integer.toString(store),
                "S3_ENDPOINT", "http://127.0.0.1:" + store, "STOCKADE_PORT", Integer.toString(port));
        List<String> commands = block("docs/s3.md: scripts/s3proxy.sh").text().lines()
                .map(l -> l.split("#")[0].strip()).filter(l -> !l.isEmpty()).toList();
        assertEquals(3, commands.size(), commands.toString());
        assertTrue(commands.get(0).endsWith("&") && commands.get(2).endsWith("&"), commands.toString());
        try (Running s3proxy = Running.start(sandbox, env, strip(commands.get(0)), "stockade: s3proxy on ")) {
            assertEquals("", shell(sandbox, env, commands.get(1)).replaceAll("(?m)^stockade: Java .*\n", ""));
            try (Running proxy = Running.start(sandbox, env, strip(commands.get(2)), "Stockade listening")) {
                // the hook configured as the doc says for the AWS CLI on the PATH: v1's block and PYTHONPATH, or v2's
                boolean v1 = shell(sandbox, Map.of(), "aws --version").startsWith("aws-cli/1.");
                Path config = sandbox.resolve("aws-config");
                Files.writeString(config, "[default]\nregion = us-east-1\ns3 =\n  addressing_style = path\n"
                        + plugins(v1).replace("/opt/stockade", ROOT.toString()));
                Files.writeString(sandbox.resolve("report.csv"), "a,b\n1,2\n");
                Map<String, String> aws = new LinkedHashMap<>(env);
                aws.put("AWS_CONFIG_FILE", config.toString());
                aws.put("AWS_SHARED_CREDENTIALS_FILE", sandbox.resolve("no-credentials").toString());
                aws.put("AWS_EC2_METADATA_DISABLED", "true");
                aws.put("AWS_PAGER", "");
                if (v1) {
                    String export = block("docs/s3.md: export PYTHONPATH=").lineStarting("export PYTHONPATH=");
                    aws.put("PYTHONPATH", export.substring("export PYTHONPATH=".length()).strip()
                            .replace("/opt/stockade", ROOT.toString()));
                }
                // one shell for the whole session, as a user types it (the export holds for the lines after it);
                // each command's output ends with a mark, so that it can be compared with the printed one
                List<DocBlocks.Step> steps = DocBlocks.session(block("docs/s3.md: $ export AWS_ACCESS_KEY_ID="));
                StringBuilder script = new StringBuilder();
                for (DocBlocks.Step step : steps) {
                    script.append(step.command().replace("127.0.0.1:8080", "127.0.0.1:" + port))
                            .append(" 2>&1; printf '\\n\\001\\n'\n");
                }
                awaitPort(store);
                String[] said = terminal(shell(sandbox, aws, script.toString())).split("\u0001", -1);
                assertEquals(steps.size() + 1, said.length, String.join("|", said));
                for (int i = 0; i < steps.size(); i++) {
                    assertEquals(words(steps.get(i).output()), words(said[i]),
                            "docs/s3.md: $ " + steps.get(i).command());
                }
            }
        }
    }

    /** Waits up to 60 s for something to accept connections on a loopback port. */
    private static void awaitPort(int port) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Socket s = new Socket("127.0.0.1", port)) {
                return;
            } catch (IOException e) {
                assertTrue(System.nanoTime() < deadline, "nothing listens on " + port);
                Thread.sleep(50);
            }
        }
    }

    /** The doc's {@code [plugins]} block for the AWS CLI v1 (without {@code cli_legacy_plugin_path}) or v2. */
    private static String plugins(boolean v1) throws IOException {
        List<DocBlocks.Block> found = DocBlocks.of(ROOT, List.of(ROOT.resolve("docs/s3.md"))).stream()
                .filter(b -> b.language().equals("ini") && b.text().startsWith("[plugins]")
                        && b.text().contains("cli_legacy_plugin_path") != v1).toList();
        assertEquals(1, found.size(), found.toString());
        return found.getFirst().text();
    }

    /** What a terminal shows of an output: of a line rewritten after a carriage return (a progress line), the last. */
    private static String terminal(String output) {
        // not String.lines(), which ends a line at a carriage return too
        return Stream.of(output.split("\n", -1)).map(l -> l.substring(l.lastIndexOf('\r') + 1))
                .reduce("", (a, l) -> a + l + "\n");
    }

    private static String words(String text) {
        return String.join(" ", text.strip().split("\\s+"));
    }

    /** A command without its trailing {@code &}: {@link Running} runs it in the background. */
    private static String strip(String command) {
        return command.substring(0, command.length() - 1).strip();
    }

    /** The one shell block whose key starts so. */
    private static DocBlocks.Block block(String keyPrefix) throws IOException {
        List<DocBlocks.Block> found = DocBlocks.of(ROOT, DocBlocks.docs(ROOT)).stream()
                .filter(b -> b.shell() && b.key().startsWith(keyPrefix)).toList();
        assertEquals(1, found.size(), keyPrefix + ": " + found);
        return found.getFirst();
    }

    /** A directory of links to this clone's entries, without its ./stockade-data. */
    private Path sandbox() throws IOException {
        Path sandbox = Files.createDirectories(dir.resolve("clone"));
        try (Stream<Path> entries = Files.list(ROOT)) {
            for (Path entry : entries.toList()) {
                String name = entry.getFileName().toString();
                if (!name.equals("stockade-data") && !name.equals(".git") && !name.equals("target")) {
                    Files.createSymbolicLink(sandbox.resolve(name), entry);
                }
            }
        }
        return sandbox;
    }

    /** A command line run by bash in {@code cwd} with a JDK 21+ first on the PATH; stdout and stderr, merged. */
    static String shell(Path cwd, Map<String, String> env, String command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).directory(cwd.toFile()).redirectErrorStream(true);
        environment(pb, env);
        Process p = pb.start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), command);
        return out;
    }

    private static void environment(ProcessBuilder pb, Map<String, String> env) {
        Map<String, String> e = pb.environment();
        e.keySet().removeIf(k -> k.startsWith("AWS_") || k.equals("FENCING_TOKEN") || k.equals("STOCKADE_PORT"));
        Path jdk = Path.of(Jvm.binary()).getParent();
        e.put("PATH", jdk + ":" + e.getOrDefault("PATH", "/usr/bin:/bin"));
        e.put("JAVA_HOME", jdk.getParent().toString());
        // the JVMs bin/stockade and scripts/s3proxy.sh start on C1 and the serial collector, as every child JVM of the
        // tests (test-tools' Jvm): the commands stay as printed (measured 2026-12-06: a proxy start 2.4 -> 1.7 s of
        // CPU, s3proxy's 3.3 -> 2.2 s)
        e.put("STOCKADE_JAVA_OPTS", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC");
        e.putAll(env);
    }

    /** A command started in the background, waited for until a line of its output contains a text. */
    record Running(Process process, Path out, Path errFile) implements AutoCloseable {
        static Running start(Path cwd, String command, String ready) throws Exception {
            return start(cwd, Map.of(), command, ready);
        }

        static Running start(Path cwd, Map<String, String> env, String command, String ready) throws Exception {
            Path out = Files.createTempFile(cwd.getParent(), "out", ".txt");
            Path err = Files.createTempFile(cwd.getParent(), "err", ".txt");
            // exec: the process is the command itself, so that SIGTERM reaches it (and its own trap or hook)
            ProcessBuilder pb = new ProcessBuilder("bash", "-c", "exec " + command).directory(cwd.toFile())
                    .redirectOutput(out.toFile()).redirectError(err.toFile());
            environment(pb, env);
            Running r = new Running(pb.start(), out, err);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (!(Files.readString(out) + Files.readString(err)).contains(ready)) {
                if (!r.process.isAlive() || System.nanoTime() > deadline) {
                    r.close();
                    throw new AssertionError("'" + command + "' did not print '" + ready + "':\n"
                            + Files.readString(out) + Files.readString(err));
                }
                Thread.sleep(50);
            }
            return r;
        }

        String err() throws IOException {
            return Files.readString(errFile);
        }

        /** SIGTERM, and the process ends within 30 s. */
        void stop() throws Exception {
            process.destroy();
            assertTrue(process.waitFor(30, TimeUnit.SECONDS), "did not stop on SIGTERM");
        }

        @Override
        public void close() throws Exception {
            if (process.isAlive()) {
                process.destroy();
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            }
        }
    }
}
