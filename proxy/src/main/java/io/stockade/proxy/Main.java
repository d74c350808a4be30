package io.stockade.proxy;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Objects;

import io.stockade.policy.PolicyException;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.FieldLocator;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.admin.FenceCommand;
import io.stockade.proxy.log.JsonLineHandler;
import io.stockade.proxy.sql.install.SqlCommand;

import com.sun.management.HotSpotDiagnosticMXBean;
import io.helidon.logging.common.LogConfig;

/**
 * The command line: {@code java -jar stockade-proxy.jar --config FILE [--port N] [--management-port N]}, or
 * {@code java -jar stockade-proxy.jar fence --config FILE OPERATION ...} for the fence-state operations
 * ({@link FenceCommand}).
 * <p>
 * Exit codes: 0 after a clean stop, 2 for a bad command line or policy file (with a message that says what and
 * where), 1 when the proxy cannot start (the store or a backend cannot be opened, the port is taken).
 */
public final class Main {
    static final int EXIT_USAGE = 2;
    static final int EXIT_START_FAILED = 1;

    private static final String USAGE = """
            usage: stockade-proxy --config FILE [--port N] [--management-port N]
                   stockade-proxy fence --config FILE OPERATION ...   (fence --help lists the operations)
                   stockade-proxy sql install|uninstall --config FILE (sql --help: the SQL fence)

              --config FILE   the policy file (YAML); see policies/README.md
              --port N        listen on port N instead of the file's server.port (0 = any free port)
              --management-port N
                              serve /metrics and /admin on port N only (server.management.port; its host is
                              server.management.host, else server.host)
              --help          this text
            """;

    private Main() {
    }

    public static void main(String[] args) {
        int code = run(args, System.out, System.err);
        if (code != 0 || (args.length > 0 && (args[0].equals("fence") || args[0].equals("sql")))) {
            System.exit(code);
        }
    }

    /** Runs the command line; returns an exit code, or blocks while the server runs. */
    static int run(String[] args, PrintStream out, PrintStream err) {
        if (args.length > 0 && args[0].equals("fence")) {
            return FenceCommand.run(Arrays.asList(args).subList(1, args.length), System.in, out, err);
        }
        if (args.length > 0 && args[0].equals("sql")) {
            return SqlCommand.run(Arrays.asList(args).subList(1, args.length), out, err);
        }
        Path config = null;
        Integer port = null;
        Integer managementPort = null;
        for (int i = 0; i < args.length; i++) {
            String arg = args[i];
            switch (arg) {
                case "--help", "-h" -> {
                    out.print(USAGE);
                    return 0;
                }
                case "--config", "--port", "--management-port" -> {
                    if (i + 1 >= args.length) {
                        return usage(err, arg + " needs a value");
                    }
                    String value = args[++i];
                    if (arg.equals("--config")) {
                        config = Path.of(value);
                        continue;
                    }
                    int number;
                    try {
                        number = Integer.parseInt(value);
                    } catch (NumberFormatException e) {
                        return usage(err, arg + " must be a number 0..65535, was '" + value + "'");
                    }
                    if (number < 0 || number > 65535) {
                        return usage(err, arg + " must be a number 0..65535, was " + number);
                    }
                    if (arg.equals("--port")) {
                        port = number;
                    } else {
                        managementPort = number;
                    }
                }
                default -> {
                    return usage(err, "unknown argument '" + arg + "' in " + Arrays.toString(args));
                }
            }
        }
        if (config == null) {
            return usage(err, "--config FILE is required");
        }
        if (!Files.isRegularFile(config)) {
            err.println("stockade: policy file " + config.toAbsolutePath() + " does not exist or is not a file");
            return EXIT_USAGE;
        }
        StockadeConfig loaded;
        try {
            loaded = PolicyLoader.load(config);
        } catch (PolicyException e) {
            err.println("stockade: " + config + " is not a valid policy file:");
            err.println(e.getMessage());
            return EXIT_USAGE;
        }
        if (port != null) {
            loaded = loaded.withPort(port);
        }
        if (managementPort != null) {
            if (managementPort != 0 && managementPort == loaded.server().port()) {
                return usage(err, "--management-port needs a port of its own: the data port is " + managementPort
                        + " too");
            }
            loaded = loaded.withManagementPort(managementPort);
        }

        BootstrapChecks.Outcome checks = BootstrapChecks.run(loaded.server(), System.getProperty("sun.jnu.encoding"),
                exitsOnOutOfMemory(), Boolean.getBoolean(BootstrapChecks.ENFORCE_PROPERTY));
        if (checks.refusal() != null) {
            err.println("stockade: " + checks.refusal());
            return EXIT_START_FAILED;
        }
        checks.warnings().forEach(w -> err.println("stockade: " + w));
        LogConfig.configureRuntime();
        JsonLineHandler.install();
        StockadeServer server;
        try {
            server = StockadeServer.start(loaded);
        } catch (StockadeServer.ListenFailure e) {
            err.println("stockade: " + e.getMessage());
            return EXIT_START_FAILED;
        } catch (StockadeServer.InvalidDefinitions e) {
            err.println("stockade: " + config + " does not match its database (PostgreSQL analysed each statement"
                    + " without running it):");
            Path file = config;
            for (String problem : e.problems()) {
                // located as the loader locates its own errors: file:line:column: field: message
                String field = problem.substring(0, problem.indexOf(": ")).replaceFirst(" \\(.*$", "");
                err.println(FieldLocator.locate(file, field).map(at -> file + ":" + at[0] + ":" + at[1] + ": ")
                        .orElse(file + ": ") + problem);
            }
            return EXIT_USAGE;
        } catch (IOException | RuntimeException e) {
            err.println("stockade: could not start: " + e.getMessage());
            return EXIT_START_FAILED;
        }
        Runtime.getRuntime().addShutdownHook(new Thread(server::close, "stockade-shutdown"));
        // The management line first: tests and scripts wait for exactly the listening line, last.
        if (loaded.server().management() != null) {
            out.println("Stockade management (/metrics, /admin, /health) on http://" + literal(server.managementHost())
                    + ":" + server.managementPort());
        }
        if (server.sql() != null) {
            out.println("Stockade SQL listener on postgresql://" + literal(server.sql().host()) + ":"
                    + server.sql().port() + " (database " + Objects.requireNonNull(loaded.sql(),
                    "the SQL listener runs for the file's sql section").database().name() + ")");
        }
        out.println("Stockade listening on " + server.scheme() + "://" + literal(server.host()) + ":" + server.port());
        out.flush();
        try {
            Thread.currentThread().join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        return 0;
    }

    /** Whether this JVM ends on an {@code OutOfMemoryError} ({@code -XX:+ExitOnOutOfMemoryError} or the crash flag). */
    static boolean exitsOnOutOfMemory() {
        try {
            var diagnostics = ManagementFactory.getPlatformMXBean(
                    HotSpotDiagnosticMXBean.class);
            return diagnostics.getVMOption("ExitOnOutOfMemoryError").getValue().equals("true")
                    || diagnostics.getVMOption("CrashOnOutOfMemoryError").getValue().equals("true");
        } catch (RuntimeException e) {
            return true; // not a HotSpot JVM: nothing to check
        }
    }

    private static int usage(PrintStream err, String message) {
        err.println("stockade: " + message);
        err.print(USAGE);
        return EXIT_USAGE;
    }

    /** A host as a URL writes it: an IPv6 literal in brackets. */
    static String literal(String host) {
        return host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
    }
}
