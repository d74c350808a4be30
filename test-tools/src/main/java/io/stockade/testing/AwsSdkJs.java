package io.stockade.testing;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import org.jspecify.annotations.Nullable;

/**
 * The AWS SDK for JavaScript v3 as users run it: the npm packages {@code @aws-sdk/client-s3},
 * {@code @aws-sdk/lib-storage} and {@code @aws-sdk/s3-request-presigner}, which {@code ./test.sh} installs into
 * {@code .tools/aws-sdk-js} (ignored by git), and the machine's Node.js to run scripts with them.
 * {@code -Dstockade.aws-sdk-js=<a node_modules directory>} points elsewhere.
 */
public final class AwsSdkJs {
    /** The packages, as {@code ./test.sh} pins them. */
    public static final List<String> PACKAGES = List.of("@aws-sdk/client-s3@3.1175.0",
            "@aws-sdk/lib-storage@3.1175.0", "@aws-sdk/s3-request-presigner@3.1169.0");
    /** How to install them. */
    public static final String INSTALL = "./test.sh installs it: npm install --prefix .tools/aws-sdk-js "
            + String.join(" ", PACKAGES);

    private AwsSdkJs() {
    }

    /**
     * The {@code node_modules} directory holding the three packages: {@code -Dstockade.aws-sdk-js}, else
     * {@code .tools/aws-sdk-js/node_modules} in this or a parent directory; null when there is none.
     */
    public static @Nullable Path nodeModules() {
        String configured = System.getProperty("stockade.aws-sdk-js");
        if (configured != null && !configured.isBlank()) {
            return complete(Path.of(configured)) ? Path.of(configured).toAbsolutePath() : null;
        }
        for (Path dir = Path.of("").toAbsolutePath(); dir != null; dir = dir.getParent()) {
            Path modules = dir.resolve(".tools/aws-sdk-js/node_modules");
            if (complete(modules)) {
                return modules;
            }
        }
        return null;
    }

    private static boolean complete(Path modules) {
        return PACKAGES.stream().map(p -> p.substring(0, p.lastIndexOf('@')))
                .allMatch(name -> Files.isRegularFile(modules.resolve(name).resolve("package.json")));
    }

    /** The machine's Node.js, or null. */
    public static @Nullable Path node() {
        for (String candidate : List.of("/usr/bin/node", "/usr/local/bin/node", "/usr/bin/nodejs")) {
            if (Files.isExecutable(Path.of(candidate))) {
                return Path.of(candidate);
            }
        }
        return null;
    }

    /** Whether the packages and Node.js are installed. */
    public static boolean available() {
        return nodeModules() != null && node() != null;
    }
}
