package io.stockade.client;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooKeeper;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code lease run --zookeeper} as a real process against a real ZooKeeper server (Curator's {@code TestingServer},
 * tickTime 200 ms): the command gets the lock node's czxid as its token and the node is gone when it ended; a
 * deleted lock node stops the command within one renew interval; a stopped server stops it at once.
 */
class ZooKeeperLeaseRunIT {
    private static final String MAIN = "io.stockade.client.cli.LeaseCommand";

    private TestingServer zk;
    private ZooKeeper observer;

    @TempDir
    Path dir;

    @BeforeEach
    void start() throws Exception {
        zk = new TestingServer(new InstanceSpec(null, -1, -1, -1, true, -1, 200, -1), true);
        CountDownLatch connected = new CountDownLatch(1);
        observer = new ZooKeeper(zk.getConnectString(), 4_000, e -> {
            if (e.getState() == Watcher.Event.KeeperState.SyncConnected) {
                connected.countDown();
            }
        });
        assertTrue(connected.await(10, TimeUnit.SECONDS));
    }

    @AfterEach
    void stop() throws Exception {
        observer.close(1000);
        zk.close();
    }

    private Process run(String name, String script) throws Exception {
        return Children.java(MAIN, "run", "--zookeeper", zk.getConnectString(), "--zookeeper-prefix", "/jobs/",
                        "--name", name, "--ttl", "3s", "--grace", "2s", "--", "sh", "-c", script)
                .directory(dir.toFile()).redirectErrorStream(true).redirectOutput(dir.resolve("run.log").toFile())
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

    private String lockNode(String name) throws Exception {
        List<String> children = observer.getChildren("/jobs/" + name, false);
        assertEquals(1, children.size(), children.toString());
        return "/jobs/" + name + "/" + children.get(0);
    }

    @Test
    void theCommandGetsTheLockNodesCzxidAndItsExitCodeIsPassedOn() throws Exception {
        Process p = run("job-exit", "echo \"$FENCING_TOKEN\" > token; sleep 1; exit 3");
        awaitFile(dir.resolve("token"), p);
        long token = Long.parseLong(Files.readString(dir.resolve("token")).strip());
        String node = lockNode("job-exit");
        assertEquals(observer.exists(node, false).getCzxid(), token);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        assertEquals(3, p.exitValue(), Files.readString(dir.resolve("run.log")));
        assertNull(observer.exists(node, false), "released when the command ended");
        assertFalse(Files.readString(dir.resolve("run.log")).contains("INFO"), "ZooKeeper's INFO lines stay out");
    }

    @Test
    void aDeletedLockNodeStopsTheCommandWithinOneRenewInterval() throws Exception {
        Process p = run("job-term", "echo started > started; exec sleep 60");
        awaitFile(dir.resolve("started"), p);
        String node = lockNode("job-term");
        long deleted = System.nanoTime();
        observer.delete(node, -1);
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - deleted);
        assertEquals(75, p.exitValue(), Files.readString(dir.resolve("run.log")));
        // renew interval 1 s (ttl 3 s / 3) + slack; sleep dies on SIGTERM
        assertTrue(took.compareTo(Duration.ofMillis(2500)) < 0, "stopped after " + took);
        assertTrue(Files.readString(dir.resolve("run.log")).contains("REVOKED"));
    }

    @Test
    void aStoppedServerStopsTheCommandAtOnce() throws Exception {
        Process p = run("job-suspended", "echo started > started; exec sleep 60");
        awaitFile(dir.resolve("started"), p);
        zk.stop();
        // the clock starts once the server is down: measured from before stop(), the server's own shutdown counted
        // too, and a loaded CI host once took 3.0 s in all. A client that waited for its session's expiry or its
        // lease's validity instead of reacting to the lost connection still fails: it reports REVOKED or EXPIRED,
        // not CONNECTION_LOST (checked below)
        long stopped = System.nanoTime();
        assertTrue(p.waitFor(20, TimeUnit.SECONDS));
        Duration took = Duration.ofNanos(System.nanoTime() - stopped);
        assertEquals(75, p.exitValue(), Files.readString(dir.resolve("run.log")));
        assertTrue(took.compareTo(Duration.ofMillis(2500)) < 0, "stopped after " + took);
        assertTrue(Files.readString(dir.resolve("run.log")).contains("CONNECTION_LOST"));
    }
}
