package io.stockade.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.extension.ConditionEvaluationResult;
import org.junit.jupiter.api.extension.ExecutionCondition;
import org.junit.jupiter.api.extension.ExtensionContext;

/** The programs the tests need of the machine, each with the command that installs it ({@link RequiresTools}). */
public final class Tools {
    private Tools() {
    }

    /** A program a test class needs. */
    public enum Tool {
        ETCD("etcd", "apt-get install -y etcd-server", EtcdServer::available),
        REDIS("redis-server", "apt-get install -y redis-server", RedisServer::available),
        DYNALITE("dynalite", "./test.sh installs it: npm install --prefix .tools/dynalite dynalite@4.0.0",
                Dynalite::available),
        AWS_SDK_JS("the AWS SDK for JavaScript v3 (.tools/aws-sdk-js) and Node.js", AwsSdkJs.INSTALL,
                AwsSdkJs::available),
        HAPROXY("haproxy", "apt-get install -y haproxy", () -> binary("haproxy").isPresent()),
        NGINX("nginx", "apt-get install -y nginx-light", () -> binary("nginx").isPresent()),
        AWS_CLI("the AWS CLI (/usr/bin/aws)", "apt-get install -y awscli",
                () -> Files.isExecutable(Path.of("/usr/bin/aws"))),
        AWS_CLI_V1("the AWS CLI v1 (pip's awscli 1.x)", AwsCliV1.INSTALL, AwsCliV1::available),
        BOTO3("boto3 (python3 -c 'import boto3')", "apt-get install -y python3-boto3",
                () -> runs("/usr/bin/python3", "-c", "import boto3")),
        PYTHON_REQUESTS("python3-requests (python3 -c 'import requests')", "apt-get install -y python3-requests",
                () -> runs("/usr/bin/python3", "-c", "import requests")),
        RCLONE("rclone (/usr/bin/rclone)", "apt-get install -y rclone",
                () -> Files.isExecutable(Path.of("/usr/bin/rclone"))),
        S3CMD("s3cmd (/usr/bin/s3cmd)", "apt-get install -y s3cmd",
                () -> Files.isExecutable(Path.of("/usr/bin/s3cmd"))),
        RESTIC("restic (/usr/bin/restic)", "apt-get install -y restic",
                () -> Files.isExecutable(Path.of("/usr/bin/restic"))),
        PROMTOOL("promtool (Prometheus's rule checker)", "apt-get install -y prometheus",
                () -> binary("promtool").isPresent()),
        PGBOUNCER("pgbouncer (Debian's, /usr/sbin/pgbouncer)", "apt-get install -y pgbouncer",
                PgBouncer::available),
        JAVA_BEFORE_21("a Java older than 21 under /usr/lib/jvm (what an old Java is told)",
                "apt-get install -y openjdk-17-jre-headless", () -> Jvm.olderThan21().isPresent()),
        PSQL("psql (Debian postgresql-client)", "apt-get install -y postgresql-client",
                () -> SqlClients.psql() != null),
        PSYCOPG2("psycopg2 (/usr/bin/python3 -c 'import psycopg2')", "apt-get install -y python3-psycopg2",
                () -> runs("/usr/bin/python3", "-c", "import psycopg2")),
        NODE_PG("node-postgres (.tools/node-pg) and Node.js", SqlClients.NODE_PG_INSTALL,
                SqlClients::nodePgAvailable),
        POSTGRES_CLUSTER("PostgreSQL 15's initdb/pg_ctl and root (a private cluster per test)",
                "apt-get install -y postgresql, and run the tests as root", PgCluster::available),
        SCRATCH_FILESYSTEM("root with mount, losetup, mkfs.ext4 and e2fsck (a tmpfs or ext4 the test makes)",
                "apt-get install -y mount e2fsprogs, and run the tests as root", ScratchFilesystem::available),
        NETNS("root with iproute2's ip and tc (a network namespace the test makes)",
                "apt-get install -y iproute2, and run the tests as root", NetNs::available);

        private final String label;
        private final String install;
        @SuppressWarnings("ImmutableEnumChecker") // stateless lambdas and method references: nothing to mutate
        private final BooleanSupplier available;

        Tool(String label, String install, BooleanSupplier available) {
            this.label = label;
            this.install = install;
            this.available = available;
        }

        /** Whether the machine has it. */
        public boolean available() {
            return available.getAsBoolean();
        }

        /** What it is called, for messages. */
        public String label() {
            return label;
        }

        /** The command that installs it. */
        public String install() {
            return install;
        }
    }

    /** Whether this is a CI run ({@code CI=true}, as {@code .ci/run} sets it): a missing tool is a failure. */
    public static boolean ci() {
        return "true".equalsIgnoreCase(System.getenv("CI"));
    }

    /**
     * Inside one test (or a {@code @BeforeEach}): the tools it needs. A missing one skips the test, saying how to
     * install it; on a CI run it fails it. A whole class that needs a tool says so with {@link RequiresTools}
     * instead (an assumption in {@code @BeforeAll} hides the class from the report).
     */
    public static void require(Tool... tools) {
        for (Tool tool : tools) {
            if (!tool.available()) {
                String message = tool.label() + " is not installed (" + tool.install() + ")";
                if (ci()) {
                    throw new IllegalStateException(message + ": missing on a CI run (CI=true); ./test.sh installs"
                            + " it");
                }
                Assumptions.abort(message);
            }
        }
    }

    /** An executable of that name in the usual system directories. */
    public static Optional<Path> binary(String name) {
        for (String dir : List.of("/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin")) {
            Path p = Path.of(dir, name);
            if (Files.isExecutable(p)) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    private static boolean runs(String... command) {
        try {
            Process p = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
            return p.waitFor(30, TimeUnit.SECONDS) && p.exitValue() == 0;
        } catch (IOException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** The condition behind {@link RequiresTools}, evaluated once per test class. */
    public static final class Condition implements ExecutionCondition {
        @Override
        public ConditionEvaluationResult evaluateExecutionCondition(ExtensionContext context) {
            if (context.getTestMethod().isPresent()) {
                return ConditionEvaluationResult.enabled("checked for the class");
            }
            RequiresTools required = context.getRequiredTestClass().getAnnotation(RequiresTools.class);
            if (required == null) {
                return ConditionEvaluationResult.enabled("no tools required");
            }
            List<String> missing = new ArrayList<>();
            for (Tool tool : required.value()) {
                if (!tool.available()) {
                    missing.add(tool.label() + " (" + tool.install() + ")");
                }
            }
            if (missing.isEmpty()) {
                return ConditionEvaluationResult.enabled("every tool is installed");
            }
            String message = context.getRequiredTestClass().getSimpleName() + " needs " + String.join(", ", missing);
            if (ci()) {
                throw new IllegalStateException(message + ": missing on a CI run (CI=true), where every test class"
                        + " must run; ./test.sh installs them");
            }
            System.err.println("SKIPPED " + message);
            return ConditionEvaluationResult.disabled(message);
        }
    }
}
