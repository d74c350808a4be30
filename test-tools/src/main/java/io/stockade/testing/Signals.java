package io.stockade.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * SIGSTOP and SIGCONT for a test's own child processes (a zombie holder paused past its lease), each checked to have
 * taken effect: {@link #stop} returns once the kernel reports the process stopped ({@code T} in
 * {@code /proc/PID/stat}), {@link #cont} once it no longer does. A signal that did not land fails the test instead of
 * leaving it to pass for the wrong reason.
 */
public final class Signals {
    private static final Duration WAIT = Duration.ofSeconds(10);

    private Signals() {
    }

    /** {@code kill -STOP pid}, then waits (at most 10 s) until the process is stopped. */
    public static void stop(long pid) {
        send("STOP", pid);
        await(pid, true);
    }

    /** {@code kill -CONT pid}, then waits (at most 10 s) until the process runs again. */
    public static void cont(long pid) {
        send("CONT", pid);
        await(pid, false);
    }

    /** Whether the process is stopped by a signal now ({@code T} in {@code /proc/PID/stat}). */
    public static boolean stopped(long pid) {
        try {
            String stat = Files.readString(Path.of("/proc", Long.toString(pid), "stat"), StandardCharsets.US_ASCII);
            // pid (comm) state ...: comm may hold spaces and parentheses, the state follows the last ')'
            return stat.charAt(stat.lastIndexOf(')') + 2) == 'T';
        } catch (IOException e) {
            return false; // gone
        }
    }

    private static void send(String signal, long pid) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).inheritIO().start();
            if (!kill.waitFor(WAIT.toSeconds(), TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed");
            }
        } catch (IOException e) {
            throw new IllegalStateException("kill -" + signal + " " + pid + ": " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted sending SIG" + signal + " to " + pid, e);
        }
    }

    private static void await(long pid, boolean stopped) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (stopped(pid) != stopped) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("process " + pid + (stopped ? " did not stop" : " did not continue")
                        + " within " + WAIT.toSeconds() + " s");
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted waiting for process " + pid, e);
            }
        }
    }
}
