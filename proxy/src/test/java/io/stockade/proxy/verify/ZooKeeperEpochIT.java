package io.stockade.proxy.verify;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static io.stockade.proxy.VerifiedFiles.put;
import static io.stockade.proxy.VerifiedFiles.start;
import static io.stockade.proxy.VerifiedFiles.stored;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * ZooKeeper tokens across leader elections, on a real 3-node ensemble (curator-test's {@code TestingCluster}, in
 * process): a zxid is {@code epoch << 32 | counter} and every election raises the epoch, so a scope left idle while
 * the leader is killed twice sees its next holder's token about 2 × 2^32 above the last one. With
 * {@code fence.verify: {kind: zookeeper}} (and no {@code max-advance}, which the loader refuses beside a zookeeper
 * verifier: policies/README.md) the new holder writes, and the fence moves to its token.
 */
class ZooKeeperEpochIT {
    private static final Logger[] QUIET = {Logger.getLogger("org.apache.zookeeper"),
            Logger.getLogger("org.apache.curator")};
    private static final Pattern MODE = Pattern.compile("Mode: (\\w+)");

    static {
        for (Logger logger : QUIET) {
            logger.setLevel(Level.SEVERE);
        }
    }

    @TempDir
    Path dir;

    @Test
    void aScopeIdleAcrossTwoLeaderElectionsTakesItsNextHoldersToken() throws Exception {
        try (TestingCluster ensemble = new TestingCluster(3)) {
            ensemble.start();
            try (ProxyFixture proxy = start(dir, "kind: zookeeper\nservers: ${ZK}",
                    Map.of("ZK", ensemble.getConnectString()))) {
                long before;
                try (CuratorFramework a = curator(ensemble)) {
                    InterProcessMutex lock = new InterProcessMutex(a, "/files/a");
                    assertTrue(lock.acquire(20, TimeUnit.SECONDS));
                    before = ZooKeeperLockVerifyIT.token(a, "/files/a");
                    assertEquals(201, put(proxy, "a", "before", before).status());
                    lock.release();
                }

                electNewLeader(ensemble);
                electNewLeader(ensemble);

                try (CuratorFramework b = curator(ensemble)) {
                    InterProcessMutex lock = new InterProcessMutex(b, "/files/a");
                    assertTrue(lock.acquire(30, TimeUnit.SECONDS));
                    long after = ZooKeeperLockVerifyIT.token(b, "/files/a");
                    assertTrue((after >>> 32) >= (before >>> 32) + 2,
                            "two elections raised the epoch twice: " + before + " -> " + after);
                    assertTrue(after - before > 1L << 32,
                            "a jump no max-advance under 2^32 would allow: " + before + " -> " + after);
                    Http.Response w = put(proxy, "a", "after", after);
                    assertEquals(204, w.status(), "the holder after two elections writes: " + w.body());
                    assertEquals(Optional.of("after"), stored(dir, "a"));
                    assertEquals(after, proxy.server().store().get("files/a").orElseThrow().token());
                    Http.Response old = put(proxy, "a", "old", before);
                    assertEquals(409, old.status(), old.body());
                    assertEquals(Optional.of("after"), stored(dir, "a"));
                    lock.release();
                }
            }
        }
    }

    /** Kills the leader, waits for the two others to elect one, and brings the killed server back as a follower. */
    private static void electNewLeader(TestingCluster ensemble) throws Exception {
        InstanceSpec leader = leader(ensemble, null);
        assertTrue(ensemble.killServer(leader), "killed the leader " + leader.getPort());
        InstanceSpec next = leader(ensemble, leader);
        assertTrue(next.getPort() != leader.getPort());
        assertTrue(ensemble.restartServer(leader), "restarted " + leader.getPort());
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!"follower".equals(mode(leader))) {
            assertTrue(System.nanoTime() < deadline, "the restarted server rejoined as a follower");
            Thread.sleep(100);
        }
    }

    /** The instance that says it leads (waiting up to 60 s for an election), other than {@code not}. */
    private static InstanceSpec leader(TestingCluster ensemble, InstanceSpec not) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            for (InstanceSpec spec : ensemble.getInstances()) {
                if ((not == null || spec.getPort() != not.getPort()) && "leader".equals(mode(spec))) {
                    return spec;
                }
            }
            assertTrue(System.nanoTime() < deadline, "an ensemble member leads");
            Thread.sleep(100);
        }
    }

    /** The {@code Mode} the server's {@code srvr} command reports ({@code leader}, {@code follower}), or "down". */
    private static String mode(InstanceSpec spec) {
        try (Socket s = new Socket()) {
            s.connect(new InetSocketAddress("127.0.0.1", spec.getPort()), 1000);
            s.setSoTimeout(2000);
            OutputStream out = s.getOutputStream();
            out.write("srvr".getBytes(StandardCharsets.US_ASCII));
            out.flush();
            InputStream in = s.getInputStream();
            ByteArrayOutputStream answer = new ByteArrayOutputStream();
            in.transferTo(answer);
            Matcher m = MODE.matcher(answer.toString(StandardCharsets.US_ASCII));
            return m.find() ? m.group(1) : "unknown";
        } catch (IOException e) {
            return "down";
        }
    }

    private static CuratorFramework curator(TestingCluster ensemble) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(ensemble.getConnectString())
                .sessionTimeoutMs(20_000)
                .connectionTimeoutMs(10_000)
                .retryPolicy(new ExponentialBackoffRetry(100, 10))
                .build();
        client.start();
        assertTrue(client.blockUntilConnected(30, TimeUnit.SECONDS), "Curator connected");
        return client;
    }
}
