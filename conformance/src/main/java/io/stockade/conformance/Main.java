package io.stockade.conformance;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import io.stockade.conformance.report.Reports;

/**
 * {@code java -jar stockade-conformance.jar --target target.yaml [--scenario NAME]... [--duration 30s]
 * [--report DIR] [--lease SPEC]}: runs the suite (with {@code --lease}, the writers take their leases from there
 * instead of the target file's {@code lease.provider}: {@code redis://host:port}, {@code etcd:<urls>},
 * {@code postgres:<jdbc url>}, {@code zookeeper:<host:port,...>}, {@code dynamodb:<table>,<region>[,<endpoint>]},
 * {@code consul:<url>}, {@code counter}), prints the table, writes {@code conformance-report.json},
 * {@code conformance-report.html} (a timeline per scenario) and {@code TEST-conformance.xml} (JUnit) into the
 * report directory (default {@code ./conformance-report}). Exit code 0 only when every scenario passed; 1 when one
 * failed or was inconclusive; 2 on bad arguments.
 */
public final class Main {

    private Main() {
    }

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String[] args) {
        Path targetFile = null;
        Path reportDir = Path.of("conformance-report");
        List<Scenario> scenarios = new ArrayList<>();
        String duration = null;
        String lease = null;
        try {
            for (int i = 0; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--target" -> targetFile = Path.of(args[++i]);
                    case "--scenario" -> {
                        // limit 0 drops trailing empty strings: a trailing comma ("a,b,") names no scenario
                        for (String s : args[++i].split(",", 0)) {
                            scenarios.add(Scenario.parse(s));
                        }
                    }
                    case "--duration" -> duration = args[++i];
                    case "--report" -> reportDir = Path.of(args[++i]);
                    case "--lease" -> lease = args[++i];
                    case "--help", "-h" -> {
                        usage();
                        return 0;
                    }
                    default -> throw new IllegalArgumentException("unknown argument " + a);
                }
            }
            if (targetFile == null) {
                throw new IllegalArgumentException("--target FILE is required");
            }
        } catch (RuntimeException e) {
            System.err.println("error: " + e.getMessage());
            usage();
            return 2;
        }
        try {
            Target target = Target.load(targetFile);
            if (lease != null) {
                try {
                    target = target.withLeaseProvider(lease);
                } catch (IllegalArgumentException e) {
                    System.err.println("error: " + e.getMessage());
                    usage();
                    return 2;
                }
            }
            Conformance suite = Conformance.of(target).workDir(reportDir.resolve("work"));
            if (!scenarios.isEmpty()) {
                suite.scenarios(scenarios.toArray(Scenario[]::new));
            }
            if (duration != null) {
                suite.duration(Target.duration(duration));
            }
            Conformance.Result result = suite.run();
            Files.createDirectories(reportDir);
            Files.writeString(reportDir.resolve("conformance-report.json"), result.json(), StandardCharsets.UTF_8);
            Files.writeString(reportDir.resolve("conformance-report.html"), result.html(), StandardCharsets.UTF_8);
            Files.writeString(reportDir.resolve("TEST-conformance.xml"),
                    Reports.junitXml(target.name(), result.info(), result.scenarios()), StandardCharsets.UTF_8);
            System.out.print(Reports.table(result.scenarios()));
            System.out.print(Reports.details(result.scenarios()));
            System.out.println("\n" + result.summary());
            System.out.println("\nreports: " + reportDir.toAbsolutePath());
            return result.passed() ? 0 : 1;
        } catch (Exception e) {
            System.err.println("error: " + e);
            e.printStackTrace(System.err);
            return 2;
        }
    }

    private static void usage() {
        System.err.println("usage: java -jar stockade-conformance.jar --target target.yaml [--scenario NAME[,NAME]]"
                + " [--duration 30s] [--report DIR]\n       [--lease redis://host:port | etcd:URLS | postgres:JDBC_URL"
                + " | zookeeper:HOST:PORT,... | dynamodb:TABLE,REGION[,ENDPOINT]"
                + " | consul:URL | counter]"
                + "\nscenarios: "
                + Arrays.stream(Scenario.values()).map(Scenario::id).toList());
    }
}
