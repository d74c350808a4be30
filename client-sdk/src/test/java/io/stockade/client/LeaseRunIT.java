package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.EtcdServer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.options.GetOption;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code lease run} as a real process against a real etcd. Documented stop time (client-sdk/README.md): the
 * command gets SIGTERM within one renew interval (ttl/3) of a revocation, and SIGKILL {@code --grace} later.
 */
class LeaseRunIT {

    private static final String MAIN = "io.stockade.client.cli.LeaseCommand";
    /**
     * The lease's time to live. 6 s, not less: on a loaded 2-core machine a 3 s lease once ran out under the
     * running command (its renewals starved) before the test looked the lock key up. The stop-time bounds below
     * are in renew intervals (ttl/3 = 2 s).
     */
    private static final long TTL_MS = 6000;
    private static final long RENEW_MS = TTL_MS / 3;
    /** Scheduling slack on top of the documented bounds. */
    private static final long SLACK_MS = 1500;
    private static EtcdServer etcd;
    private static Client admin;

    @BeforeAll
    static void start() throws Exception {
        etcd = EtcdServer.single();
        admin = Client.builder().endpoints(etcd.endpoints()).build();
        admin.getKVClient().get(ByteSequence.from("warm-up", StandardCharsets.UTF_8)).get(20, TimeUnit.SECONDS);
    }

    @AfterAll
    static void stop() throws Exception {
        try {
            if (admin != null) {
                admin.close();
            }
        } finally {
            if (etcd != null) {
                etcd.close();
            }
        }
    }

    private static Process run(Path dir, String name, String grace, String script) throws Exception {
        return Children.java(MAIN, "run", "--etcd", etcd.endpoints(), "--name", name, "--ttl", TTL_MS + "ms",
                        "--grace", grace, "--", "sh", "-c", script)
                .directory(dir.toFile())
                .redirectErrorStream(true).redirectOutput(dir.resolve("run.log").toFile()).start();
    }

    private static void awaitFile(Path file, Process p, Path dir) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(file)) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("the command did not start: " + Files.readString(dir.resolve("run.log")));
            }
            Thread.sleep(20);
        }
        Thread.sleep(100);
    }

    private static KeyValue lockKey(String name) throws Exception {
        List<KeyValue> kvs = admin.getKVClient().get(ByteSequence.from(name + "/", StandardCharsets.UTF_8),
                GetOption.builder().isPrefix(true).build()).get(5, TimeUnit.SECONDS).getKvs();
        assertEquals(1, kvs.size(), "lock keys under " + name + "/ (none: the lease was lost before the test"
                + " looked; the run's log says when)");
        return kvs.get(0);
    }

    @Test
    void theCommandGetsTheTokenAndItsExitCodeIsPassedOn() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        Process p = run(dir, "job-exit", "2s", "echo \"$FENCING_TOKEN\" > token; sleep 3; exit 3");
        awaitFile(dir.resolve("token"), p, dir);
        long token = Long.parseLong(Files.readString(dir.resolve("token")).strip());
        assertEquals(lockKey("job-exit").getCreateRevision(), token, "the token is the lock key's create revision");
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(3, p.exitValue());
    }

    @Test
    void aRevokedLeaseStopsTheCommandWithSigtermWithinOneRenewInterval() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        Process p = run(dir, "job-term", "5s", "echo started > started; exec sleep 60");
        awaitFile(dir.resolve("started"), p, dir);
        long revoked = System.nanoTime();
        admin.getKVClient().delete(lockKey("job-term").getKey()).get(5, TimeUnit.SECONDS);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - revoked);
        assertEquals(75, p.exitValue(), Files.readString(dir.resolve("run.log")));
        // one renew interval + slack; the 5 s grace was not needed: sleep dies on SIGTERM
        assertTrue(took.compareTo(Duration.ofMillis(RENEW_MS + SLACK_MS)) < 0, "stopped after " + took);
    }

    @Test
    void aCommandIgnoringSigtermIsKilledAfterTheGrace() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        Process p = run(dir, "job-kill", "2s", "trap '' TERM; echo started > started; exec sleep 60");
        awaitFile(dir.resolve("started"), p, dir);
        long revoked = System.nanoTime();
        admin.getLeaseClient().revoke(lockKey("job-kill").getLease()).get(5, TimeUnit.SECONDS);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - revoked);
        assertEquals(75, p.exitValue());
        // at least the grace, at most one renew interval + the grace + slack
        assertTrue(took.compareTo(Duration.ofMillis(2000)) >= 0, "waited the grace: " + took);
        assertTrue(took.compareTo(Duration.ofMillis(RENEW_MS + 2000 + SLACK_MS)) < 0, "killed after " + took);
        assertTrue(Files.readString(dir.resolve("run.log")).contains("killing it"));
    }

    @Test
    void aBusyLeaseAndABadCommandLineHaveTheirOwnExitCodes() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        try (LeaseProvider leases = Leases.newBuilder().etcd(etcd.endpoints());
             Lease held = leases.acquire("job-busy", Duration.ofSeconds(5), Duration.ofSeconds(5))) {
            Process busy = run(dir, "job-busy", "1s", "echo ran > ran");
            assertTrue(busy.waitFor(30, TimeUnit.SECONDS));
            assertEquals(73, busy.exitValue());
            assertTrue(!Files.exists(dir.resolve("ran")) && held.isValid());
        }
        Process usage = Children.java(MAIN, "run", "--name", "x", "--ttl", "3s", "--", "true")
                .redirectErrorStream(true).redirectOutput(dir.resolve("usage.log").toFile()).start();
        assertTrue(usage.waitFor(20, TimeUnit.SECONDS));
        assertEquals(2, usage.exitValue());
    }
}
