package io.stockade.conformance.run;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class SignalsTest {
    /** The state letter of /proc/pid/stat: T stopped, S sleeping. */
    private static char state(long pid) throws IOException {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        return stat.charAt(stat.lastIndexOf(')') + 2);
    }

    /** Waits (at most 5 s) until the process is, or is no longer, stopped; returns its state then. */
    private static char awaitStopped(long pid, boolean stopped) throws IOException {
        long deadline = System.nanoTime() + Duration.ofSeconds(5).toNanos();
        char state = state(pid);
        while ((state == 'T') != stopped && System.nanoTime() < deadline) {
            Thread.onSpinWait();
            state = state(pid);
        }
        return state;
    }

    @Test
    void aStopLandsAndAContResumes() throws Exception {
        Process sleeper = new ProcessBuilder("sleep", "30").start();
        try (Signals signals = Signals.start()) {
            assertTrue(signals.send("STOP", sleeper.pid()));
            assertEquals('T', awaitStopped(sleeper.pid(), true), "stopped");
            assertTrue(signals.send("CONT", sleeper.pid()));
            assertNotEquals('T', awaitStopped(sleeper.pid(), false), "resumed (sleeping, or running a moment)");
            assertFalse(signals.send("CONT", Integer.MAX_VALUE), "no such process: a failure, not an exception");
            assertThrows(IllegalArgumentException.class, () -> signals.send("STOP; rm -rf x", sleeper.pid()));
        } finally {
            sleeper.destroyForcibly().waitFor();
        }
    }

    @Test
    void closingEndsTheShell() throws Exception {
        Signals signals = Signals.start();
        signals.close();
        assertThrows(IOException.class, () -> signals.send("CONT", ProcessHandle.current().pid()));
    }
}
