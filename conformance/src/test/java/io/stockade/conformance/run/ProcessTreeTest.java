package io.stockade.conformance.run;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import io.stockade.testing.FreePorts;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link StoreProcess} and {@link ProxyProcess} signal the whole process tree: a launch command wrapped in
 * {@code sh -c} that forks the real server (instead of exec'ing it) is stopped and killed all the same, and the
 * store's probe tells a stopped server from a live one. The server is {@link TreeServer}, a small real process.
 */
class ProcessTreeTest {

    /** The wrappers: {@code exec} (the server is the launched process), a fork and wait, a nested shell. */
    private static final String[] WRAPPERS = {"exec %s", "%s & wait", "%s; true", "sh -c '%s & wait'; true"};

    private static String serverCommand(int port) throws Exception {
        Path classes = Path.of(TreeServer.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String java = ProcessHandle.current().info().command().orElse("java");
        return java + " -Xshare:auto -XX:TieredStopAtLevel=1 -cp " + classes + " " + TreeServer.class.getName()
                + " " + port;
    }

    private static List<String> wrapped(int wrapper, int port) throws Exception {
        return List.of("sh", "-c", WRAPPERS[wrapper].formatted(serverCommand(port)));
    }


    /** The process's state letter from /proc ({@code T}: stopped), or "gone". */
    private static String state(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
            return stat.substring(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
        } catch (IOException e) {
            return "gone";
        }
    }

    /**
     * The state of {@code pid} once it is {@code wanted}, or what it still is after 2 s: a signal is delivered
     * asynchronously ({@code kill} returns once it is queued; a running multi-threaded process needs a moment to
     * stop every thread), so a state read right after {@code kill -STOP} can still be R on a busy machine.
     */
    private static String awaitState(long pid, String wanted) throws InterruptedException {
        long deadline = System.nanoTime() + 2_000_000_000L;
        String now = state(pid);
        while (!now.equals(wanted) && System.nanoTime() < deadline) {
            Thread.sleep(5);
            now = state(pid);
        }
        return now;
    }

    /** The server's own pid in the tree (the java process), whatever wraps it. */
    private static long serverPid(List<ProcessHandle> tree) {
        return tree.stream().filter(h -> h.info().command().orElse("").endsWith("java")).mapToLong(ProcessHandle::pid)
                .findFirst().orElseThrow(() -> new AssertionError("no java process in " + tree));
    }

    /**
     * A zombie (exited, not reaped) is gone, though {@link ProcessHandle#isAlive()} still says alive: {@code sh}
     * starts {@code sleep 0} and execs {@code sleep 60}, which never waits for the child it inherited. (Killed
     * wrappers' children wait as zombies for the machine's init, which reaps some seconds later or never.)
     */
    @Test
    void aZombieIsGone() throws Exception {
        Process p = new ProcessBuilder("sh", "-c", "sleep 0 & exec sleep 60").start();
        try {
            ProcessHandle zombie = null;
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (System.nanoTime() < deadline) {
                List<ProcessHandle> children = p.toHandle().children().toList();
                if (!children.isEmpty() && state(children.get(0).pid()).equals("Z")) {
                    zombie = children.get(0);
                    break;
                }
                Thread.sleep(5);
            }
            assertTrue(zombie != null, "no zombie child of the exec'd sleep within 10 s");
            assertTrue(zombie.isAlive(), "the JDK counts a zombie as alive (else this test proves nothing)");
            assertTrue(ProcessTree.gone(zombie));
            assertFalse(ProcessTree.gone(p.toHandle()), "the live sleep 60 is not gone");
        } finally {
            p.destroyForcibly().waitFor();
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3})
    void theStoreStopStopsAndKillsEveryProcessOfTheTree(int wrapper, @TempDir Path dir) throws Exception {
        int port = FreePorts.next();
        try (StoreProcess store = new StoreProcess(wrapped(wrapper, port), "127.0.0.1:" + port,
                dir.resolve("store.log"))) {
            store.start(Duration.ofSeconds(30));
            assertEquals(StoreProcess.Probe.ANSWERED, store.probe(Duration.ofSeconds(5)));
            List<ProcessHandle> tree = store.tree();
            long server = serverPid(tree);
            if (wrapper > 0) {
                assertTrue(server != store.pid(), "the server must be a descendant here: " + tree);
            }

            List<Long> stopped = store.pause();
            assertTrue(stopped.contains(server), stopped + " must contain the server " + server);
            for (ProcessHandle h : tree) {
                assertEquals("T", awaitState(h.pid(), "T"), "pid " + h.pid() + " (" + h.info().command().orElse("?")
                        + ") must be stopped");
            }
            assertEquals(StoreProcess.Probe.HUNG, store.probe(Duration.ofMillis(500)));

            store.restart(Duration.ofSeconds(30));
            for (ProcessHandle h : tree) {
                assertTrue(ProcessTree.gone(h), "pid " + h.pid() + " must be gone after the kill -9");
            }
            assertEquals(StoreProcess.Probe.ANSWERED, store.probe(Duration.ofSeconds(5)));
            tree = store.tree();
            store.close();
            for (ProcessHandle h : tree) {
                assertTrue(ProcessTree.gone(h), "pid " + h.pid() + " must be gone after close");
            }
            assertEquals(StoreProcess.Probe.REFUSED, store.probe(Duration.ofSeconds(1)));
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {0, 1, 2, 3})
    void theProxyKillKillsEveryProcessOfTheTree(int wrapper, @TempDir Path dir) throws Exception {
        try (ProxyProcess proxy = new ProxyProcess(wrapped(wrapper, 0), dir.resolve("proxy.log"))) {
            proxy.start(Duration.ofSeconds(30));
            List<ProcessHandle> tree = ProcessHandle.current().children()
                    .filter(h -> h.info().commandLine().orElse("").contains(TreeServer.class.getName())
                            || h.descendants().anyMatch(d -> d.info().commandLine().orElse("")
                            .contains(TreeServer.class.getName())))
                    .flatMap(h -> java.util.stream.Stream.concat(java.util.stream.Stream.of(h), h.descendants()))
                    .toList();
            serverPid(tree);
            assertNull(proxy.kill9(), "the kill -9 must take effect");
            for (ProcessHandle h : tree) {
                assertTrue(ProcessTree.gone(h), "pid " + h.pid() + " must be gone after the kill -9");
            }
            proxy.start(Duration.ofSeconds(30));   // and it comes back
        }
    }
}
