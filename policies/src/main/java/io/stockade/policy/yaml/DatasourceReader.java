package io.stockade.policy.yaml;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

import io.stockade.policy.Datasource;

/** Reads a {@code datasource} block (postgres backend and store). */
final class DatasourceReader {

    private DatasourceReader() {
    }

    static Optional<Datasource> read(Field field) {
        return field.mapping().flatMap(ds -> {
            ds.allowOnly(Vocabulary.DATASOURCE_KEYS);
            Optional<String> url = ds.required("url", DatasourceReader::jdbcUrl);
            Optional<Optional<String>> user = ds.optional("user", Values::text);
            Optional<Optional<String>> password = ds.optional("password", Field::text);
            Optional<Optional<Path>> passwordFile = ds.optional("password-file", Values::path);
            Optional<Integer> poolSize = ds.optional("pool-size", f -> Values.integer(f, 1, 1000, "whole number"),
                    Datasource.DEFAULT_POOL_SIZE);
            Optional<Duration> statementTimeout = ds.optional("statement-timeout", Values::duration,
                    Datasource.DEFAULT_STATEMENT_TIMEOUT);
            Optional<Duration> connectTimeout = ds.optional("connect-timeout", Values::duration,
                    Datasource.DEFAULT_CONNECT_TIMEOUT);
            Optional<Datasource.Statements> statements = ds.optional("statements",
                    f -> Values.keyword(f, "statements", Vocabulary.STATEMENTS), Datasource.Statements.AUTO);
            if (!Values.allPresent(url, user, password, passwordFile, poolSize, statementTimeout, connectTimeout,
                    statements)) {
                return Optional.empty();
            }
            if (password.get().isPresent() && passwordFile.get().isPresent()) {
                field.error("give either 'password' or 'password-file', not both");
                return Optional.empty();
            }
            if (connectTimeout.get().toMillis() < 250) {
                field.error("connect-timeout must be at least 250ms (the connection pool's minimum)");
                return Optional.empty();
            }
            return Optional.of(new Datasource(url.get(), user.get().orElse(null), password.get().orElse(null),
                    passwordFile.get().orElse(null), poolSize.get(), statementTimeout.get(), connectTimeout.get(),
                    statements.get()));
        });
    }

    private static Optional<String> jdbcUrl(Field field) {
        return Values.text(field).flatMap(text -> {
            if (!text.startsWith("jdbc:postgresql:")) {
                field.error("expected a JDBC URL starting with jdbc:postgresql:// (e.g."
                        + " jdbc:postgresql://127.0.0.1:5432/app), got '" + text + "'");
                return Optional.empty();
            }
            if (text.matches("(?i).*[?&]password=.*")) {
                field.error("do not put the password in the URL (it would be logged): use 'password: ${VAR}'"
                        + " or 'password-file'");
                return Optional.empty();
            }
            return Optional.of(text);
        });
    }
}
