package io.stockade.policy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * A PostgreSQL connection pool, as the {@code datasource} block of a postgres backend or store declares it.
 * The password is never part of {@link #toString()} (it would end up in logs).
 *
 * @param url              a {@code jdbc:postgresql://} URL
 * @param user             the database user, or {@code null} for the URL's or the driver's default
 * @param password         the password (after {@code ${VAR}} substitution), or {@code null}
 * @param passwordFile     a file whose content (trailing newline removed) is the password, or {@code null};
 *                         read when the pool opens, never by the policy loader
 * @param poolSize         the most connections the pool keeps
 * @param statementTimeout the server cancels a statement running longer (PostgreSQL {@code statement_timeout})
 * @param connectTimeout   how long a request waits for a connection before it is refused (503)
 * @param statements       whether connections may keep named server-side statements
 */
public record Datasource(String url, @Nullable String user, @Nullable String password, @Nullable Path passwordFile,
                         int poolSize, Duration statementTimeout, Duration connectTimeout, Statements statements) {
    public static final int DEFAULT_POOL_SIZE = 16;
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(10);
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);

    /**
     * Whether a connection runs its statements as named server-side statements, parsed and planned once and kept on
     * the server connection, or as the unnamed statement, parsed and planned on every execution. A named statement
     * outlives the transaction on its server connection, which a transaction pooler (PgBouncer in transaction or
     * statement pooling, before 1.21 or without {@code max_prepared_statements}) hands to another client.
     */
    public enum Statements {
        /**
         * Named on a connection that reaches PostgreSQL itself: the server reports the address and port the driver
         * connected to (a pooler or proxy in between reports others); unnamed on any other, and where the driver's
         * host name no longer resolves to compare. A connection on which the question itself fails is closed (the
         * pool opens another).
         */
        AUTO,
        /** Named on every connection (pgjdbc's {@code prepareThreshold}, 5 unless the URL gives another). */
        NAMED,
        /** The unnamed statement on every connection ({@code prepareThreshold=0}). */
        UNNAMED
    }

    /** A datasource whose connections decide their statements themselves ({@link Statements#AUTO}). */
    public Datasource(String url, @Nullable String user, @Nullable String password, @Nullable Path passwordFile,
                      int poolSize, Duration statementTimeout, Duration connectTimeout) {
        this(url, user, password, passwordFile, poolSize, statementTimeout, connectTimeout, Statements.AUTO);
    }

    public Datasource {
        Objects.requireNonNull(url, "url");
        Objects.requireNonNull(statements, "statements");
        Objects.requireNonNull(statementTimeout, "statementTimeout");
        Objects.requireNonNull(connectTimeout, "connectTimeout");
        if (password != null && passwordFile != null) {
            throw new IllegalArgumentException("password and passwordFile are exclusive");
        }
    }

    @Override
    public String toString() {
        return "Datasource[url=" + url + ", user=" + user + ", password=" + (password == null ? "none" : "***")
                + ", passwordFile=" + passwordFile + ", poolSize=" + poolSize + ", statementTimeout="
                + statementTimeout + ", connectTimeout=" + connectTimeout + ", statements=" + statements + "]";
    }
}
