package io.stockade.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * {@code java -jar JAR ARGS} as a user types it, in a directory of the test's, with a Java of the test's choosing
 * (an older one under /usr/lib/jvm, or {@link Jvm#binary()}): what it printed on each stream and how it exited.
 *
 * @param code what it exited with
 * @param out  what it printed on standard output
 * @param err  what it printed on standard error
 */
public record JarRun(int code, String out, String err) {

    /** Runs it and waits up to 60 s; a run that does not end is a failure of the test. */
    public static JarRun run(Path dir, String java, Path jar, String... args) throws IOException,
            InterruptedException {
        List<String> cmd = new ArrayList<>(List.of(java, "-jar", jar.toString()));
        cmd.addAll(List.of(args));
        Path out = Files.createTempFile(dir, "out", ".txt");
        Path err = Files.createTempFile(dir, "err", ".txt");
        Process p = new ProcessBuilder(cmd).directory(dir.toFile())
                .redirectOutput(out.toFile()).redirectError(err.toFile()).start();
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(cmd + " did not end within 60 s");
        }
        return new JarRun(p.exitValue(), Files.readString(out), Files.readString(err));
    }
}
