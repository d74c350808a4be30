package io.stockade.proxy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.stockade.testing.Jvm;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The container image stays buildable from a clean checkout (once the Dockerfile copied four of the six
 * modules the root pom lists, so Maven refused to start). Docker is not available on the machines the tests run
 * on, so the build stage is replayed without it: its COPY lines copy the same paths from this checkout into an
 * empty directory standing for {@code /src}, and its RUN lines run there as written (Maven offline, and without
 * the dependency cache layer whose failure the image ignores). Then the runtime stage's
 * {@code COPY --from=build} sources must exist, the entry point's jar must be the one copied and must start, and the
 * tag in the Dockerfile must be the image the Kubernetes manifests and the compose file run.
 */
class DockerfileBuildIT {
    private static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    private static final Path DOCKERFILE = ROOT.resolve("deploy/Dockerfile");

    @Test
    void theBuildStageBuildsFromACleanCopyAndTheImageRunsWhatTheManifestsSay(@TempDir Path src) throws Exception {
        List<String> lines = logicalLines(Files.readString(DOCKERFILE));
        int runtime = -1;
        boolean inBuild = false;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            if (line.startsWith("FROM ")) {
                if (inBuild) {
                    runtime = i;
                    break;
                }
                inBuild = line.endsWith(" AS build");
                continue;
            }
            if (!inBuild) {
                continue;
            }
            if (line.startsWith("COPY ")) {
                String[] parts = line.substring(5).trim().split("\\s+");
                assertEquals(2, parts.length, "COPY with one source: " + line);
                copy(ROOT.resolve(parts[0]), parts[1].endsWith("/") || parts[1].equals("./")
                        ? src.resolve(parts[1]).resolve(Path.of(parts[0]).getFileName()) : src.resolve(parts[1]));
            } else if (line.startsWith("RUN ") && line.endsWith("|| true")) {
                // the image's dependency cache layer, whose failure the build ignores: replaying it only costs
                // time (minutes resolving every plugin); the next RUN proves the build without it
                assertTrue(line.contains("dependency:go-offline"), "a RUN whose failure is ignored: " + line);
            } else if (line.startsWith("RUN ")) {
                String command = line.substring(4).trim();
                if (!run(src, offline(command))) {
                    // an artifact this build has not resolved yet (a module built after the proxy's): online
                    assertTrue(run(src, command), "RUN " + command + " failed (see the output above)");
                }
            }
        }
        assertTrue(runtime > 0, "a build stage named 'build' followed by the runtime stage");

        String jarInImage = null;
        for (String line : lines.subList(runtime, lines.size())) {
            Matcher copy = Pattern.compile("COPY --from=build /src/(\\S+) (\\S+)").matcher(line);
            if (copy.matches()) {
                Path built = src.resolve(copy.group(1));
                assertTrue(Files.exists(built), "the build stage made no " + copy.group(1));
                if (Files.isDirectory(built)) {
                    try (Stream<Path> files = Files.list(built)) {
                        assertTrue(files.findAny().isPresent(), copy.group(1) + " is empty");
                    }
                }
                if (copy.group(1).endsWith("stockade-proxy.jar")) {
                    jarInImage = copy.group(2);
                }
            }
        }
        String entrypoint = lines.stream().filter(l -> l.startsWith("ENTRYPOINT ")).findFirst().orElseThrow();
        assertEquals("ENTRYPOINT [\"java\", \"-jar\", \"" + jarInImage + "\"]", entrypoint);
        // The jar starts as the image would start it (its libs beside it, on its Class-Path).
        Process help = new ProcessBuilder(Jvm.binary(), "-jar",
                src.resolve("proxy/target/stockade-proxy.jar").toString(), "--help")
                .redirectErrorStream(true).start();
        String usage = new String(help.getInputStream().readAllBytes());
        assertTrue(help.waitFor(60, TimeUnit.SECONDS), "the jar did not exit");
        assertEquals(0, help.exitValue(), usage);
        assertTrue(usage.contains("--config"), usage);

        String cmd = lines.stream().filter(l -> l.startsWith("CMD ")).findFirst().orElseThrow();
        Matcher tag = Pattern.compile("docker build -f deploy/Dockerfile -t (\\S+) \\.").matcher(
                Files.readString(DOCKERFILE));
        assertTrue(tag.find(), "the Dockerfile says how to build it, with its tag");
        String deployment = Files.readString(ROOT.resolve("deploy/k8s/base/deployment.yaml"));
        assertTrue(deployment.contains("image: " + tag.group(1) + "\n"), "deploy/k8s runs another image than "
                + tag.group(1));
        assertTrue(deployment.contains("args: " + cmd.substring(4).replace("\", \"", "\", \"")),
                "deploy/k8s passes other arguments than the image's CMD " + cmd);
        assertTrue(Files.readString(ROOT.resolve("deploy/compose.yaml")).contains("image: " + tag.group(1) + "\n"),
                "deploy/compose.yaml builds another tag than " + tag.group(1));
    }

    /** The Dockerfile's instructions, continuation lines joined, comments and blank lines dropped. */
    private static List<String> logicalLines(String text) {
        List<String> out = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String raw : text.split("\n")) {
            String line = raw.strip();
            if (current.isEmpty() && (line.isEmpty() || line.startsWith("#"))) {
                continue;
            }
            if (line.endsWith("\\")) {
                current.append(line, 0, line.length() - 1).append(' ');
                continue;
            }
            current.append(line);
            out.add(current.toString().strip());
            current.setLength(0);
        }
        return out;
    }

    private static void copy(Path from, Path to) throws IOException {
        assertTrue(Files.exists(from), "the Dockerfile copies " + ROOT.relativize(from) + ", which does not exist");
        if (!Files.isDirectory(from)) {
            Files.createDirectories(to.getParent());
            Files.copy(from, to, StandardCopyOption.REPLACE_EXISTING);
            return;
        }
        try (Stream<Path> tree = Files.walk(from)) {
            for (Path p : tree.toList()) {
                Path relative = from.relativize(p);
                if (relative.toString().startsWith("target")) {
                    continue; // a clean checkout has no build output
                }
                Path target = to.resolve(relative.toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(target);
                } else {
                    Files.createDirectories(target.getParent());
                    Files.copy(p, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    /**
     * A RUN line's Maven run, offline: the artifacts it needs are the ones this build already resolved (the image
     * fetches them in its cache layer), so the replay proves the reactor and the sources, not the network.
     */
    private static String offline(String command) {
        return command.startsWith("mvn ") ? "mvn -o " + command.substring(4) : command;
    }

    /**
     * Runs one RUN line with bash in the copied tree, with this JVM's JDK: true when it succeeded, false when an
     * offline Maven run lacked an artifact; any other failure fails the test.
     */
    private static boolean run(Path dir, String command) throws Exception {
        ProcessBuilder pb = new ProcessBuilder("bash", "-c", command).directory(dir.toFile())
                .redirectErrorStream(true);
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        // C1 alone, as every child JVM of the tests: a build of a minute never repays C2's compilations (measured
        // 2026-12-03: this package build 29 s of CPU with every tier, 15 s without C2); Maven 3.8's Guava warns on 24+
        pb.environment().put("MAVEN_OPTS", "-XX:TieredStopAtLevel=1"
                + (Runtime.version().feature() >= 24 ? " --sun-misc-unsafe-memory-access=allow" : ""));
        Process p = pb.start();
        String output = new String(p.getInputStream().readAllBytes());
        assertTrue(p.waitFor(15, TimeUnit.MINUTES), "RUN " + command + " did not finish");
        if (p.exitValue() == 0) {
            return true;
        }
        boolean missing = command.startsWith("mvn -o ") && output.contains("offline");
        assertTrue(missing, "RUN " + command + " failed:\n" + output);
        System.out.println("DockerfileBuildIT: offline build lacked an artifact, running online:\n" + output);
        return false;
    }
}
