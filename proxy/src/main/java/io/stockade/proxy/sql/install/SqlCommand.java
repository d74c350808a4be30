package io.stockade.proxy.sql.install;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;

import io.stockade.policy.PolicyException;
import io.stockade.policy.SqlConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.admin.FenceCommand;
import io.stockade.proxy.store.postgres.PostgresFenceStore;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;

/**
 * {@code stockade sql install|uninstall --config FILE [--url JDBC_URL] [--user NAME] [--password-file FILE]
 * [--dry-run] [--drop-fences]}: puts the fence of the file's {@code sql} section into its database, or takes it
 * out. Exit codes: 0 done (or printed), 2 a bad command line or policy file, 1 the database refused or could not be
 * reached (nothing changed: the script is one transaction).
 */
public final class SqlCommand {
    static final int EXIT_USAGE = 2;
    static final int EXIT_FAILED = 1;
    private static final String USAGE = """
            usage: stockade sql install   --config FILE [--url JDBC_URL] [--user NAME] [--password-file FILE]
                                          [--dry-run]
                   stockade sql uninstall --config FILE [--url JDBC_URL] [--user NAME] [--password-file FILE]
                                          [--dry-run] [--drop-fences]
                   stockade sql fence     --config FILE [--url JDBC_URL] [--user NAME] [--password-file FILE]
                                          OPERATION ...   (the operations of 'stockade fence --help')

              install     the fence role and schema, the fence table, the key of sql.secret-file, the check
                          functions and the triggers of every table in sql.policies (one transaction; run it
                          again after adding tables: it is idempotent; the guard it
                          installs gives new partitions their TRUNCATE trigger)
              uninstall   the triggers and check functions; the fence table (every scope's highest token) stays
                          unless --drop-fences
              --url       where to connect (default jdbc:postgresql://<sql.database host:port/name>); the user must
                          be a superuser: it creates a role and triggers on the application's tables
              --user      the user (default postgres)
              --dry-run   print the SQL instead of running it (the key's row is left out)
            """;

    private SqlCommand() {
    }

    /** Runs the command; returns its exit code. */
    public static int run(List<String> args, PrintStream out, PrintStream err) {
        if (args.isEmpty() || args.contains("--help") || args.contains("-h")) {
            (args.isEmpty() ? err : out).print(USAGE);
            return args.isEmpty() ? EXIT_USAGE : 0;
        }
        String operation = args.getFirst();
        if (!operation.equals("install") && !operation.equals("uninstall") && !operation.equals("fence")) {
            return usage(err, "unknown operation '" + operation + "'; valid: install, uninstall, fence");
        }
        List<String> fenceArgs = new ArrayList<>();
        Path config = null;
        String url = null;
        String user = "postgres";
        Path passwordFile = null;
        boolean dryRun = false;
        boolean dropFences = false;
        for (int i = 1; i < args.size(); i++) {
            String arg = args.get(i);
            switch (arg) {
                case "--dry-run" -> dryRun = true;
                case "--drop-fences" -> dropFences = true;
                case "--config", "--url", "--user", "--password-file" -> {
                    if (i + 1 >= args.size()) {
                        return usage(err, arg + " needs a value");
                    }
                    String value = args.get(++i);
                    switch (arg) {
                        case "--config" -> config = Path.of(value);
                        case "--url" -> url = value;
                        case "--user" -> user = value;
                        default -> passwordFile = Path.of(value);
                    }
                }
                default -> {
                    if (!operation.equals("fence")) {
                        return usage(err, "unknown argument '" + arg + "'");
                    }
                    fenceArgs.add(arg);
                }
            }
        }
        if (config == null) {
            return usage(err, "--config FILE is required");
        }
        if (dropFences && operation.equals("install")) {
            return usage(err, "--drop-fences goes with uninstall only");
        }
        SqlConfig sql;
        StockadeConfig loaded;
        try {
            loaded = PolicyLoader.loadFencing(config);
            sql = loaded.sql();
        } catch (PolicyException e) {
            err.println("stockade: " + config + " is not a valid policy file:");
            err.println(e.getMessage());
            return EXIT_USAGE;
        }
        if (sql == null) {
            err.println("stockade: " + config + " has no 'sql' section: nothing to install");
            return EXIT_USAGE;
        }
        String target = url != null ? url : "jdbc:postgresql://" + sql.database().host() + ":"
                + sql.database().port() + "/" + sql.database().name();
        if (operation.equals("fence")) {
            return fence(sql, loaded, target, user, passwordFile, fenceArgs, out, err);
        }
        FenceSql fence = new FenceSql(sql);
        try {
            String secret = operation.equals("install") && !dryRun ? Secrets.read(sql.secretFile()) : null;
            String script = operation.equals("install") ? fence.install(secret) : fence.uninstall(dropFences);
            if (dryRun) {
                out.print(script);
                return 0;
            }
            Properties props = new Properties();
            props.setProperty("user", user);
            if (passwordFile != null) {
                props.setProperty("password", Secrets.read(passwordFile, 1));
            }
            try (Connection c = DriverManager.getConnection(target, props); Statement s = c.createStatement()) {
                s.execute(script);
            }
            out.println("stockade: " + operation + "ed the SQL fence in " + target + " (" + sql.tables().size()
                    + " table" + (sql.tables().size() == 1 ? "" : "s") + ": " + String.join(", ",
                    sql.tables().stream().map(SqlConfig.FencedTable::qualified).toList()) + ")");
            return 0;
        } catch (SQLException e) {
            err.println("stockade: sql " + operation + " failed, nothing was changed: " + e.getMessage());
            return EXIT_FAILED;
        } catch (IOException e) {
            err.println("stockade: sql " + operation + ": " + e.getMessage());
            return EXIT_FAILED;
        }
    }

    /** The fence-state operations on the database's fence table, as the fence role. */
    private static int fence(SqlConfig sql, StockadeConfig loaded, String url, String user,
                             @Nullable Path passwordFile,
                             List<String> operation, PrintStream out, PrintStream err) {
        HikariConfig c = new HikariConfig();
        c.setPoolName("stockade-sql-fence");
        c.setJdbcUrl(url);
        c.setUsername(user);
        c.setMaximumPoolSize(2);
        c.setInitializationFailTimeout(-1);
        // the fence role owns the table and the floors' function; its schema first, so the store's statements run
        c.setConnectionInitSql("SET ROLE " + sql.fenceRole() + "; SET search_path = " + sql.schema());
        c.addDataSourceProperty("prepareThreshold", "0");
        try {
            if (passwordFile != null) {
                c.setPassword(Secrets.read(passwordFile, 1));
            }
        } catch (IOException e) {
            err.println("stockade: sql fence: " + e.getMessage());
            return EXIT_FAILED;
        }
        try (HikariDataSource pool = new HikariDataSource(c)) {
            return FenceCommand.runOn(PostgresFenceStore.over(pool, Duration.ofSeconds(30)), "the fence table "
                    + sql.schema() + ".stockade_fences in " + url, loaded.store(), operation, System.in, out, err);
        }
    }

    private static int usage(PrintStream err, String message) {
        err.println("stockade: " + message);
        err.print(USAGE);
        return EXIT_USAGE;
    }

    /** The first line of a secret file. */
    static final class Secrets {
        private Secrets() {
        }

        /** The listener's key: at least 32 characters. */
        static String read(Path file) throws IOException {
            return read(file, 32);
        }

        static String read(Path file, int min) throws IOException {
            List<String> lines;
            try {
                lines = Files.readAllLines(file);
            } catch (IOException e) {
                throw new IOException("cannot read " + file + ": " + e.getMessage(), e);
            }
            String line = lines.isEmpty() ? "" : lines.getFirst().strip();
            if (line.length() < min) {
                throw new IOException(file + ": the first line must hold at least " + min + " characters (e.g."
                        + " openssl rand -hex 32 > " + file + ")");
            }
            return line;
        }
    }
}
