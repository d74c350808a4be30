package io.stockade.policy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

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
 */
public record Datasource(String url, String user, String password, Path passwordFile, int poolSize,
                         Duration statementTimeout, Duration connectTimeout) {
    public static final int DEFAULT_POOL_SIZE = 16;
    public static final Duration DEFAULT_STATEMENT_TIMEOUT = Duration.ofSeconds(10);
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);

    public Datasource {
        Objects.requireNonNull(url, "url");
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
                + statementTimeout + ", connectTimeout=" + connectTimeout + "]";
    }
}
