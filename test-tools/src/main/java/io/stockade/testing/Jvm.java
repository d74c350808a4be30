package io.stockade.testing;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Child JVMs for the process-level tests, one way: the {@code java} this JVM runs on, with its class path.
 *
 * <pre>{@code
 * Process p = Jvm.java(List.of("-Xmx64m"), "io.stockade.proxy.Main", "--config", config.toString()).start();
 * }</pre>
 */
public final class Jvm {
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
        cmd.addAll(jvmOptions);
        cmd.addAll(List.of("-cp", classPath(), mainClass));
        cmd.addAll(List.of(args));
        return new ProcessBuilder(cmd);
    }
}
