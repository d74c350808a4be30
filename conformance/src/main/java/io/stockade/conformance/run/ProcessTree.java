package io.stockade.conformance.run;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

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
     * SIGKILL to the whole tree (a snapshot taken first: a killed wrapper's children are reparented), then waits
     * up to 10 s for every one of them to be gone. Returns the snapshot, to tell what survived.
     */
    static List<ProcessHandle> kill9(Process process) throws InterruptedException {
        List<ProcessHandle> all = of(process);
        all.forEach(ProcessHandle::destroyForcibly);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        for (ProcessHandle h : all) {
            while (h.isAlive() && System.nanoTime() < deadline) {
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
