package io.stockade.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/**
 * Child JVMs for the process-level tests, one way: the {@code java} this JVM runs on, with its class path.
 *
 * <pre>{@code
 * Process p = Jvm.java(List.of("-Xmx64m"), "io.stockade.proxy.Main", "--config", config.toString()).start();
 * }</pre>
 */
public final class Jvm {
    /**
     * The JIT's every tier, for a child that relays gigabytes (a streaming test): children start on C1 alone, which
     * starts them on half the CPU but relays a 1 GiB body ~40 % slower (measured 2026-12-02 on S3StreamingIT).
     */
    public static final String FULL_JIT = "-XX:TieredStopAtLevel=4";

    private Jvm() {
    }

    /** The {@code java} executable of this JVM (as it was started, else {@code java.home/bin/java}). */
    public static String binary() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }

    /** This JVM's class path (under surefire/failsafe: the test class path). */
    public static String classPath() {
        return System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
    }

    /** {@code java -cp <this class path> mainClass args...}. */
    public static ProcessBuilder java(String mainClass, String... args) {
        return java(List.of(), mainClass, args);
    }

    /** {@code java <jvmOptions> -cp <this class path> mainClass args...}. */
    public static ProcessBuilder java(List<String> jvmOptions, String mainClass, String... args) {
        List<String> cmd = new ArrayList<>();
        cmd.add(binary());
        cmd.add("-XX:+ExitOnOutOfMemoryError"); // as every launcher of the proxy (it refuses to start without)
        // A child lives for seconds: C1 alone starts it on about half the CPU (C2 compiles what a short run never
        // repays; measured 2026-12-02: a proxy's start 1.6 s of CPU, 0.9 s with this). FULL_JIT overrides it.
        cmd.add("-XX:TieredStopAtLevel=1");
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", classPath(), mainClass));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd);
    }

    /**
     * A Java older than 21 under {@code /usr/lib/jvm} (its {@code java.home}; the newest such, by the
     * {@code JAVA_VERSION} of its {@code release} file), for the tests of what an old Java is told.
     */
    public static Optional<Path> olderThan21() {
        Path jvms = Path.of("/usr/lib/jvm");
        if (!Files.isDirectory(jvms)) {
            return Optional.empty();
        }
        Path best = null;
        int bestMajor = 0;
        try (Stream<Path> homes = Files.list(jvms)) {
            for (Path home : homes.sorted().toList()) {
                int major = major(home);
                if (major > 0 && major < 21 && major > bestMajor && Files.isExecutable(home.resolve("bin/java"))) {
                    best = home;
                    bestMajor = major;
                }
            }
        } catch (IOException e) {
            return Optional.empty();
        }
        return Optional.ofNullable(best);
    }

    /** The major version in a Java home's {@code release} file ("1.8.0_392": 8, "17.0.15": 17); 0 if none. */
    public static int major(Path home) {
        try {
            for (String line : Files.readAllLines(home.resolve("release"))) {
                if (line.startsWith("JAVA_VERSION=\"")) {
                    String v = line.substring("JAVA_VERSION=\"".length()).replace("\"", "");
                    v = v.startsWith("1.") ? v.substring(2) : v;
                    String digits = v.replaceFirst("[^0-9].*$", "");
                    return digits.isEmpty() ? 0 : Integer.parseInt(digits);
                }
            }
        } catch (IOException | NumberFormatException e) {
            return 0;
        }
        return 0;
    }
}
