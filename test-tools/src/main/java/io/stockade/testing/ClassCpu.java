package io.stockade.testing;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.engine.support.descriptor.ClassSource;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;

/**
 * Where a suite's CPU goes, by test class: when a class ends, one line in {@code target/test-cpu.tsv} of the module
 * (the class, its wall seconds, and the CPU seconds of the test JVM plus those of the child processes it reaped while
 * the class ran: the proxies, writers, etcd members and CLIs the class started and stopped), its result and the test
 * JVM's PID. Lines are appended (a fresh clone's {@code target} starts empty). Registered with the
 * JUnit Platform by {@code META-INF/services}, so every module whose tests have test-tools on their class path writes
 * it; read with {@code sort -t$'\t' -k3 -rn target/test-cpu.tsv}.
 *
 * <p>Exact where a test JVM runs its classes one after another (the CPU of the JVM is the class's); where two classes
 * of one JVM overlap, each is charged the other's CPU too. PostgreSQL's backends are not children: their CPU is not
 * here. Linux only ({@code /proc/self/stat}); elsewhere it writes nothing.
 */
public final class ClassCpu implements TestExecutionListener {
    /** Linux's USER_HZ, the unit of {@code /proc/[pid]/stat}'s times, on every architecture the project builds on. */
    private static final double TICKS_PER_SECOND = 100.0;
    private static final Path STAT = Path.of("/proc/self/stat");

    private record Start(long nanos, long ticks) {
    }

    private final Map<String, Start> started = new ConcurrentHashMap<>();

    @Override
    public void executionStarted(TestIdentifier id) {
        if (className(id).isPresent()) {
            started.put(id.getUniqueId(), new Start(System.nanoTime(), ticks()));
        }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        Start start = started.remove(id.getUniqueId());
        if (start == null || start.ticks < 0) {
            return;
        }
        long ticks = ticks();
        if (ticks < 0) {
            return;
        }
        String line = String.format(Locale.ROOT, "%s\t%.1f\t%.1f\t%s\t%d%n", className(id).orElseThrow(),
                (System.nanoTime() - start.nanos) / 1e9, (ticks - start.ticks) / TICKS_PER_SECOND,
                result.getStatus(), ProcessHandle.current().pid());
        append(line);
    }

    private static Optional<String> className(TestIdentifier id) {
        return id.getSource().filter(ClassSource.class::isInstance).map(s -> ((ClassSource) s).getClassName());
    }

    private static synchronized void append(String line) {
        Path out = Path.of(System.getProperty("basedir", "."), "target", "test-cpu.tsv");
        try {
            Files.createDirectories(out.getParent());
            Files.writeString(out, line, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the class's CPU to " + out, e);
        }
    }

    /** utime + stime + cutime + cstime of this JVM, in ticks; -1 where there is no {@code /proc}. */
    private static long ticks() {
        String stat;
        try {
            stat = Files.readString(STAT, StandardCharsets.US_ASCII);
        } catch (IOException e) {
            return -1;
        }
        // after the command's closing parenthesis: state is field 3, utime 14, stime 15, cutime 16, cstime 17
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ", 16);
        return Long.parseLong(f[11]) + Long.parseLong(f[12]) + Long.parseLong(f[13]) + Long.parseLong(f[14]);
    }
}
