package io.stockade.proxy.backend.postgres;

import java.util.List;
import java.util.Optional;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.policy.SqlText;

/**
 * A fenced method of one statement sent as one statement with its fence (table mode, {@code one-statement: true},
 * opt-in): the route's statement, unchanged, behind a data-modifying {@code WITH} that calls
 * {@code stockade_fence}. Sent in autocommit, it is one implicit transaction: the fence moves if and only if the
 * statement committed, in one round trip and without BEGIN and COMMIT.
 * <p>
 * The {@code WITH} is an {@code INSERT} that never inserts: PostgreSQL runs a data-modifying {@code WITH} always
 * and to completion, whether the statement reads it or not, and this one's one-time filter is the fence call,
 * which answers the token (never NULL, so nothing is inserted) or raises {@code SF409}/{@code SF422}, failing the
 * whole statement. PostgreSQL runs an unread {@code WITH} after the statement itself, so the fence is decided as
 * the statement ends, not before it, and this is why it is opt-in:
 * <ul>
 *   <li>the statement reads with a snapshot taken before its fence: a write with a lower token may commit while it
 *   runs (its fence was not raised yet), and a statement that reads rows other than those it writes (an aggregate,
 *   {@code INSERT ... SELECT}, a {@code NOT EXISTS} check) does not see it. A statement that writes only the rows it
 *   names by key ({@code UPDATE/DELETE ... WHERE key = ...}, {@code INSERT ... ON CONFLICT}) is safe: PostgreSQL
 *   re-reads each row it locks. The explicit transaction raises the fence first, and its statement's snapshot is
 *   taken after;</li>
 *   <li>a stale write's statement runs and is rolled back (its row locks held until then), and one whose statement
 *   fails on its own (a constraint) is answered with that failure: refused either way, nothing written;</li>
 *   <li>a target whose rules rewrite the statement ({@code DO INSTEAD NOTHING}) drops the {@code WITH} with it: the
 *   fence neither checks nor moves (nothing is written either); rules that make several queries are refused by
 *   PostgreSQL (the load check reports it when the database answers at load).</li>
 * </ul>
 * The policy reference (policies/README.md, {@code one-statement}) says so to users.
 * <p>
 * Which statements: those that may follow a {@code WITH} ({@code INSERT}, {@code UPDATE}, {@code DELETE},
 * {@code SELECT}, {@code MERGE}) and do not start with their own {@code WITH} (two would not parse). At load the
 * statement check ({@link StatementCheck}) has the database describe the combined text too.
 */
final class OneStatement {
    /** The statements a data-modifying {@code WITH} may precede, by first keyword. */
    private static final Set<String> FITS = Set.of("INSERT", "UPDATE", "DELETE", "SELECT", "MERGE");
    /**
     * The fence in front of the statement: its four parameters (scope, token, accept equal, max advance) come
     * first, as in the transaction's {@code SELECT stockade_fence(?, ?, ?, ?)}.
     */
    private static final String FENCE = "WITH stockade_fence_gate AS (INSERT INTO stockade_fences (scope, token)"
            + " SELECT NULL, NULL WHERE stockade_fence(%s, %s, %s, %s) IS NULL)\n";

    private OneStatement() {
    }

    /** Whether a fenced method of {@code statements} is sent as one statement with the fence. */
    static boolean applies(BackendConfig.Postgres config, List<Statement> statements) {
        // the config refuses one-statement with fence: column, so it is table mode here
        return config.oneStatement() && statements.size() == 1 && fits(statements.getFirst());
    }

    /** Whether {@code statement} can be sent behind the fence's {@code WITH}. */
    private static boolean fits(Statement statement) {
        Optional<String> first = statement.sql().firstKeyword();
        return first.isPresent() && FITS.contains(first.get());
    }

    /** The JDBC text: the fence's four {@code ?} first, then the statement's. */
    static String jdbc(Statement statement) {
        return FENCE.formatted("?", "?", "?", "?") + statement.sql().jdbc();
    }

    /**
     * The text with PostgreSQL's positional parameters, for {@code PREPARE}: the fence's typed {@code $1} to
     * {@code $4}, the statement's from {@code $5}.
     */
    static String positional(Statement statement) {
        return SqlText.parse(FENCE.formatted(":scope::text", ":token::bigint", ":equal::boolean",
                ":advance::bigint") + statement.sql().sql()).positional();
    }
}
