package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.ConsulStandIn;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code lease run --consul} as a real process against {@link ConsulStandIn} (the proxy's in-process stand-in of
 * Consul's session and KV HTTP API; not a real Consul): the command gets the key's {@code ModifyIndex} as its
 * token, with the ACL token from {@code CONSUL_HTTP_TOKEN}, and the key is released when it ended; an invalidated
 * session stops the command within one renew interval; a ttl under Consul's 10 s is refused (69).
 */
class ConsulLeaseRunIT {
    private static final String MAIN = "io.stockade.client.cli.LeaseCommand";
    private static final String ACL = "run-acl-token-77";

    private ConsulStandIn consul;

    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        consul = new ConsulStandIn();
        consul.requireToken = ACL;
    }

    @AfterEach
    void stop() {
        consul.close();
    }

    private Process run(String name, String ttl, String script) throws Exception {
        ProcessBuilder b = Children.java(MAIN, "run", "--consul", consul.url(), "--consul-prefix", "jobs/",
                "--name", name, "--ttl", ttl, "--grace", "2s", "--", "sh", "-c", script);
        b.environment().put("CONSUL_HTTP_TOKEN", ACL);
        return b.directory(dir.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("run.log").toFile())
                .start();
    }

    private void awaitFile(Path file, Process p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(file) || Files.size(file) == 0) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("the command did not start: " + Files.readString(dir.resolve("run.log")));
            }
            Thread.sleep(20);
        }
    }

    @Test
    void theCommandGetsTheKeysModifyIndexAndItsExitCodeIsPassedOn() throws Exception {
        Process p = run("job-exit", "10s", "echo \"$FENCING_TOKEN\" > token; sleep 1; exit 3");
        awaitFile(dir.resolve("token"), p);
        long token = Long.parseLong(Files.readString(dir.resolve("token")).strip());
        Map<String, Object> entry = consul.entry("jobs/job-exit").orElseThrow();
        assertEquals(entry.get("ModifyIndex"), token);
        assertTrue(entry.containsKey("Session"));
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(3, p.exitValue(), Files.readString(dir.resolve("run.log")));
        assertFalse(consul.entry("jobs/job-exit").orElseThrow().containsKey("Session"), "released at the end");
        assertEquals(List.of(), consul.sessions(), "the session destroyed");
        assertTrue(consul.requests.stream().allMatch(r -> r.endsWith("token=" + ACL)), consul.requests.toString());
    }

    @Test
    void anInvalidatedSessionStopsTheCommandWithinOneRenewInterval() throws Exception {
        Process p = run("job-term", "10s", "echo started > started; exec sleep 60");
        awaitFile(dir.resolve("started"), p);
        String session = (String) consul.entry("jobs/job-term").orElseThrow().get("Session");
        long invalidated = System.nanoTime();
        consul.invalidate(session);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - invalidated);
        assertEquals(75, p.exitValue(), Files.readString(dir.resolve("run.log")));
        // renew interval 3.33 s (ttl 10 s / 3) + slack; sleep dies on SIGTERM
        assertTrue(took.compareTo(Duration.ofMillis(5000)) < 0, "stopped after " + took);
        assertTrue(Files.readString(dir.resolve("run.log")).contains("REVOKED"));
    }

    @Test
    void aTtlUnderConsulsMinimumIsRefused() throws Exception {
        Process p = run("job-short", "3s", "echo ran > ran");
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        String log = Files.readString(dir.resolve("run.log"));
        assertEquals(69, p.exitValue(), log);
        assertTrue(log.contains("10s..24h"), log);
        assertFalse(Files.exists(dir.resolve("ran")), "the command never ran");
    }
}
