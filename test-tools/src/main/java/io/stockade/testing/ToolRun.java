package io.stockade.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

/**
 * A command-line tool the tests drive as its users do (the AWS CLI, s3cmd, restic, rclone, Node.js with the AWS SDK),
 * run to its end: its exit code and what it printed.
 *
 * @param code the exit code
 * @param out  what it wrote to stdout
 * @param err  what it wrote to stderr
 */
public record ToolRun(int code, String out, String err) {
    /**
     * Runs {@code command} in {@code dir} and waits for its end. Its environment is the test JVM's without the
     * variables {@code drop} accepts (a developer's own {@code AWS_*} or {@code RCLONE_*} settings must not reach the
     * tool), plus {@code env}. Its stdout and stderr go to new files in {@code scratch}, so a chatty tool never
     * blocks on a full pipe, and nothing is added to {@code dir}, which a test may list.
     *
     * @throws AssertionError when it does not end within {@code timeout} (it is killed first)
     */
    public static ToolRun run(List<String> command, Path dir, Path scratch, Predicate<String> drop,
                              Map<String, String> env, Duration timeout) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(command).directory(dir.toFile());
        Path out = Files.createTempFile(scratch, "out", ".txt");
        Path err = Files.createTempFile(scratch, "err", ".txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().keySet().removeIf(drop);
        pb.environment().putAll(env);
        Process p = pb.start();
        if (!p.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(command + " did not finish in " + timeout.toSeconds() + " s");
        }
        return new ToolRun(p.exitValue(), Files.readString(out), Files.readString(err));
    }

    /** Its stdout, line by line. */
    public List<String> lines() {
        return out.lines().toList();
    }

    @Override
    public String toString() {
        return "exit " + code + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
    }
}
