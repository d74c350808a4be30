package io.stockade.policy.yaml;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.policy.ClientTls;
import io.stockade.policy.Datasource;
import io.stockade.policy.Policy;
import io.stockade.policy.ScopeTemplate;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.SqlConfig;
import io.stockade.policy.TokenVerification;

/**
 * Reads the {@code sql} section: the PostgreSQL listener, its database and its fenced tables. Names that reach SQL
 * text (roles, schemas, tables, columns) are plain lower-case identifiers, so the installer can write them without
 * quoting and no name can carry SQL of its own.
 */
final class SqlReader {
    /** An unquoted PostgreSQL identifier PostgreSQL keeps as written: lower case, at most 63 bytes. */
    static final Pattern IDENTIFIER = Pattern.compile("[a-z_][a-z0-9_]{0,62}");
    private static final String IDENTIFIER_RULE = "is not a plain identifier: lower-case letters, digits and '_',"
            + " starting with a letter or '_', at most 63 characters (quoted identifiers are not supported)";
    private static final Pattern TABLE = Pattern.compile("(?:(" + IDENTIFIER.pattern() + ")\\.)?("
            + IDENTIFIER.pattern() + ")");
    private static final Pattern VARIABLE = Pattern.compile("\\{([^{}]*)}");
    private static final Pattern NAME = Pattern.compile("[a-z0-9][a-z0-9-_]*");

    private SqlReader() {
    }

    static Optional<SqlConfig> read(Field field) {
        return field.mapping().flatMap(sql -> {
            sql.allowOnly(Vocabulary.SQL_KEYS);
            Optional<SqlConfig.Listen> listen = sql.optional("listen", SqlReader::listen,
                    new SqlConfig.Listen(ServerConfig.DEFAULT_HOST, SqlConfig.Listen.DEFAULT_PORT, null,
                            SqlConfig.Listen.DEFAULT_STARTUP_TIMEOUT));
            Optional<SqlConfig.Database> database = sql.required("database", SqlReader::database);
            Optional<String> role = sql.optional("fence-role", SqlReader::identifier, SqlConfig.DEFAULT_FENCE_ROLE);
            Optional<String> schema = sql.optional("schema", SqlReader::identifier, SqlConfig.DEFAULT_SCHEMA);
            Optional<Path> secret = sql.required("secret-file", Values::path);
            Optional<SqlConfig.DirectClients> direct = sql.optional("direct-clients",
                    f -> Values.keyword(f, "value", Vocabulary.DIRECT_CLIENTS), SqlConfig.DirectClients.REFUSE);
            Optional<SqlConfig.SessionTokens> sessions = sql.optional("session-tokens",
                    f -> Values.keyword(f, "value", Vocabulary.SESSION_TOKENS), SqlConfig.SessionTokens.ALLOW);
            Optional<List<SqlConfig.SqlPolicy>> policies = sql.required("policies", SqlReader::policies);
            Optional<Optional<Datasource>> admin = sql.optional("admin-datasource", DatasourceReader::read);
            if (!Values.allPresent(listen, database, role, schema, secret, direct, sessions, policies, admin)) {
                return Optional.empty();
            }
            String adminDatabase = admin.get().map(ds -> databaseOf(ds.url())).orElse(null);
            if (adminDatabase != null && !adminDatabase.equals(database.get().name())) {
                sql.get("admin-datasource").orElseThrow().error("its url names the database '" + adminDatabase
                        + "', but the fence is in the database of sql.database.name, '" + database.get().name()
                        + "': the admin API would act on a fence table no trigger reads");
                return Optional.empty();
            }
            return Optional.of(new SqlConfig(listen.get(), database.get(), role.get(), schema.get(), secret.get(),
                    direct.get(), sessions.get(), policies.get(), admin.get().orElse(null)));
        });
    }

    /**
     * The database a {@code jdbc:postgresql://host[:port][,...]/database[?...]} (or {@code jdbc:postgresql:database})
     * URL names, percent-decoded as pgjdbc decodes it.
     */
    private static String databaseOf(String url) {
        String rest = url.substring("jdbc:postgresql:".length());
        if (rest.startsWith("//")) {
            int slash = rest.indexOf('/', 2);
            rest = slash < 0 ? "" : rest.substring(slash + 1);
        }
        int query = rest.indexOf('?');
        String db = query < 0 ? rest : rest.substring(0, query);
        try {
            return URLDecoder.decode(db, StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            return db;
        }
    }

    private static Optional<SqlConfig.Listen> listen(Field field) {
        return field.mapping().flatMap(listen -> {
            listen.allowOnly(Vocabulary.SQL_LISTEN_KEYS);
            Optional<String> host = listen.optional("host", Values::text, ServerConfig.DEFAULT_HOST);
            Optional<Integer> port = listen.optional("port", f -> Values.integer(f, 0, 65535, "port number"),
                    SqlConfig.Listen.DEFAULT_PORT);
            Optional<Optional<ServerConfig.Tls>> tls = listen.optional("tls", PolicyLoader::serverTls);
            Optional<Duration> startup = listen.optional("startup-timeout", Values::duration,
                    SqlConfig.Listen.DEFAULT_STARTUP_TIMEOUT);
            if (!Values.allPresent(host, port, tls, startup)) {
                return Optional.empty();
            }
            return Optional.of(new SqlConfig.Listen(host.get(), port.get(), tls.get().orElse(null), startup.get()));
        });
    }

    private static Optional<SqlConfig.Database> database(Field field) {
        return field.mapping().flatMap(db -> {
            db.allowOnly(Vocabulary.SQL_DATABASE_KEYS);
            Optional<String> host = db.optional("host", Values::text, "127.0.0.1");
            Optional<Integer> port = db.optional("port", f -> Values.integer(f, 1, 65535, "port number"), 5432);
            Optional<String> name = db.required("name", Values::text);
            Optional<Optional<ClientTls>> tls = db.optional("tls", ClientTlsReader::read);
            if (!Values.allPresent(host, port, name, tls)) {
                return Optional.empty();
            }
            return Optional.of(new SqlConfig.Database(host.get(), port.get(), name.get(), tls.get().orElse(null)));
        });
    }

    private static Optional<String> identifier(Field field) {
        return Values.matching(field, IDENTIFIER, IDENTIFIER_RULE);
    }

    private static Optional<List<SqlConfig.SqlPolicy>> policies(Field field) {
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("must list at least one policy (the tables the listener fences)");
                return Optional.empty();
            }
            List<SqlConfig.SqlPolicy> out = new ArrayList<>();
            Set<String> names = new HashSet<>();
            Set<String> tables = new HashSet<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<SqlConfig.SqlPolicy> policy = item.mapping().flatMap(m -> policy(m, names, tables));
                policy.ifPresent(out::add);
                valid &= policy.isPresent();
            }
            return valid ? Optional.of(out) : Optional.empty();
        });
    }

    private static Optional<SqlConfig.SqlPolicy> policy(Mapping policy, Set<String> names, Set<String> tables) {
        policy.allowOnly(Vocabulary.SQL_POLICY_KEYS);
        Optional<String> name = policy.required("name", f -> Values.matching(f, NAME, "is not a valid policy name:"
                + " use lower-case letters, digits, '-' and '_', starting with a letter or digit").flatMap(n -> {
                    if (!names.add(n)) {
                        f.error("policy name '" + n + "' is used twice in sql.policies");
                        return Optional.empty();
                    }
                    return Optional.of(n);
                }));
        Optional<List<SqlConfig.FencedTable>> fenced = policy.required("tables",
                f -> tables(f, name.orElse("?"), tables));
        Optional<Mapping> fence = policy.get("fence").map(f -> f.mapping().orElse(null));
        if (policy.get("fence").isPresent() && fence.isEmpty()) {
            return Optional.empty();
        }
        fence.ifPresent(f -> f.allowOnly(Vocabulary.SQL_FENCE_KEYS));
        Optional<Policy.MissingToken> missing = fence.isEmpty() ? Optional.of(Policy.MissingToken.REJECT)
                : fence.get().optional("missing", f -> Values.keyword(f, "value", Vocabulary.MISSING),
                Policy.MissingToken.REJECT);
        Optional<Policy.EqualToken> equal = fence.isEmpty() ? Optional.of(Policy.EqualToken.ACCEPT)
                : fence.get().optional("equal", f -> Values.keyword(f, "value", Vocabulary.EQUAL),
                Policy.EqualToken.ACCEPT);
        Optional<Long> maxAdvance = fence.isEmpty() ? Optional.of(Policy.Fence.UNLIMITED)
                : fence.get().optional("max-advance", f -> Values.longInteger(f, 1, Long.MAX_VALUE, "whole number"),
                Policy.Fence.UNLIMITED);
        Optional<Optional<TokenVerification>> verify = fence.isEmpty() ? Optional.of(Optional.empty())
                : fence.get().optional("verify", VerifyReader::read);
        Optional<Optional<String>> lock = policy.optional("lock", Values::text);
        Optional<Policy.Readiness> readiness = policy.optional("readiness",
                f -> Values.keyword(f, "value", Vocabulary.READINESS), Policy.Readiness.REPORT);
        if (!Values.allPresent(name, fenced, missing, equal, maxAdvance, verify, lock, readiness)) {
            return Optional.empty();
        }
        if (verify.get().orElse(null) instanceof TokenVerification.Hmac) {
            fence.get().get("verify").orElseThrow().error("verify kind hmac checks a signature header, which a SQL"
                    + " session does not send: use a lock service's kind (etcd, postgres, kubernetes, redis,"
                    + " zookeeper, consul, dynamodb)");
            return Optional.empty();
        }
        if (verify.get().isPresent() && lock.get().isEmpty()) {
            policy.required("lock"); // reports it missing, at the policy
            return Optional.empty();
        }
        if (verify.get().isEmpty() && lock.get().isPresent()) {
            policy.get("lock").orElseThrow().error("'lock' names the lock fence.verify asks about; without"
                    + " fence.verify it means nothing: remove it or add fence.verify");
            return Optional.empty();
        }
        return Optional.of(new SqlConfig.SqlPolicy(name.get(), fenced.get(), missing.get(), equal.get(),
                maxAdvance.get(), verify.get().orElse(null), lock.get().orElse(null), readiness.get()));
    }

    private static Optional<List<SqlConfig.FencedTable>> tables(Field field, String policy, Set<String> seen) {
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("must list at least one table");
                return Optional.empty();
            }
            List<SqlConfig.FencedTable> out = new ArrayList<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<SqlConfig.FencedTable> table = item.mapping().flatMap(m -> table(m, policy, seen));
                table.ifPresent(out::add);
                valid &= table.isPresent();
            }
            return valid ? Optional.of(out) : Optional.empty();
        });
    }

    private static Optional<SqlConfig.FencedTable> table(Mapping table, String policy, Set<String> seen) {
        table.allowOnly(Vocabulary.SQL_TABLE_KEYS);
        Optional<String[]> name = table.required("table", f -> Values.matching(f, TABLE, "is not a table name:"
                + " write table or schema.table, each a plain identifier (lower-case letters, digits and '_')")
                .flatMap(text -> {
                    Matcher m = TABLE.matcher(text);
                    m.matches();
                    String[] parts = {m.group(1) == null ? "public" : m.group(1), m.group(2)};
                    if (!seen.add(parts[0] + "." + parts[1])) {
                        f.error("table " + parts[0] + "." + parts[1] + " is fenced twice in sql.policies: a table"
                                + " has one scope");
                        return Optional.empty();
                    }
                    return Optional.of(parts);
                }));
        Optional<ScopeTemplate> scope = table.required("scope", SqlReader::scope);
        if (!Values.allPresent(name, scope)) {
            return Optional.empty();
        }
        return Optional.of(new SqlConfig.FencedTable(name.get()[0], name.get()[1], scope.get(), policy));
    }

    /** A scope template whose variables are columns of the row ({@code jobs/{id}}). */
    private static Optional<ScopeTemplate> scope(Field field) {
        return Values.text(field).flatMap(text -> {
            Set<String> columns = new LinkedHashSet<>();
            Matcher m = VARIABLE.matcher(text);
            while (m.find()) {
                if (!IDENTIFIER.matcher(m.group(1)).matches()) {
                    field.error("{" + m.group(1) + "} in scope '" + text + "' is not a column name: a plain"
                            + " identifier (lower-case letters, digits and '_'), the column of the written row");
                    return Optional.empty();
                }
                columns.add(m.group(1));
            }
            try {
                return Optional.of(ScopeTemplate.parse(text, columns));
            } catch (IllegalArgumentException e) {
                field.error(Values.message(e));
                return Optional.empty();
            }
        });
    }
}
