package io.stockade.conformance.run;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A launched process and everything it started: the suite signals the whole tree, so a launch command wrapped in
 * {@code sh -c} that forks the real server (rather than exec'ing it) is stopped and killed all the same.
 */
final class ProcessTree {
    private ProcessTree() {
    }

    /** {@code process} (while alive) and its descendants now. */
    static List<ProcessHandle> of(Process process) {
        List<ProcessHandle> all = new ArrayList<>();
        ProcessHandle root = process.toHandle();
        if (root.isAlive()) {
            all.add(root);
        }
        root.descendants().forEach(all::add);
        return all;
    }

    /**
     * Whether {@code h} has exited, reaped or not. A killed wrapper's children are reparented to the machine's init,
     * and until init reaps them they are zombies, which {@link ProcessHandle#isAlive()} counts as alive; a zombie
     * whose last thread has exited holds no port, file or lock, so it is gone here. (In a container whose PID 1
     * reaps late or never, waiting for the reaping took seconds a kill, or the 10 s below; on this project's CI
     * machines ~2 s.) Reads {@code /proc/PID/stat} and {@code /proc/PID/task}; without {@code /proc},
     * {@code isAlive()} alone.
     */
    static boolean gone(ProcessHandle h) {
        if (!h.isAlive()) {
            return true;   // first: a pid taken again by another process is not alive for this handle
        }
        Path proc = Path.of("/proc", Long.toString(h.pid()));
        try (Stream<Path> tasks = Files.list(proc.resolve("task"))) {
            String stat = Files.readString(proc.resolve("stat"));
            char state = stat.charAt(stat.lastIndexOf(')') + 2);
            // the leader of a killed multi-threaded process is a zombie while its other threads still exit, and
            // the last of them closes its sockets: gone once the leader is all that is left
            return (state == 'Z' || state == 'X') && tasks.count() <= 1;
        } catch (IOException | RuntimeException noProc) {
            return !h.isAlive();
        }
    }

    /**
     * SIGKILL to the whole tree (a snapshot taken first: a killed wrapper's children are reparented), then waits
     * up to 10 s for every one of them to be {@link #gone}. Returns the snapshot, to tell what survived.
     */
    static List<ProcessHandle> kill9(Process process) throws InterruptedException {
        List<ProcessHandle> all = of(process);
        all.forEach(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (ProcessHandle h : all) {
            while (!gone(h) && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
        }
        process.waitFor(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        return all;
    }

    /**
     * SIGTERM to the whole tree, SIGKILL to the launched process after 5 s and to whatever of the tree is still
     * alive after that.
     */
    static void terminate(Process process) {
        List<ProcessHandle> all = of(process);
        all.forEach(ProcessHandle::destroy);
        try {
            if (!process.waitFor(5, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        all.stream().filter(ProcessHandle::isAlive).forEach(ProcessHandle::destroyForcibly);
    }
}
