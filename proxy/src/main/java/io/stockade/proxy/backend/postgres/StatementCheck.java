package io.stockade.proxy.backend.postgres;

import java.sql.Connection;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.proxy.postgres.PostgresPools;

import com.zaxxer.hikari.HikariDataSource;
import org.postgresql.core.BaseConnection;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * At load, when the database answers: each statement of a postgres backend described by PostgreSQL without being
 * run, so that a column or table the database does not have (a typo), a syntax error or an unknown function is a
 * located error at load instead of a 502 at the first write.
 * <p>
 * How: {@code PREPARE} of the statement (PostgreSQL parses and analyses it, resolving every table, column and
 * function, and runs nothing), then {@code DEALLOCATE}, both in one transaction that is rolled back: no prepared
 * statement outlives the check, and one transaction keeps one server connection under a transaction pooler such
 * as PgBouncer. (pgjdbc's {@code getParameterMetaData()} would describe without a name, but not in the simple
 * query mode some deployments behind a pooler use.)
 * <p>
 * Only what the statement's text itself gets wrong is reported (SQLSTATE class 42, the syntax and name errors).
 * The placeholders go out without types here, while the proxy binds typed values at a write, so the errors about a
 * parameter's type ({@code 42P18}, {@code 42P08}, {@code 42725}, {@code 42804}) are not taken for the statement's;
 * and a database that cannot be reached now, or fails otherwise, is the start's warning ({@code checkAtStart}),
 * not a load failure.
 */
final class StatementCheck {
    private static final Logger LOG = Logger.getLogger(StatementCheck.class.getName());
    /** Class 42 errors that may come from a placeholder sent without its type. */
    private static final Set<String> PARAMETER_TYPES = Set.of("42P18", "42P08", "42725", "42804");

    private StatementCheck() {
    }

    /**
     * What PostgreSQL says is wrong with the backend's statements, each as
     * {@code statements.METHOD[i] (name): message (SQLSTATE s)[; hint]}; empty when all describe, or when the
     * database cannot be asked now.
     */
    static List<String> problems(HikariDataSource pool, BackendConfig.Postgres config, Set<String> scopeParams) {
        List<String> problems = new ArrayList<>();
        Set<String> scopeText = new HashSet<>();
        for (String name : scopeParams) {
            if (Binder.boundAsText(Objects.requireNonNull(config.params().get(name), "a declared parameter"))) {
                scopeText.add(name);
            }
        }
        try (Connection pooled = pool.getConnection()) {
            pooled.setAutoCommit(false);
            // PREPAREs go to the driver's connection itself: HikariCP takes some of the refusals a check provokes
            // (0A000, feature not supported) for a broken connection and closes it, which would end the check
            Connection c = pooled.unwrap(BaseConnection.class);
            try {
                for (Map.Entry<String, List<Statement>> method : config.statements().entrySet()) {
                    List<Statement> statements = method.getValue();
                    for (int i = 0; i < statements.size(); i++) {
                        // the field as the loader's errors name it: the index in the YAML list
                        String field = "statements." + method.getKey() + "[" + i + "] ('"
                                + statements.get(i).name() + "')";
                        Optional<String> problem = describe(c, statements.get(i).sql().positional(), false);
                        problem.ifPresent(p -> problems.add(field + ": " + p));
                        if (problem.isEmpty()) {
                            asText(c, statements.get(i), scopeText).ifPresent(p -> problems.add(field + ": " + p));
                        }
                        if (problem.isEmpty() && OneStatement.applies(config, statements)) {
                            // strict: the statement alone described, any other objection is the combined text's
                            describe(c, OneStatement.positional(statements.get(i)), true).ifPresent(p -> problems.add(
                                    field + ": sent as one statement with its fence (one-statement: true),"
                                    + " PostgreSQL refuses it: " + p + "; set one-statement: false"));
                        }
                    }
                }
                if (config.check().isPresent()) {
                    describe(c, config.check().get().sql().positional(), false)
                            .ifPresent(p -> problems.add("check: " + p));
                }
            } finally {
                pooled.rollback();
                pooled.setAutoCommit(true);
            }
        } catch (Unanswered | SQLException e) {
            // the start goes on (writes answer 503 until the database answers); the operator is told what went
            // unchecked, since a mistake in a statement now shows at its first write instead of at load
            SQLException cause = e instanceof SQLException sql ? sql : ((Unanswered) e).sqlCause();
            LOG.log(Level.WARNING, "the statements for " + config.datasource().url()
                    + " were not checked at load, the database did not answer ("
                    + PostgresPools.why(cause) + "): a mistake in one shows at its first write (a reload checks"
                    + " them again)");
            return List.of();
        }
        return problems;
    }

    /** Thrown out of the loop when the database stops answering: nothing more can be said at load. */
    private static final class Unanswered extends Exception {
        private final SQLException cause;

        Unanswered(SQLException cause) {
            super(cause);
            this.cause = cause;
        }

        /** The cause it was made with (its {@code getCause()}). */
        SQLException sqlCause() {
            return cause;
        }
    }

    /** The name of the prepared statement the check makes and deallocates at once. */
    private static final String PREPARED = "stockade_statement_check";

    /**
     * The database's objection to one statement, or empty: {@code PREPARE} (a parse and an analysis, nothing run)
     * and {@code DEALLOCATE} in the open transaction, which is then rolled back.
     *
     * @param strict whether every error of the database is an objection (but for a placeholder's type), not only
     *               the statement's own (class 42)
     */
    private static Optional<String> describe(Connection c, String positional, boolean strict) throws Unanswered {
        // a java.sql.Statement (the imported Statement is the policy's)
        try (var s = c.createStatement()) {
            s.execute("PREPARE " + PREPARED + " AS " + positional);
            s.execute("DEALLOCATE " + PREPARED);
            return Optional.empty();
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            try {
                c.rollback(); // the failed PREPARE aborted the transaction (and made nothing)
            } catch (SQLException gone) {
                throw new Unanswered(gone);
            }
            if (state.startsWith("08") || state.startsWith("57")) {
                throw new Unanswered(e);
            }
            if (PARAMETER_TYPES.contains(state) || (!strict && !state.startsWith("42"))) {
                return Optional.empty();
            }
            return Optional.of(message(e, state));
        }
    }

    /**
     * The database's objection to the statement with the path variables the scope reads typed {@code text}, as the
     * binder binds them (the others left for PostgreSQL to infer), or empty: a column of another type refuses text
     * (no implicit cast), which is said at load with what to declare instead of at the first write.
     */
    private static Optional<String> asText(Connection c, Statement statement, Set<String> scopeText)
            throws Unanswered {
        List<String> placeholders = statement.sql().placeholders();
        if (placeholders.stream().noneMatch(scopeText::contains)) {
            return Optional.empty();
        }
        String types = String.join(", ", placeholders.stream()
                .map(name -> scopeText.contains(name) ? "text" : "unknown").toList());
        try (var s = c.createStatement()) {
            s.execute("PREPARE " + PREPARED + " (" + types + ") AS " + statement.sql().positional());
            s.execute("DEALLOCATE " + PREPARED);
            return Optional.empty();
        } catch (SQLException e) {
            String state = e.getSQLState() == null ? "" : e.getSQLState();
            try {
                c.rollback();
            } catch (SQLException gone) {
                throw new Unanswered(gone);
            }
            if (state.startsWith("08") || state.startsWith("57")) {
                throw new Unanswered(e);
            }
            if (!state.equals("42883") && !state.equals("42804")) {
                return Optional.empty();
            }
            return Optional.of(message(e, state) + "; a path variable the scope reads (" + String.join(", ",
                    placeholders.stream().filter(scopeText::contains).distinct().toList()) + ") "
                    + Binder.SCOPE_TEXT_HINT);
        }
    }

    private static String message(SQLException e, String state) {
        ServerErrorMessage server = e instanceof PSQLException p ? p.getServerErrorMessage() : null;
        String text = server != null && server.getMessage() != null ? server.getMessage() : e.getMessage();
        StringBuilder b = new StringBuilder(text).append(" (SQLSTATE ").append(state).append(')');
        if (server != null && server.getHint() != null) {
            b.append("; ").append(server.getHint());
        }
        return b.toString();
    }
}
