package io.stockade.policy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * The PostgreSQL listener ({@code sql}): where unmodified SQL clients connect, the one database it relays them to,
 * and the tables whose rows are fenced there. The fence itself lives in that database (a table, a check function
 * and triggers that {@code stockade sql install} puts there); the listener owns the token a session writes with.
 *
 * @param listen      where clients connect
 * @param database    the PostgreSQL server and the one database clients may name
 * @param fenceRole   the role that owns the fence schema, its table and functions (NOLOGIN)
 * @param schema      the schema of the fence table and functions in the database
 * @param secretFile  a file whose first line is the key the listener signs tokens with (at least 32 characters);
 *                    {@code sql install} stores it in the database, readable by the fence role only
 * @param direct      whether a token set by a client that connects to the database directly (no proof that the
 *                    listener set it) is taken
 * @param sessions    whether the listener takes a session's token (startup {@code options}, {@code SET},
 *                    {@code set_config(..., false)}), or only a transaction's ({@code SET LOCAL}): a transaction
 *                    pooler in front of or behind the listener shares one server session among its clients, so a
 *                    session's token would hold for other clients' transactions
 * @param policies    the fenced tables, grouped by how their tokens are judged
 * @param admin       the login the proxy's admin API reaches the fence table with ({@code admin-datasource}: a
 *                    role that is a member of the fence role, which cannot log in itself), or {@code null}: the
 *                    admin API refuses the SQL policies' scopes and {@code stockade sql fence} is the way
 */
public record SqlConfig(Listen listen, Database database, String fenceRole, String schema, Path secretFile,
                        DirectClients direct, SessionTokens sessions, List<SqlPolicy> policies,
                        @Nullable Datasource admin) {
    public static final String DEFAULT_FENCE_ROLE = "stockade_fence";
    public static final String DEFAULT_SCHEMA = "stockade";
    /** The custom setting a session's token travels in. */
    public static final String TOKEN_SETTING = "stockade.fencing_token";

    public SqlConfig {
        Objects.requireNonNull(listen, "listen");
        Objects.requireNonNull(database, "database");
        Objects.requireNonNull(fenceRole, "fenceRole");
        Objects.requireNonNull(schema, "schema");
        Objects.requireNonNull(secretFile, "secretFile");
        Objects.requireNonNull(direct, "direct");
        Objects.requireNonNull(sessions, "sessions");
        policies = List.copyOf(policies);
    }

    /** Every fenced table of every policy, in file order. */
    public List<FencedTable> tables() {
        return policies.stream().flatMap(p -> p.tables().stream()).toList();
    }

    /**
     * Where clients connect.
     *
     * @param host an interface address to bind
     * @param port the port ({@code 0}: any free port)
     * @param tls  TLS after a client's SSLRequest (then a client that does not ask for it is refused), or
     *             {@code null}: every SSLRequest is answered 'N'
     * @param startupTimeout how long a client may take from connecting to being authenticated, in all (startup
     *             packet, TLS handshake, authentication), as PostgreSQL's {@code authentication_timeout}; past it
     *             the connection is closed
     */
    public record Listen(String host, int port, ServerConfig.@Nullable Tls tls, Duration startupTimeout) {
        public static final int DEFAULT_PORT = 6432;
        public static final Duration DEFAULT_STARTUP_TIMEOUT = Duration.ofSeconds(60);

        public Listen {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(startupTimeout, "startupTimeout");
        }
    }

    /**
     * The PostgreSQL server the listener relays to.
     *
     * @param host the server's host
     * @param port its port
     * @param name the one database clients may name; a session for any other is refused (its tables are not
     *             fenced)
     * @param tls  TLS to the server (SSLRequest, then the server's name and certificate checked), or {@code null}
     *             for plain TCP
     */
    public record Database(String host, int port, String name, @Nullable ClientTls tls) {
        public Database {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(name, "name");
        }
    }

    /** What a token gets that a client set on a connection to the database that did not go through the listener. */
    public enum DirectClients {
        /** Refused (SQLSTATE SF403): only the listener can prove it set and verified a token. The default. */
        REFUSE,
        /** Taken as set: the database's own privileges are then all that keeps direct clients honest. */
        TRUST
    }

    /** Whether a session's token is taken ({@code session-tokens}). */
    public enum SessionTokens {
        /** Taken: startup options, SET and set_config(..., false) hold for the session. The default. */
        ALLOW,
        /**
         * Refused (SQLSTATE SF405): only SET LOCAL and set_config(..., true) are taken. For a listener with a
         * transaction pooler in front of it or behind it.
         */
        REFUSE
    }

    /**
     * One group of fenced tables and how their tokens are judged.
     *
     * @param name       unique among every policy of the file (the admin API and metrics name it)
     * @param tables     the tables, each with the scope its rows are fenced on
     * @param missing    what a write without a token gets (reject: SQLSTATE SF428)
     * @param equal      what a token equal to the highest gets (a transaction that raised the scope itself may
     *                   always write it again)
     * @param maxAdvance the largest jump over a scope's highest ({@link Policy.Fence#UNLIMITED}: any)
     * @param verify     how the listener checks a token is genuine before the database sees it, or {@code null}
     * @param lock       the lock name a verifier is asked about (the token is a session's, not a row's); required
     *                   with {@code verify}
     * @param readiness  whether the listener's health gates the replica's readiness
     */
    public record SqlPolicy(String name, List<FencedTable> tables, Policy.MissingToken missing,
                            Policy.EqualToken equal, long maxAdvance, @Nullable TokenVerification verify,
                            @Nullable String lock,
                            Policy.Readiness readiness) {
        public SqlPolicy {
            Objects.requireNonNull(name, "name");
            tables = List.copyOf(tables);
            Objects.requireNonNull(missing, "missing");
            Objects.requireNonNull(equal, "equal");
            Objects.requireNonNull(readiness, "readiness");
            if (maxAdvance < 1) {
                throw new IllegalArgumentException("maxAdvance must be at least 1, was " + maxAdvance);
            }
            if ((verify == null) != (lock == null)) {
                throw new IllegalArgumentException("verify and lock go together");
            }
        }
    }

    /**
     * A fenced table.
     *
     * @param schema the table's schema ({@code public} when the file names none)
     * @param table  the table's name
     * @param scope  the scope of each row, from its columns ({@code jobs/{id}}); a constant fences the whole table
     *               on one scope
     * @param policy the name of the policy it belongs to
     */
    public record FencedTable(String schema, String table, ScopeTemplate scope, String policy) {
        public FencedTable {
            Objects.requireNonNull(schema, "schema");
            Objects.requireNonNull(table, "table");
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(policy, "policy");
        }

        /** Equal when they fence the same table on the same template (a reload compares them). */
        @Override
        public boolean equals(Object o) {
            return o instanceof FencedTable t && schema.equals(t.schema) && table.equals(t.table)
                    && scope.toString().equals(t.scope.toString()) && policy.equals(t.policy);
        }

        @Override
        public int hashCode() {
            return Objects.hash(schema, table, scope.toString(), policy);
        }

        /** {@code schema.table}. */
        public String qualified() {
            return schema + "." + table;
        }

        /** The columns the scope reads. */
        public Set<String> columns() {
            return Set.copyOf(scope.variables());
        }
    }
}
