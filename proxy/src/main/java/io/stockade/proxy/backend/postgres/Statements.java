package io.stockade.proxy.backend.postgres;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.ParamSource;
import io.stockade.policy.BackendConfig.Statement;

import org.jspecify.annotations.Nullable;

/**
 * The statements of one method, joined into one multi-statement (sent in one go, inside the write's transaction).
 *
 * @param plain     the statements alone
 * @param fenced    table mode: the fence call first, then the statements
 * @param observed  table mode, observe: the observing fence call first
 * @param single    table mode, a method of one statement with {@code one-statement: true}: the statement and the
 *                  fence as one statement ({@link OneStatement}), sent in autocommit; null otherwise
 * @param readsBody whether a parameter comes from the body
 * @param used      the parameters the statements (and the policy's {@code check}) use
 */
record Statements(List<Statement> statements, String plain, String fenced, String observed,
                  @Nullable String single,
                  boolean readsBody, Set<String> used) {
    private static final String FENCE_CALL = "SELECT stockade_fence(?, ?, ?, ?);\n";
    private static final String OBSERVE_CALL = "SELECT stockade_fence_observe(?, ?, ?, ?);\n";

    /** The plan of {@code statements} under {@code config}; {@code check} is the policy's check, or null. */
    static Statements of(BackendConfig.Postgres config, List<Statement> statements,
                         @Nullable Statements check) {
        // "\n;" ends a statement whose last line is a -- comment
        String joined = String.join("\n;\n", statements.stream().map(s -> s.sql().jdbc()).toList());
        if (config.commit() == BackendConfig.Commit.PIPELINED) {
            joined += "\n;\nCOMMIT";
        }
        boolean body = statements.stream().flatMap(s -> s.sql().placeholders().stream())
                .map(config.params()::get)
                .anyMatch(p -> p != null && (p.source() == ParamSource.BODY || p.source() == ParamSource.BODY_TEXT));
        Set<String> used = new HashSet<>();
        statements.forEach(s -> used.addAll(s.sql().placeholders()));
        if (check != null) {
            used.addAll(check.used());
        }
        String single = OneStatement.applies(config, statements) ? OneStatement.jdbc(statements.getFirst()) : null;
        return new Statements(statements, joined, FENCE_CALL + joined, OBSERVE_CALL + joined, single, body, used);
    }
}
