package io.stockade.client;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code ./quickstart.sh --example s3} from a clean clone, its first build included: {@link ExamplesIT}'s longest
 * test (about half its time), in a class of its own so that the module's test JVMs can run it beside the other
 * examples instead of after them.
 */
class ExampleFromACleanCloneIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();

    @TempDir
    Path dir;

    /**
     * {@code ./quickstart.sh --example s3} as a new user runs it: from a clean clone of this repository (what is
     * committed), with a local Maven repository that holds every third-party artifact but none of the project's
     * ({@code io/stockade} left out, as on a machine that never built it; offline), so the example builds what it
     * needs itself (the proxy, and s3proxy from its own pom, no test module). The session it prints is replayed
     * line by line as printed (curl signing with {@code --aws-sigv4}): each answer is what its comment says.
     */
    @Test
    void s3StartsFromACleanCloneAndItsPrintedSessionHolds() throws Exception {
        Path clone = dir.resolve("clone");
        exec(dir, "git", "clone", "--quiet", ROOT.toString(), clone.toString());
        Path repo = withoutTheProjectsArtifacts(dir.resolve("m2"));
        Files.createDirectories(clone.resolve(".mvn"));
        Files.writeString(clone.resolve(".mvn").resolve("maven.config"), "-o\n-Dmaven.repo.local=" + repo + "\n");
        // its first build on C1 alone, as every child JVM of the tests (half the CPU for a build of a minute)
        ExamplesIT.Running r = ExamplesIT.start(dir, clone, 900, "s3", "MAVEN_OPTS", "-XX:TieredStopAtLevel=1");
        try {
            List<String> session = r.printed().stream().filter(l -> l.startsWith("curl ")).toList();
            assertEquals(3, session.size(), r.printed().toString());
            for (String line : session) {
                int comment = line.lastIndexOf(" # ");
                String command = line.substring(0, comment).strip();
                String expected = line.substring(comment + 3).strip().split(" ")[0];
                String answer = exec(dir, "bash", "-c", command + " -s");
                if (expected.matches("[0-9]{3}")) {
                    assertTrue(answer.startsWith("HTTP/1.1 " + expected + " "), line + "\n" + answer);
                } else {
                    assertEquals(expected, answer, line);
                }
            }
            assertFalse(Files.exists(repo.resolve("io").resolve("stockade")), "nothing of the project installed");
            assertFalse(Files.exists(clone.resolve("proxy").resolve("target").resolve("test-classes")),
                    "the first build compiles no test code (bin/stockade: mvn package -Dmaven.test.skip=true)");
        } finally {
            int store = URI.create(r.printed().stream().filter(l -> l.startsWith("# s3proxy: ")).findFirst()
                    .orElseThrow().substring("# s3proxy: ".length()).split(" ")[0]).getPort();
            ExamplesIT.stop(r, r.proxy().getPort(), store);
        }
    }

    /** A local Maven repository of links to ~/.m2/repository's entries, but without io/stockade. */
    private static Path withoutTheProjectsArtifacts(Path repo) throws IOException {
        Path m2 = Path.of(System.getProperty("maven.repo.local",
                Path.of(System.getProperty("user.home"), ".m2", "repository").toString()));
        Files.createDirectories(repo.resolve("io"));
        try (var top = Files.list(m2)) {
            for (Path entry : top.toList()) {
                if (!entry.getFileName().toString().equals("io")) {
                    Files.createSymbolicLink(repo.resolve(entry.getFileName().toString()), entry);
                }
            }
        }
        if (Files.isDirectory(m2.resolve("io"))) {
            try (var io = Files.list(m2.resolve("io"))) {
                for (Path entry : io.toList()) {
                    if (!entry.getFileName().toString().equals("stockade")) {
                        Files.createSymbolicLink(repo.resolve("io").resolve(entry.getFileName().toString()), entry);
                    }
                }
            }
        }
        return repo;
    }

    /** Runs a command in {@code cwd}; its standard output (it must exit with 0). */
    private static String exec(Path cwd, String... command) throws Exception {
        Process p = new ProcessBuilder(command).directory(cwd.toFile()).redirectErrorStream(false).start();
        byte[] out = p.getInputStream().readAllBytes();
        String err = new String(p.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), List.of(command) + " did not end");
        assertEquals(0, p.exitValue(), List.of(command) + ": " + err);
        return new String(out, StandardCharsets.UTF_8);
    }
}
