package io.stockade.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

import org.jspecify.annotations.Nullable;

/**
 * The AWS CLI version 1 (the Python package {@code awscli} 1.x: {@code pip install awscli}, Ubuntu 22.04's and
 * Debian 11's {@code awscli}), which loads its plugins differently from v2 (Debian 12's {@code /usr/bin/aws}).
 * {@code ./test.sh} installs it into {@code .tools/awscli-v1} (a Python venv, ignored by git) when no {@code aws}
 * on the PATH is v1. Found as: {@code $STOCKADE_AWS_CLI_V1}, else {@code .tools/awscli-v1/bin/aws} in this or a
 * parent directory, else an {@code aws} on the PATH whose {@code --version} says {@code aws-cli/1.}.
 */
public final class AwsCliV1 {
    /** The release {@code ./test.sh} installs. */
    public static final String RELEASE = "awscli==1.45.11";
    /** How to install it. */
    public static final String INSTALL = "./test.sh installs it: python3 -m venv .tools/awscli-v1 && "
            + ".tools/awscli-v1/bin/pip install " + RELEASE;

    /** What the first {@link #binary()} found (null: nothing), once {@link #searched}. */
    private static volatile @Nullable Path found;
    private static volatile boolean searched;

    private AwsCliV1() {
    }

    /** The {@code aws} executable of an AWS CLI v1, if the machine has one. */
    public static Optional<Path> binary() {
        if (!searched) {
            found = search().orElse(null);
            searched = true;
        }
        return Optional.ofNullable(found);
    }

    /** Whether the machine has one. */
    public static boolean available() {
        return binary().isPresent();
    }

    private static Optional<Path> search() {
        List<Path> candidates = new ArrayList<>();
        String configured = System.getenv("STOCKADE_AWS_CLI_V1");
        if (configured != null && !configured.isBlank()) {
            candidates.add(Path.of(configured));
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            candidates.add(dir.resolve(".tools/awscli-v1/bin/aws"));
        }
        String path = System.getenv("PATH");
        if (path != null) {
            for (String entry : path.split(":", -1)) {
                if (!entry.isEmpty()) {
                    candidates.add(Path.of(entry, "aws"));
                }
            }
        }
        for (Path candidate : candidates) {
            if (Files.isExecutable(candidate) && version(candidate).startsWith("aws-cli/1.")) {
                return Optional.of(candidate.toAbsolutePath());
            }
        }
        return Optional.empty();
    }

    /** What {@code aws --version} prints (v1 prints it on standard error, v2 on standard output). */
    static String version(Path aws) {
        try {
            Process p = new ProcessBuilder(aws.toString(), "--version").redirectErrorStream(true).start();
            byte[] out = p.getInputStream().readAllBytes();
            if (!p.waitFor(30, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                return "";
            }
            return new String(out, StandardCharsets.UTF_8).strip();
        } catch (IOException e) {
            return "";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "";
        }
    }
}
