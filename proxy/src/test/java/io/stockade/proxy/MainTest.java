package io.stockade.proxy;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import io.stockade.policy.ServerConfig;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The command line refuses bad input with exit code 2 and a message that says what and where. */
class MainTest {
    @TempDir
    Path dir;

    final ByteArrayOutputStream out = new ByteArrayOutputStream();
    final ByteArrayOutputStream err = new ByteArrayOutputStream();

    int run(String... args) {
        return Main.run(args, new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8));
    }

    String err() {
        return err.toString(StandardCharsets.UTF_8);
    }

    @Test
    void aBadPolicyFileExitsWith2NamingFileLineAndColumn() throws Exception {
        Path file = dir.resolve("bad.yaml");
        Files.writeString(file, """
                store:
                  type: memory
                  journal: /tmp/j
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    fence:
                      mode: enforcing
                    backend:
                      type: file
                      root: /tmp/r
                """);
        assertEquals(2, run("--config", file.toString()));
        assertTrue(err().contains("bad.yaml:10:13"), err());
        assertTrue(err().contains("enforce"), err());
    }

    /** The first-hour report: a taken port used to hang the proxy after printing "listening on ...:-1". */
    @Test
    void aTakenPortExitsWith1InOneLineAndNeverSaysListening() throws Exception {
        Path file = dir.resolve("ok.yaml");
        Files.writeString(file, """
                store:
                  type: memory
                  journal: %s
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    backend:
                      type: file
                      root: %s
                """.formatted(dir.resolve("j"), dir.resolve("r")));
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1,
                java.net.InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            assertEquals(1, run("--config", file.toString(), "--port", Integer.toString(port)));
            assertEquals("stockade: cannot listen on 127.0.0.1:" + port + ": address already in use (server.port, or "
                    + "--port)", err().strip());
            assertTrue(out.toString(StandardCharsets.UTF_8).isEmpty(), out.toString(StandardCharsets.UTF_8));
        }
    }

    @Test
    void aTakenManagementPortExitsWith1NamingItsSetting() throws Exception {
        Path file = dir.resolve("ok.yaml");
        Files.writeString(file, """
                store: {type: memory, journal: "%s"}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: "%s"}
                """.formatted(dir.resolve("j"), dir.resolve("r")));
        try (java.net.ServerSocket taken = new java.net.ServerSocket(0, 1,
                java.net.InetAddress.getByName("127.0.0.1"))) {
            int port = taken.getLocalPort();
            assertEquals(1, run("--config", file.toString(), "--port", "0", "--management-port",
                    Integer.toString(port)));
            assertEquals("stockade: cannot listen on 127.0.0.1:" + port + ": address already in use"
                    + " (server.management.port, or --management-port)", err().strip());
            assertTrue(out.toString(StandardCharsets.UTF_8).isEmpty(), out.toString(StandardCharsets.UTF_8));
        }
        assertEquals(2, run("--config", file.toString(), "--management-port", "metrics"));
        assertTrue(err().contains("--management-port must be a number"), err());
    }

    @Test
    void aMissingFileExitsWith2() {
        assertEquals(2, run("--config", dir.resolve("nope.yaml").toString()));
        assertTrue(err().contains("does not exist"), err());
    }

    @Test
    void noConfigExitsWith2AndPrintsUsage() {
        assertEquals(2, run());
        assertTrue(err().contains("--config FILE is required") && err().contains("usage:"), err());
    }

    @Test
    void aBadPortExitsWith2() throws Exception {
        assertEquals(2, run("--config", "x.yaml", "--port", "http"));
        assertTrue(err().contains("--port must be a number"), err());
        assertEquals(2, run("--config", "x.yaml", "--port", "70000"));
    }

    @Test
    void unknownArgumentsExitWith2() {
        assertEquals(2, run("--confg", "x.yaml"));
        assertTrue(err().contains("unknown argument '--confg'"), err());
    }

    @Test
    void helpExitsWith0() {
        assertEquals(0, run("--help"));
        assertTrue(out.toString(StandardCharsets.UTF_8).contains("usage:"));
    }

    /** Hostile-load report: under a bare environment the JVM could not name a file and the file backend said 500. */
    @Test
    void aJvmThatCannotNameUnicodeFilesIsRefusedEverywhereSayingWhatToSet() {
        ServerConfig loopback = new ServerConfig("127.0.0.1", 8080);
        assertEquals(null, BootstrapChecks.run(loopback, "UTF-8", true, false).refusal());
        String ascii = BootstrapChecks.run(loopback, "ANSI_X3.4-1968", true, false).refusal();
        assertTrue(ascii != null && ascii.contains("LC_ALL=C.UTF-8") && ascii.contains("ANSI_X3.4-1968"), ascii);
        assertTrue(Main.exitsOnOutOfMemory(), "the test JVMs run as the launchers run the proxy (pom.xml argLine)");
    }

    /**
     * Issue 49: the README's {@code java -jar} on a laptop was refused for want of -XX:+ExitOnOutOfMemoryError. As
     * Elasticsearch does, the production check is enforced only beyond loopback; on loopback it is a warning.
     */
    @Test
    void withoutExitOnOutOfMemoryErrorALoopbackProxyIsWarnedAndOneListeningBeyondItRefused() {
        BootstrapChecks.Outcome laptop = BootstrapChecks.run(new ServerConfig("127.0.0.1", 8080), "UTF-8", false,
                false);
        assertEquals(null, laptop.refusal());
        assertTrue(laptop.warnings().size() == 1 && laptop.warnings().getFirst().contains("-XX:+ExitOnOutOfMemoryError")
                && laptop.warnings().getFirst().contains("loopback only"), laptop.warnings().toString());
        assertEquals(null, BootstrapChecks.run(new ServerConfig("localhost", 8080), "UTF-8", false, false).refusal());
        assertEquals(null, BootstrapChecks.run(new ServerConfig("::1", 8080), "UTF-8", false, false).refusal());

        String wildcard = BootstrapChecks.run(new ServerConfig("0.0.0.0", 8080), "UTF-8", false, false).refusal();
        assertTrue(wildcard != null && wildcard.contains("-XX:+ExitOnOutOfMemoryError")
                && wildcard.contains("beyond loopback (server.host 0.0.0.0)"), wildcard);
        String management = BootstrapChecks.run(new ServerConfig("127.0.0.1", 8080)
                .withManagement(new ServerConfig.Management("::", 9090)), "UTF-8", false, false).refusal();
        assertTrue(management != null && management.contains("server.management.host ::"), management);
        String enforced = BootstrapChecks.run(new ServerConfig("127.0.0.1", 8080), "UTF-8", false, true).refusal();
        assertTrue(enforced != null && enforced.contains("-Dstockade.enforce-bootstrap-checks=true"), enforced);
        assertEquals(null, BootstrapChecks.run(new ServerConfig("0.0.0.0", 8080), "UTF-8", true, true).refusal());
    }
}
