package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import io.stockade.testing.RedisServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code lease run --redis} as a real process against a real redis-server that wants a password (given in
 * {@code REDISCLI_AUTH}, as to {@code redis-cli}, so it is not on the command line): the command gets the token the
 * lock key holds; a deleted lock key stops it within one renew interval (ttl/3); a busy lock and a refused password
 * have their own exit codes.
 */
@RequiresTools(Tools.Tool.REDIS)
class RedisLeaseRunIT {

    private static final String MAIN = "io.stockade.client.cli.LeaseCommand";
    private static final String PASSWORD = "run-pw";
    private static RedisServer redis;
    private static Jedis admin;

    @BeforeAll
    static void start() {
        redis = RedisServer.start(RedisServer.options().password(PASSWORD));
        admin = new Jedis(new HostAndPort("127.0.0.1", redis.port()),
                DefaultJedisClientConfig.builder().password(PASSWORD).build());
    }

    @AfterAll
    static void stop() {
        if (admin != null) {
            admin.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    private static Process run(Path dir, String name, String password, String script) throws Exception {
        ProcessBuilder pb = Children.java(MAIN, "run", "--redis", redis.url(), "--name", name, "--ttl", "3s",
                        "--grace", "2s", "--", "sh", "-c", script)
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("run.log").toFile());
        pb.environment().put("REDISCLI_AUTH", password);
        return pb.start();
    }

    private static void awaitFile(Path file, Process p, Path dir) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (!Files.exists(file) || Files.size(file) == 0) {
            if (!p.isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("the command did not start: " + Files.readString(dir.resolve("run.log")));
            }
            Thread.sleep(20);
        }
    }

    @Test
    void theCommandGetsTheLocksTokenAndItsExitCodeIsPassedOn() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        Process p = run(dir, "job-exit", PASSWORD, "echo \"$FENCING_TOKEN\" > token; sleep 2; exit 3");
        awaitFile(dir.resolve("token"), p, dir);
        long token = Long.parseLong(Files.readString(dir.resolve("token")).strip());
        assertTrue(admin.get("job-exit").startsWith(token + ":"), "the token is the one in the lock key's value: "
                + admin.get("job-exit"));
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(3, p.exitValue());
        assertFalse(admin.exists("job-exit"), "released when the command ended");
    }

    @Test
    void aDeletedLockStopsTheCommandWithinOneRenewInterval() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        Process p = run(dir, "job-term", PASSWORD, "echo started > started; exec sleep 60");
        awaitFile(dir.resolve("started"), p, dir);
        long deleted = System.nanoTime();
        assertEquals(1, admin.del("job-term"));
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - deleted);
        assertEquals(75, p.exitValue(), Files.readString(dir.resolve("run.log")));
        // renew interval 1 s (ttl 3 s / 3) + slack; sleep dies on SIGTERM
        assertTrue(took.compareTo(Duration.ofMillis(2500)) < 0, "stopped after " + took);
        assertTrue(Files.readString(dir.resolve("run.log")).contains("REVOKED"));
    }

    @Test
    void aBusyLockAndARefusedPasswordHaveTheirOwnExitCodes() throws Exception {
        Path dir = Files.createTempDirectory("stockade-run-");
        try (LeaseProvider leases = Leases.newBuilder().redisCredentials(null, PASSWORD).redis(redis.url());
             Lease held = leases.acquire("job-busy", Duration.ofSeconds(5), Duration.ofSeconds(5))) {
            Process busy = run(dir, "job-busy", PASSWORD, "echo ran > ran");
            assertTrue(busy.waitFor(30, TimeUnit.SECONDS));
            assertEquals(73, busy.exitValue());
            assertTrue(!Files.exists(dir.resolve("ran")) && held.isValid());
        }
        Process refused = run(dir, "job-refused", "wrong", "echo ran > ran");
        assertTrue(refused.waitFor(30, TimeUnit.SECONDS));
        assertEquals(69, refused.exitValue());
        String log = Files.readString(dir.resolve("run.log"));
        assertTrue(log.contains("WRONGPASS") && !log.contains("wrong\n"), log);
        assertFalse(Files.exists(dir.resolve("ran")));
    }
}
