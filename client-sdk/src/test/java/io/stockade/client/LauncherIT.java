package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.EtcdServer;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code bin/stockade}, the one launcher, as a user runs it: the proxy (on an etcd fence store, whose client
 * brings Netty: no {@code sun.misc.Unsafe} warnings), the offline {@code fence} command beside it, and the message
 * for a machine without a JDK 21+. Runs after the proxy's jar is built (the reactor packages the proxy before this
 * module's tests), so the launcher finds it up to date and builds nothing; {@code bin/stockade lease} is not run
 * here, since this module's own jar is not packaged yet when its tests run (LeaseCommandTest covers its help).
 */
class LauncherIT {
    private static final Path LAUNCHER = Path.of("..", "bin", "stockade").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    record Run(int code, String out, String err) {
    }

    private Run run(Map<String, String> env, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of(LAUNCHER.toString()));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile())
                .redirectOutput(dir.resolve("out").toFile()).redirectError(dir.resolve("err").toFile());
        pb.environment().putAll(env);
        Process p = pb.start();
        assertTrue(p.waitFor(120, TimeUnit.SECONDS), "the launcher did not end");
        return new Run(p.exitValue(), Files.readString(dir.resolve("out")), Files.readString(dir.resolve("err")));
    }

    @Test
    void helpAndAnUnknownCommand() throws Exception {
        Run help = run(Map.of(), "help");
        assertEquals(0, help.code(), help.err());
        assertTrue(help.out().contains("bin/stockade fence --config FILE"), help.out());
        Run unknown = run(Map.of(), "frobnicate");
        assertEquals(2, unknown.code());
        assertTrue(unknown.err().contains("stockade: unknown command 'frobnicate'"), unknown.err());
    }

    @Test
    void withoutAJdk21TheLauncherSaysWhatItFound() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.JAVA_BEFORE_21);
        Path older = io.stockade.testing.Jvm.olderThan21().orElseThrow();
        int major = io.stockade.testing.Jvm.major(older);
        Path jdks = Files.createDirectories(dir.resolve("jdks"));
        Files.createSymbolicLink(jdks.resolve("java-" + major), older);
        Run old = run(Map.of("JAVA_HOME", older.toString(), "STOCKADE_JDK_DIR", jdks.toString()), "help");
        assertEquals(1, old.code());
        assertTrue(old.err().contains("Stockade needs Java 21+: found " + major + " at "
                + jdks.resolve("java-" + major)), old.err());
        assertEquals("", old.out());
    }

    @Test
    void theProxyAndTheFenceCommandRunThroughTheLauncher() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer etcd = EtcdServer.single()) {
            int port = io.stockade.testing.FreePorts.next();
            Path config = dir.resolve("stockade.yaml");
            Files.writeString(config, """
                    server: {port: %d}
                    store: {type: etcd, endpoints: "%s", prefix: /launcher/}
                    policies:
                      - name: files
                        match: {path: "/files/{path...}"}
                        scope: files/{path}
                        backend: {type: file, root: "%s"}
                    """.formatted(port, etcd.endpoints(), dir.resolve("files")));
            Path err = dir.resolve("proxy.err");
            Process proxy = new ProcessBuilder(LAUNCHER.toString(), "--config", config.toString())
                    .redirectOutput(dir.resolve("proxy.out").toFile()).redirectError(err.toFile()).start();
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (!Files.readString(dir.resolve("proxy.out")).contains("Stockade listening")) {
                    assertTrue(proxy.isAlive() && System.nanoTime() < deadline,
                            "the proxy did not start: " + Files.readString(err));
                    Thread.sleep(50);
                }
                // ready: the etcd store answers (a loaded machine may take a moment for its first answer)
                long ready = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!Curl.status("http://127.0.0.1:" + port + "/health/ready").equals("200")) {
                    assertTrue(System.nanoTime() < ready, "the proxy did not become ready");
                    Thread.sleep(100);
                }
                // a real client: curl
                assertEquals("201", Curl.status("-X", "PUT", "-H", "Fencing-Token: 5", "--data", "v5",
                        "http://127.0.0.1:" + port + "/files/a"));
                assertEquals("409", Curl.status("-X", "PUT", "-H", "Fencing-Token: 4", "--data", "v4",
                        "http://127.0.0.1:" + port + "/files/a"));
                assertEquals("v5", Files.readString(dir.resolve("files/files/a")));

                // the etcd store can be operated on while the proxy runs
                Run show = run(Map.of(), "fence", "--config", config.toString(), "show", "files/a");
                assertEquals(0, show.code(), show.err());
                assertTrue(show.out().contains("\"token\":5"), show.out());
            } finally {
                proxy.destroy();
                proxy.waitFor(20, TimeUnit.SECONDS);
            }
            String stderr = Files.readString(err);
            assertTrue(stderr.startsWith("stockade: Java "), stderr);
            assertFalse(stderr.contains("sun.misc.Unsafe"), "Netty's Unsafe warnings are silenced: " + stderr);
        }
    }

    /**
     * Hostile-load report: started with {@code env -i PATH=/usr/bin:/bin} (a service manager's bare environment, a
     * POSIX locale), the proxy answered 500 for a file named 'é'. The launcher now runs it under a UTF-8 locale,
     * and a JVM that cannot name such a file refuses to start saying what to set.
     */
    @Test
    void aBareEnvironmentStillNamesUnicodeFiles() throws Exception {
        int port = io.stockade.testing.FreePorts.next();
        Path config = dir.resolve("unicode.yaml");
        Files.writeString(config, """
                server: {port: %d}
                store: {type: memory, journal: "%s"}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: "%s"}
                """.formatted(port, dir.resolve("journal"), dir.resolve("files")));
        // the JVM alone, under the bare environment: refused, saying what to set
        Path jar = LAUNCHER.getParent().getParent().resolve("proxy/target/stockade-proxy.jar");
        ProcessBuilder bare = new ProcessBuilder(io.stockade.testing.Jvm.binary(), "-XX:+ExitOnOutOfMemoryError",
                "-jar", jar.toString(), "--config", config.toString()).redirectErrorStream(true);
        bare.environment().clear();
        bare.environment().put("PATH", "/usr/bin:/bin");
        Process refused = bare.start();
        String said = new String(refused.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertTrue(refused.waitFor(60, TimeUnit.SECONDS));
        assertEquals(1, refused.exitValue(), said);
        assertTrue(said.contains("LC_ALL=C.UTF-8"), said);
        // through the launcher, under the same environment: it serves 'é'
        ProcessBuilder launched = new ProcessBuilder(LAUNCHER.toString(), "--config", config.toString())
                .redirectOutput(dir.resolve("bare.out").toFile()).redirectError(dir.resolve("bare.err").toFile());
        launched.environment().clear();
        launched.environment().put("PATH", "/usr/bin:/bin");
        Process proxy = launched.start();
        try {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (!Files.readString(dir.resolve("bare.out")).contains("Stockade listening")) {
                assertTrue(proxy.isAlive() && System.nanoTime() < deadline,
                        "the proxy did not start: " + Files.readString(dir.resolve("bare.err")));
                Thread.sleep(50);
            }
            assertEquals("201", Curl.status("-X", "PUT", "-H", "Fencing-Token: 5", "--data", "v5",
                    "http://127.0.0.1:" + port + "/files/%C3%A9"));
            assertEquals("200", Curl.status("http://127.0.0.1:" + port + "/files/%C3%A9"));
            assertEquals("v5", Files.readString(dir.resolve("files/files/\u00e9")));
        } finally {
            proxy.destroy();
            proxy.waitFor(20, TimeUnit.SECONDS);
        }
    }
}
