package io.stockade.policy.yaml;

import java.io.IOException;
import java.io.StringReader;
import java.nio.charset.CharacterCodingException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.AdminConfig;
import io.stockade.policy.Policy;
import io.stockade.policy.PolicyError;
import io.stockade.policy.PolicyException;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.SqlConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;

import org.jspecify.annotations.Nullable;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.error.Mark;
import org.yaml.snakeyaml.error.MarkedYAMLException;
import org.yaml.snakeyaml.error.YAMLException;
import org.yaml.snakeyaml.nodes.Node;
import org.yaml.snakeyaml.reader.ReaderException;

/**
 * Reads and validates a policy file (the format is described in {@code policies/README.md}). Every problem found
 * is reported with its line and column; a file with any problem yields no configuration.
 */
public final class PolicyLoader {

    private PolicyLoader() {
    }

    /** Reads a UTF-8 policy file, substituting variables from the process environment. */
    public static StockadeConfig load(Path file) throws PolicyException {
        return parse(read(file), file, System.getenv());
    }

    /**
     * Reads only the {@code store} of a UTF-8 policy file (the root keys are checked, the other sections are not
     * read): what the offline {@code fence} command needs, so that it does not ask for the variables of the admin
     * token, the upstreams or the verifiers.
     */
    public static StoreConfig loadStore(Path file) throws PolicyException {
        return parseStore(read(file), file, System.getenv());
    }

    /** {@link #loadStore} of a document. */
    public static StoreConfig parseStore(String yaml, Path sourceName, Map<String, String> env)
            throws PolicyException {
        Problems problems = new Problems(sourceName);
        Optional<StoreConfig> store = compose(yaml, problems)
                .map(root -> Field.root(root, problems, new EnvSubstitution(env)))
                .flatMap(root -> root.mapping().flatMap(document -> {
                    document.allowOnly(Vocabulary.ROOT_KEYS);
                    return document.required("store", StoreReader::read);
                }));
        problems.throwIfAny();
        return store.orElseThrow(() -> new IllegalStateException("no store, yet no error reported"));
    }

    /**
     * Reads the {@code store} and the {@code policies} of a UTF-8 policy file, not its {@code server} and
     * {@code admin} sections (the root keys are checked; the server is the default, the admin block absent): what
     * the offline {@code fence} command needs to find where each policy keeps its fence, without the variables of
     * the admin token or the listener's TLS.
     */
    public static StockadeConfig loadFencing(Path file) throws PolicyException {
        return parseFencing(read(file), file, System.getenv());
    }

    /** {@link #loadFencing} of a document. */
    public static StockadeConfig parseFencing(String yaml, Path sourceName, Map<String, String> env)
            throws PolicyException {
        Problems problems = new Problems(sourceName);
        Optional<StockadeConfig> config = compose(yaml, problems)
                .map(root -> Field.root(root, problems, new EnvSubstitution(env)))
                .flatMap(root -> read(root, sourceName, false));
        problems.throwIfAny();
        return config.orElseThrow(() -> new IllegalStateException("no configuration, yet no error reported"));
    }

    private static String read(Path file) throws PolicyException {
        try {
            return Files.readString(file);
        } catch (NoSuchFileException e) {
            throw fileError(file, "no such file");
        } catch (CharacterCodingException e) {
            throw fileError(file, "not UTF-8 text");
        } catch (IOException e) {
            throw fileError(file, "cannot read: " + e.getMessage());
        }
    }

    /**
     * Reads a policy document.
     *
     * @param yaml       the document
     * @param sourceName the name errors and {@link StockadeConfig#source()} carry
     * @param env        the variables {@code ${NAME}} references are replaced with
     */
    public static StockadeConfig parse(String yaml, Path sourceName, Map<String, String> env)
            throws PolicyException {
        Problems problems = new Problems(sourceName);
        Optional<StockadeConfig> config = compose(yaml, problems)
                .map(root -> Field.root(root, problems, new EnvSubstitution(env)))
                .flatMap(root -> read(root, sourceName, true));
        problems.throwIfAny();
        return config.orElseThrow(() -> new IllegalStateException("no configuration, yet no error reported"));
    }

    private static Optional<Node> compose(String yaml, Problems problems) {
        try {
            Node root = new Yaml().compose(new StringReader(yaml));
            if (root == null) {
                problems.add(1, 1, "(root)", "the file has no content; expected a mapping with keys "
                        + String.join(", ", Vocabulary.ROOT_KEYS));
            }
            return Optional.ofNullable(root);
        } catch (MarkedYAMLException e) {
            Mark mark = e.getProblemMark() != null ? e.getProblemMark() : e.getContextMark();
            problems.add(mark, "(yaml)", syntaxMessage(e));
        } catch (ReaderException e) {
            int[] position = lineAndColumn(yaml, e.getPosition());
            problems.add(position[0], position[1], "(yaml)", String.format(
                    "character U+%04X is not allowed in YAML", e.getCodePoint()));
        } catch (YAMLException e) {
            problems.add(1, 1, "(yaml)", Values.message(e));
        }
        return Optional.empty();
    }

    /** The document; without {@code serverAndAdmin} those two sections are not read (default server, no admin). */
    private static Optional<StockadeConfig> read(Field root, Path source, boolean serverAndAdmin) {
        return root.mapping().flatMap(document -> {
            document.allowOnly(Vocabulary.ROOT_KEYS);
            ServerConfig defaultServer = new ServerConfig(ServerConfig.DEFAULT_HOST, ServerConfig.DEFAULT_PORT);
            Optional<ServerConfig> server = serverAndAdmin
                    ? document.optional("server", PolicyLoader::server, defaultServer) : Optional.of(defaultServer);
            Optional<StoreConfig> store = document.required("store", StoreReader::read);
            Optional<Optional<SqlConfig>> sql = document.optional("sql", SqlReader::read);
            // a file that only fences SQL tables needs no HTTP policy
            Optional<List<Policy>> policies = document.get("sql").isPresent() && document.get("policies").isEmpty()
                    ? Optional.of(List.of()) : document.required("policies", PolicyReader::readAll);
            Optional<Optional<AdminConfig>> admin = serverAndAdmin ? document.optional("admin", StoreReader::admin)
                    : Optional.of(Optional.empty());
            if (!Values.allPresent(server, store, policies, admin, sql)) {
                return Optional.empty();
            }
            if (sql.get().isPresent() && !namesApart(policies.get(), sql.get().get(), document)) {
                return Optional.empty();
            }
            return Optional.of(new StockadeConfig(source, server.get(), store.get(), policies.get(),
                    admin.get().orElse(null), sql.get().orElse(null)));
        });
    }

    /**
     * The admin API and the metrics name a policy by its name alone: an SQL policy's name must differ from every
     * HTTP policy's, and the SQL listener's port from the HTTP listener's.
     */
    private static boolean namesApart(List<Policy> policies, SqlConfig sql, Mapping document) {
        Field field = document.get("sql").orElseThrow();
        boolean apart = true;
        for (SqlConfig.SqlPolicy p : sql.policies()) {
            if (policies.stream().anyMatch(h -> h.name().equals(p.name()))) {
                field.error("sql policy name '" + p.name() + "' is also the name of a policy in 'policies': the"
                        + " admin API and the metrics name a policy by its name alone; rename one");
                apart = false;
            }
        }
        return apart;
    }

    private static Optional<ServerConfig> server(Field field) {
        return field.mapping().flatMap(server -> {
            server.allowOnly(Vocabulary.SERVER_KEYS);
            Optional<String> host = server.optional("host", Values::text, ServerConfig.DEFAULT_HOST);
            Optional<Integer> port = server.optional("port", f -> Values.integer(f, 0, 65535, "port number"),
                    ServerConfig.DEFAULT_PORT);
            Optional<Optional<ServerConfig.Tls>> tls = server.optional("tls", PolicyLoader::serverTls);
            Optional<ServerConfig.Limits> limits = server.optional("limits", LimitsReader::server,
                    ServerConfig.Limits.defaults());
            Optional<Optional<ServerConfig.Management>> management = server.optional("management",
                    f -> management(f, host.orElse(ServerConfig.DEFAULT_HOST), port.orElse(-1)));
            if (!Values.allPresent(host, port, tls, limits, management)) {
                return Optional.empty();
            }
            return Optional.of(new ServerConfig(host.get(), port.get(), tls.get().orElse(null), limits.get(),
                    management.get().orElse(null)));
        });
    }

    /** {@code server.management}: the listener of /metrics and /admin (host defaults to the server's). */
    private static Optional<ServerConfig.Management> management(Field field, String serverHost, int serverPort) {
        return field.mapping().flatMap(management -> {
            management.allowOnly(Vocabulary.MANAGEMENT_KEYS);
            Optional<String> host = management.optional("host", Values::text, serverHost);
            Optional<Integer> port = management.required("port", f -> Values.integer(f, 0, 65535, "port number")
                    .flatMap(p -> {
                        if (p != 0 && p == serverPort && host.orElse("").equals(serverHost)) {
                            f.error("the management listener needs a port of its own: server.port is " + p
                                    + " too (the data port writers reach must not serve /metrics and /admin)");
                            return Optional.empty();
                        }
                        return Optional.of(p);
                    }));
            if (!Values.allPresent(host, port)) {
                return Optional.empty();
            }
            return Optional.of(new ServerConfig.Management(host.get(), port.get()));
        });
    }

    static Optional<ServerConfig.Tls> serverTls(Field field) {
        return field.mapping().flatMap(tls -> {
            tls.allowOnly(Vocabulary.SERVER_TLS_KEYS);
            Optional<Path> keystore = tls.required("keystore", Values::path);
            Optional<Optional<String>> password = tls.optional("password", Field::text);
            Optional<Optional<Path>> passwordFile = tls.optional("password-file", Values::path);
            Optional<Optional<Path>> truststore = tls.optional("truststore", Values::path);
            Optional<ServerConfig.ClientAuth> clientAuth = tls.optional("client-auth",
                    f -> Values.keyword(f, "client-auth", Vocabulary.CLIENT_AUTH), ServerConfig.ClientAuth.NONE);
            if (!Values.allPresent(keystore, password, passwordFile, truststore, clientAuth)) {
                return Optional.empty();
            }
            if (password.get().isPresent() == passwordFile.get().isPresent()) {
                field.error("give exactly one of 'password' (write ${ENV}) and 'password-file'");
                return Optional.empty();
            }
            if (clientAuth.get() != ServerConfig.ClientAuth.NONE && truststore.get().isEmpty()) {
                field.error("client-auth " + clientAuth.get().name().toLowerCase(Locale.ROOT)
                        + " needs a 'truststore' to check client certificates against");
                return Optional.empty();
            }
            return Optional.of(new ServerConfig.Tls(keystore.get(), password.get().orElse(null),
                    passwordFile.get().orElse(null), truststore.get().orElse(null), clientAuth.get()));
        });
    }

    /** snakeyaml's problem with its context: "could not find expected ':' (while scanning a simple key at line 3)". */
    private static String syntaxMessage(MarkedYAMLException e) {
        String words = inWords(e.getProblem());
        if (words != null) {
            return words;
        }
        if (e.getContext() == null) {
            return e.getProblem();
        }
        if (e.getProblem().startsWith("but ")) {
            return e.getContext() + ", " + e.getProblem(); // "expected a single document in the stream, but found ..."
        }
        String line = e.getContextMark() == null ? "" : " at line " + (e.getContextMark().getLine() + 1);
        return e.getProblem() + " (" + e.getContext() + line + ")";
    }

    /**
     * What snakeyaml's most common problems mean to someone editing a policy file, with its words after them; null
     * when there is nothing to add.
     */
    private static @Nullable String inWords(@Nullable String problem) {
        if (problem == null) {
            return null;
        }
        if (problem.contains("expected <block end>, but found '<block mapping start>'")
                || problem.contains("expected <block end>, but found '<block sequence start>'")) {
            return "this line is indented more than the lines before it at the same level: keys of one mapping (and"
                    + " items of one list) must start in the same column (YAML: " + problem + ")";
        }
        if (problem.contains("mapping values are not allowed here")) {
            return "a key where YAML reads the line above as going on: this line is indented more than the keys"
                    + " before it at its level (keys of one mapping start in one column), or a value holding ': '"
                    + " is not quoted (\"a: b\") (YAML: " + problem + ")";
        }
        if (problem.contains("found character '\\t' that cannot start any token")) {
            return "a tab: YAML indents with spaces only (YAML: " + problem + ")";
        }
        return null;
    }

    /** The 1-based line and column of a code point index. */
    private static int[] lineAndColumn(String text, int codePointIndex) {
        int line = 1;
        int column = 1;
        int offset = 0;
        for (int i = 0; i < codePointIndex && offset < text.length(); i++) {
            int c = text.codePointAt(offset);
            offset += Character.charCount(c);
            if (c == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        return new int[] {line, column};
    }

    private static PolicyException fileError(Path file, String message) {
        return new PolicyException(List.of(new PolicyError(file, 1, 1, "(file)", message)));
    }
}
