package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.client.cli.LeaseCommand;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.Jvm;
import io.stockade.testing.RedisServer;

import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.options.GetOption;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import redis.clients.jedis.Jedis;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What {@code lease run} prints, as a person on call reads it: one line per event, each starting with
 * {@code lease: }, tokens as plain digits (grep-able against the proxy's {@code token=N}), and no stack trace or
 * library warning for what is expected — a {@code --redis} run (Jedis's RESP3 warning), a lease that expired while
 * the process was stopped ({@code --etcd}: the release finds the lease gone), a ZooKeeper that went away.
 */
class LeaseRunOutputIT {
    private static final Pattern HOLDING = Pattern.compile("lease: holding '[^']+' with token ([0-9]+); started pid"
            + " [0-9]+");

    /** A token printed with grouping commas: {@code token 1,796,169,260,883}. */
    private static final Pattern GROUPED = Pattern.compile("token [0-9]{1,3}(,[0-9]{3})+");

    @TempDir
    Path dir;

    private Process lease(String name, String... args) throws Exception {
        // the JVM options bin/stockade gives the command (no sun.misc.Unsafe warnings from Netty at start)
        List<String> options = Runtime.version().feature() >= 24 ? List.of("--sun-misc-unsafe-memory-access=allow")
                : List.of();
        return Jvm.java(options, LeaseCommand.class.getName(), args)
                .redirectOutput(dir.resolve(name + ".out").toFile())
                .redirectError(dir.resolve(name + ".err").toFile()).start();
    }

    private List<String> err(String name) throws Exception {
        return Files.readAllLines(dir.resolve(name + ".err"), StandardCharsets.UTF_8);
    }

    /** Waits for the holding line; the token printed in it. */
    private long holding(String name, Process p) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            for (String line : err(name)) {
                Matcher m = HOLDING.matcher(line);
                if (m.matches()) {
                    return Long.parseLong(m.group(1));
                }
            }
            assertTrue(p.isAlive() || !err(name).isEmpty(), "lease run ended: " + err(name));
            assertTrue(System.nanoTime() < deadline, "no holding line: " + err(name));
            Thread.sleep(20);
        }
    }

    /** Every line is the command's own, one line, no stack trace, no library warning. */
    private static void oneLinePerEvent(List<String> lines, int most) {
        assertTrue(lines.size() <= most, "more lines than events: " + lines);
        for (String line : lines) {
            assertTrue(line.startsWith("lease: "), "a line not of the command: " + line + " in " + lines);
            assertFalse(line.contains("Exception") || line.startsWith("\tat ") || line.contains("RESP3")
                    || line.contains("NOT_FOUND") || GROUPED.matcher(line).find(), line + " in " + lines);
        }
    }

    @Test
    void aRedisRunPrintsOneLineAndTheTokenAsDigits() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.REDIS);
        try (RedisServer redis = RedisServer.start(RedisServer.options())) {
            Process p = lease("redis", "run", "--redis", redis.url(), "--name", "out/redis", "--ttl", "5s", "--",
                    "true");
            assertTrue(p.waitFor(60, TimeUnit.SECONDS));
            assertEquals(0, p.exitValue(), err("redis").toString());
            long token = holding("redis", p);
            assertTrue(token > 999_999, "a token big enough to have been grouped: " + token);
            oneLinePerEvent(err("redis"), 1);

            // a lease lost (its key deleted): the loss line names the token as digits too
            Process lost = lease("redis-lost", "run", "--redis", redis.url(), "--name", "out/lost", "--ttl", "2s",
                    "--", "sleep", "60");
            try (Jedis admin = new Jedis(redis.url())) {
                long held = holding("redis-lost", lost);
                assertEquals(1, admin.del("out/lost"));
                assertTrue(lost.waitFor(60, TimeUnit.SECONDS));
                assertEquals(LeaseCommand.LOST, lost.exitValue(), err("redis-lost").toString());
                List<String> lines = err("redis-lost");
                oneLinePerEvent(lines, 3);
                assertTrue(lines.stream().anyMatch(l -> l.contains("(token " + held + ") lost")), lines.toString());
            } finally {
                lost.destroyForcibly();
            }
        }
    }

    @Test
    void anEtcdLeaseThatExpiredWhileStoppedEndsWithoutAnException() throws Exception {
        io.stockade.testing.Tools.require(io.stockade.testing.Tools.Tool.ETCD);
        try (EtcdServer etcd = EtcdServer.single();
             Client admin = Client.builder().endpoints(etcd.endpoints().split(",")).build()) {
            Process p = lease("etcd", "run", "--etcd", etcd.endpoints(), "--name", "out/etcd", "--ttl", "2s", "--",
                    "sleep", "60");
            try {
                holding("etcd", p);
                Children.signal(p.pid(), "STOP");
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                ByteSequence prefix = ByteSequence.from("out/etcd/", StandardCharsets.UTF_8);
                while (admin.getKVClient().get(prefix, GetOption.builder().isPrefix(true).build())
                        .get(5, TimeUnit.SECONDS).getCount() > 0) { // the lease expires while its holder is stopped
                    assertTrue(System.nanoTime() < deadline, "the stopped holder's lease did not expire");
                    Thread.sleep(50);
                }
                Children.signal(p.pid(), "CONT");
                assertTrue(p.waitFor(60, TimeUnit.SECONDS));
                assertEquals(LeaseCommand.LOST, p.exitValue(), err("etcd").toString());
                // holding, the lease's loss (with its detail), the command being stopped
                oneLinePerEvent(err("etcd"), 3);
            } finally {
                p.destroyForcibly();
            }
        }
    }

    @Test
    void aZooKeeperThatWentAwayIsOneLineNotAStackTrace() throws Exception {
        try (TestingServer zk = new TestingServer(new InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true)) {
            Process p = lease("zk", "run", "--zookeeper", zk.getConnectString(), "--name", "out-zk", "--ttl", "4s",
                    "--", "sleep", "60");
            try {
                holding("zk", p);
                zk.stop();
                assertTrue(p.waitFor(60, TimeUnit.SECONDS));
                assertEquals(LeaseCommand.LOST, p.exitValue(), err("zk").toString());
                oneLinePerEvent(err("zk"), 3);
            } finally {
                p.destroyForcibly();
            }
        }
    }
}
