package io.stockade.proxy.admin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.time.Clock;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.stockade.policy.AdminConfig;
import io.stockade.policy.Policy;
import io.stockade.policy.PolicyException;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.registry.BackendTypes;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.io.SecretFiles;
import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.store.FenceStores;
import io.stockade.proxy.store.postgres.PostgresFenceStore;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import org.jspecify.annotations.Nullable;

/**
 * {@code stockade-proxy fence --config FILE <operation> ...}: the fence-state operations run directly on the fence
 * that keeps each scope ({@link FenceRouting}): the store the policy file names, or the database of a postgres
 * backend ({@code fence: table}), opened for the command. It reads the file's store and policies (not its server
 * and admin sections, so it needs no admin token). Answers JSON on stdout. Exit codes: 0 done, 1 a store or
 * database cannot be opened or is unavailable, 2 bad command line or policy file, 3 refused or not found (the JSON
 * problem is on stderr).
 * <p>
 * The memory store's journal is locked by a running proxy ({@code journal.lock}): stop it first, or use that
 * proxy's admin endpoints. The store and the databases are opened only when an operation reaches them, so an
 * operation on a postgres backend's scope runs beside such a proxy. Shared stores (etcd, postgres) and backends'
 * databases can be operated on while proxies run.
 */
public final class FenceCommand {
    public static final String USAGE = """
            usage: stockade-proxy fence --config FILE OPERATION

              show SCOPE                          a scope's token, the floor covering it, the effective highest
              list [--prefix P] [--limit N]       scopes (most recently active first where the store can tell)
              floors                              prefix floors
              export [--out FILE]                 all fence state as JSON lines (stdout by default)
              import [FILE|-]                     apply an export: each line raises, never lowers (stdin by default)
              raise --scope S --token N           raise one scope to at least N
              raise --prefix P --token N          raise the floor of every scope starting with P, existing or not
              retire SCOPE                        remove a scope a floor at or above its token covers
              reset SCOPE --token N               lower a scope a forged token took to N (below its token, not
                [--force --reason TEXT]           below a floor over it). Needs the admin token
                [--admin-token-file FILE]         (--admin-token-file, or STOCKADE_ADMIN_TOKEN), compared with
                                                  the file's admin section, and that no lease on the scope is
                                                  valid: the policies' verifiers say the token is nobody's, or,
                                                  where the proxy cannot see leases, --force with a --reason
                                                  (docs/admin-api.md, "Reset")

              --policy NAME                       (any operation but import) act on that policy's fence; without
                                                  it, a scope goes where the policies' scope templates lead it
                                                  (the store, or a postgres backend's database with fence: table)
                                                  and list, floors and export cover the store and every such
                                                  database

            Nothing but reset lowers a token. With the memory store, stop the proxy first (it locks the journal) or
            use its admin endpoints (/admin/fences, see docs/admin-api.md). The command reads the file's store and
            policies, so it needs the variables they use (reset reads the whole file: its admin token too).
            """;

    private FenceCommand() {
    }

    public static int run(List<String> args, InputStream in, PrintStream out, PrintStream err) {
        Path config = null;
        String policy = null;
        List<String> rest = new ArrayList<>();
        for (int i = 0; i < args.size(); i++) {
            String a = args.get(i);
            if (a.equals("--config") && i + 1 < args.size()) {
                config = Path.of(args.get(++i));
            } else if (a.equals("--policy") && i + 1 < args.size()) {
                policy = args.get(++i);
            } else if (a.equals("--help") || a.equals("-h")) {
                out.print(USAGE);
                return 0;
            } else {
                rest.add(a);
            }
        }
        if (config == null || rest.isEmpty()) {
            return usage(err, config == null ? "--config FILE is required" : "an operation is required");
        }
        String op = rest.getFirst();
        List<String> params = rest.subList(1, rest.size());
        if (!List.of("show", "list", "floors", "export", "import", "raise", "retire", "reset").contains(op)) {
            return usage(err, "unknown operation '" + op + "'");
        }
        if (op.equals("import") && policy != null) {
            return usage(err, "import takes no --policy: each line names its fence (\"keeper\", \"policy\")");
        }
        StockadeConfig loaded;
        try {
            // the store and the policies (where each scope's fence is kept); not the admin token or the listener
            loaded = PolicyLoader.loadFencing(config);
        } catch (PolicyException e) {
            err.println("stockade fence: " + config + " is not a valid policy file (the command reads its store and"
                    + " its policies, to find where each scope's fence is kept):");
            err.println(e.getMessage());
            return 2;
        } catch (RuntimeException e) {
            err.println("stockade fence: cannot read " + config + ": " + e.getMessage());
            return 2;
        }
        StoreConfig storeConfig = loaded.store();
        TokenVerifiers verifiers = new TokenVerifiers(Clock.systemUTC());
        try (Store store = new Store(storeConfig); Databases databases = new Databases(); verifiers) {
            FenceOperations.Leases leases = FenceOperations.Leases.NONE;
            if (op.equals("reset")) {
                // the admin token, and the verifiers that say whether a lease is valid: the file's admin section
                // and verify blocks, read now (with their variables)
                StockadeConfig full = PolicyLoader.load(config);
                checkAdminToken(full, params);
                verifiers.open(full.policies());
                leases = FenceOperations.Leases.of(verifiers);
            }
            FenceRouting routing = new FenceRouting(loaded.policies(), loaded.sql(), OFFLINE_SQL, storeConfig,
                    store::admin, databases::of);
            return operate(new FenceOperations(routing, leases), policy, op, params, in, out, err);
        } catch (PolicyException e) {
            err.println("stockade fence: reset reads the whole policy file (its admin token and verifiers): "
                    + e.getMessage());
            return 2;
        } catch (StoreUnavailableException e) {
            err.println("stockade fence: " + e.getMessage());
            return 1;
        } catch (FenceOperations.Refused e) {
            err.println("{\"status\":" + e.status() + ",\"type\":\"" + e.type() + "\",\"detail\":"
                    + JsonWriter.quote(e.getMessage()) + "}");
            return e.status() == 400 ? 2 : 3;
        } catch (IOException e) {
            err.println("stockade fence: " + e.getMessage());
            return 1;
        } catch (IllegalArgumentException e) {
            return usage(err, e.getMessage());
        }
    }

    /** The {@code sql} policies' fence, which this command leaves to {@code stockade sql fence}. */
    private static final FenceRouting.SqlFence OFFLINE_SQL = new FenceRouting.SqlFence() {
        @Override
        public String unreachable() {
            return "keeps its fence in the SQL listener's database (sql.database), which 'stockade fence' does not"
                    + " open";
        }

        @Override
        public String instead() {
            return "Run stockade sql fence --config FILE OPERATION (as a member of the fence role), or use the"
                    + " admin API of a proxy with sql.admin-datasource";
        }

        @Override
        public FenceAdmin open() throws StoreUnavailableException {
            throw new StoreUnavailableException("'stockade fence' does not open the SQL listener's database");
        }
    };

    /**
     * The store the file names, opened when an operation first reaches it: an operation on a postgres backend's
     * scope runs while a proxy holds the memory store's journal.
     */
    private static final class Store implements AutoCloseable {
        private final StoreConfig config;
        private @Nullable FenceStore store; // opened by admin(), when an operation first reaches the store

        Store(StoreConfig config) {
            this.config = config;
        }

        @Nullable FenceAdmin admin() throws StoreUnavailableException {
            if (store == null) {
                try {
                    store = FenceStores.open(config);
                } catch (IOException e) {
                    String msg = e.getMessage();
                    if (config instanceof StoreConfig.Memory m && msg != null
                            && (msg.contains("in use") || msg.contains("already open"))) {
                        throw new StoreUnavailableException("the journal " + m.journal() + " is locked by a running"
                                + " proxy (journal.lock). Stop that proxy first, or use its admin endpoints"
                                + " (/admin/fences).", e);
                    }
                    throw new StoreUnavailableException("cannot open the " + config.type() + " store: " + msg, e);
                }
            }
            return FenceStores.admin(store).orElse(null);
        }

        @Override
        public void close() {
            if (store != null) {
                store.close();
            }
        }
    }

    /**
     * The databases of the postgres backends ({@code fence: table}) an operation reaches, opened when first reached
     * (as the backend opens it: its {@code migrate} creates the fence tables, else they are checked) and closed
     * with the command.
     */
    private static final class Databases implements AutoCloseable {
        private final Map<String, PostgresFenceStore> open = new HashMap<>();

        FenceAdmin of(Policy policy) throws StoreUnavailableException {
            if (!(BackendTypes.of(policy).fencePlace() instanceof FencePlace.Database pg)) {
                throw new IllegalStateException("policy " + policy.name() + " keeps no fence in a database");
            }
            String key = pg.datasource().url() + "\n" + pg.datasource().user();
            PostgresFenceStore db = open.get(key);
            if (db == null) {
                try {
                    db = PostgresFenceStore.open(new StoreConfig.Postgres(pg.datasource(), pg.migrate()));
                } catch (IOException e) {
                    throw new StoreUnavailableException("cannot open the database of policy '" + policy.name()
                            + "' (its postgres backend keeps its fence there): " + e.getMessage(), e);
                }
                open.put(key, db);
            }
            return db;
        }

        @Override
        public void close() {
            open.values().forEach(PostgresFenceStore::close);
        }
    }

    /**
     * Runs one operation ({@link #USAGE}, without {@code --policy}) on a single fence that is not the file's store
     * nor a postgres backend's: the SQL listener's fence table ({@code stockade sql fence}).
     *
     * @param name how messages name it
     * @return the exit code, as {@link #run}
     */
    public static int runOn(FenceAdmin admin, String name, StoreConfig storeConfig, List<String> rest, InputStream in,
                            PrintStream out, PrintStream err) {
        if (rest.isEmpty() || !List.of("show", "list", "floors", "export", "import", "raise", "retire")
                .contains(rest.getFirst())) {
            return usage(err, rest.isEmpty() ? "an operation is required" : "unknown operation '" + rest.getFirst()
                    + "'");
        }
        FenceRouting routing = new FenceRouting(List.of(), storeConfig, () -> admin, p -> {
            throw new StoreUnavailableException("no policy reaches " + name);
        });
        try {
            return operate(new FenceOperations(routing), null, rest.getFirst(), rest.subList(1, rest.size()), in,
                    out, err);
        } catch (StoreUnavailableException | IOException e) {
            err.println("stockade fence: " + name + ": " + e.getMessage());
            return 1;
        } catch (FenceOperations.Refused e) {
            err.println("{\"status\":" + e.status() + ",\"type\":\"" + e.type() + "\",\"detail\":"
                    + JsonWriter.quote(e.getMessage()) + "}");
            return e.status() == 400 ? 2 : 3;
        } catch (IllegalArgumentException e) {
            return usage(err, e.getMessage());
        }
    }

    private static int operate(FenceOperations ops, @Nullable String policy, String op, List<String> p,
                               InputStream in, PrintStream out, PrintStream err) throws StoreUnavailableException,
            FenceOperations.Refused, IOException {
        switch (op) {
            case "show" -> out.println(ops.show(policy, single(p, "show SCOPE")));
            case "list" -> out.println(ops.list(policy, option(p, "--prefix").orElse(""),
                    Integer.parseInt(option(p, "--limit").orElse("100"))));
            case "floors" -> out.println(ops.floors(policy));
            case "export" -> {
                Optional<String> file = option(p, "--out");
                if (file.isPresent()) {
                    try (Writer w = Files.newBufferedWriter(Path.of(file.get()), StandardCharsets.UTF_8)) {
                        long n = ops.export(policy, w);
                        err.println("stockade fence: exported " + n + " lines to " + file.get());
                    }
                } else {
                    Writer w = new OutputStreamWriter(out, StandardCharsets.UTF_8);
                    ops.export(policy, w);
                    w.flush();
                }
            }
            case "import" -> {
                String file = p.isEmpty() ? "-" : single(p, "import [FILE|-]");
                try (BufferedReader r = file.equals("-")
                        ? new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))
                        : Files.newBufferedReader(Path.of(file), StandardCharsets.UTF_8)) {
                    out.println(ops.importLines(r));
                }
            }
            case "raise" -> {
                long token = parseToken(option(p, "--token").orElseThrow(
                        () -> new IllegalArgumentException("raise needs --token N")));
                Optional<String> scope = option(p, "--scope");
                Optional<String> prefix = option(p, "--prefix");
                if (scope.isPresent() == prefix.isPresent()) {
                    throw new IllegalArgumentException("raise needs exactly one of --scope S and --prefix P");
                }
                out.println(scope.isPresent() ? ops.raiseScope(policy, scope.get(), token)
                        : ops.raiseFloor(policy, prefix.get(), token));
            }
            case "reset" -> {
                List<String> positional = positional(p, List.of("--token", "--reason", "--admin-token-file"),
                        List.of("--force"));
                long token = parseToken(option(p, "--token").orElseThrow(
                        () -> new IllegalArgumentException("reset needs --token N")));
                out.println(ops.reset(policy, single(positional, "reset SCOPE --token N"), token,
                        p.contains("--force"), option(p, "--reason").orElse(null)));
            }
            default -> out.println(ops.retire(policy, single(p, "retire SCOPE")));
        }
        out.flush();
        return 0;
    }

    /** The arguments that are not an option (with its value) or a flag. */
    private static List<String> positional(List<String> p, List<String> options, List<String> flags) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < p.size(); i++) {
            if (options.contains(p.get(i))) {
                i++;
            } else if (!flags.contains(p.get(i))) {
                out.add(p.get(i));
            }
        }
        return out;
    }

    /**
     * A reset lowers a token, so the command asks for what the admin API asks for: the admin token, given with
     * {@code --admin-token-file FILE} (its first line) or {@code STOCKADE_ADMIN_TOKEN}, equal to the policy file's.
     */
    private static void checkAdminToken(StockadeConfig full, List<String> p) throws FenceOperations.Refused,
            IOException {
        AdminConfig admin = full.admin();
        if (admin == null) {
            throw new FenceOperations.Refused(ProblemType.UNAUTHORIZED, "reset needs the admin token, and the policy"
                    + " file has no admin section to compare it with (docs/admin-api.md)");
        }
        String expected = admin.token() != null ? admin.token() : SecretFiles.firstLine(Objects.requireNonNull(
                admin.tokenFile(), "an admin section has a token or a token file (AdminConfig)"));
        Optional<String> file = option(p, "--admin-token-file");
        String given = file.isPresent() ? SecretFiles.firstLine(Path.of(file.get()))
                : System.getenv("STOCKADE_ADMIN_TOKEN");
        if (given == null || !MessageDigest.isEqual(given.getBytes(StandardCharsets.UTF_8),
                expected.getBytes(StandardCharsets.UTF_8))) {
            throw new FenceOperations.Refused(ProblemType.UNAUTHORIZED, "reset needs the admin token of the policy"
                    + " file: --admin-token-file FILE or STOCKADE_ADMIN_TOKEN" + (given == null ? " (none given)"
                    : " (the one given is not it)"));
        }
    }

    private static long parseToken(String s) {
        try {
            long t = Long.parseLong(s);
            if (t >= 0) {
                return t;
            }
        } catch (NumberFormatException e) {
            // below
        }
        throw new IllegalArgumentException("--token must be a whole number 0.." + Long.MAX_VALUE + ", was '" + s + "'");
    }

    private static String single(List<String> p, String form) {
        if (p.size() != 1) {
            throw new IllegalArgumentException("expected: " + form);
        }
        return p.getFirst();
    }

    /** The value after {@code name}; a flag given without one is an error. */
    private static Optional<String> option(List<String> p, String name) {
        int i = p.indexOf(name);
        if (i < 0) {
            return Optional.empty();
        }
        if (i + 1 >= p.size()) {
            throw new IllegalArgumentException(name + " needs a value");
        }
        return Optional.of(p.get(i + 1));
    }

    private static int usage(PrintStream err, @Nullable String message) {
        err.println("stockade fence: " + message);
        err.print(USAGE);
        return 2;
    }
}
