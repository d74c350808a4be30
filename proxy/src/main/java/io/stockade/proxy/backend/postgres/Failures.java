package io.stockade.proxy.backend.postgres;

import java.sql.SQLException;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.backend.postgres.TransactionRunner.Call;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.webserver.http.ServerResponse;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * The answer to a write whose transaction failed, from its SQLSTATE and how far the transaction got (the package
 * documentation's "Errors" list). Used by {@link TransactionRunner}.
 */
final class Failures {
    private static final Logger LOG = Logger.getLogger(Failures.class.getName());
    /** SQLSTATE raised by {@code stockade_fence} for a stale token. */
    static final String STALE = "SF409";
    /** SQLSTATE raised by {@code stockade_fence} for a token jumping more than the policy's max-advance. */
    static final String TOO_FAR = "SF422";

    private Failures() {
    }

    /** How far a failed transaction got: what its answer may claim. */
    enum Reached {
        /** It failed before its COMMIT could run: nothing was committed. */
        BEFORE_COMMIT,
        /** Its COMMIT was sent and may have run: the error itself tells whether the outcome is known. */
        COMMIT_SENT,
        /**
         * Pipelined, the server answered the COMMIT (or, one statement, the statement): reading the results failed
         * afterwards: it was committed.
         */
        COMMITTED
    }

    /**
     * The answer to a failed transaction. It was rolled back in every case (an explicit transaction commits only
     * when its COMMIT succeeds, and a COMMIT the server refused with an error rolled back too), so the fence bump
     * did not survive either; except when the COMMIT itself got no clear answer (the connection was lost, the
     * server was shutting down): then the outcome is unknown; and except a pipelined write whose COMMIT the server
     * answered before its results could be read: that one was committed.
     *
     * @param reached  how far the transaction got
     * @param attempts the attempts before this one (retried serialization failures and deadlocks)
     */
    static WriteResult answer(SQLException e, Reached reached, Call call, int attempts,
                              BackendConfig.Postgres config) {
        Exchange exchange = call.exchange();
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        ServerErrorMessage server = e instanceof PSQLException p ? p.getServerErrorMessage() : null;
        String constraint = server == null ? null : server.getConstraint();
        String detail = server != null && server.getMessage() != null ? server.getMessage() : e.getMessage();
        ServerResponse res = exchange.response();
        if (reached == Reached.COMMITTED) {
            // committed: an accepted write whose answer is a problem, not a refusal
            Problem.of(ProblemType.ANSWER_UNREADABLE, "the write was committed (" + (call.single()
                    ? "one statement, committed as it ended" : "commit: pipelined") + "), but its results could"
                    + " not be read: " + detail).send(res);
            return new WriteResult.Answered(ProblemType.ANSWER_UNREADABLE.status());
        }
        // 57014: a statement or the COMMIT was cancelled (statement timeout) before it committed: rolled back
        if (reached == Reached.COMMIT_SENT && (server == null || state.isEmpty() || state.startsWith("08")
                || (state.startsWith("57") && !state.equals("57014")) || state.startsWith("58")
                || state.startsWith("XX"))) {
            String sent = call.single() ? "the statement was sent (one statement: it commits as it ends)"
                    : "COMMIT was sent" + (config.commit() == BackendConfig.Commit.PIPELINED
                    ? " (commit: pipelined sends it with the statements)" : "");
            return new WriteResult.Unknown("no clear answer after " + sent + "; the connection failed or the"
                    + " server stopped: " + e.getMessage());
        }
        if (state.equals(STALE) || state.equals(TOO_FAR)) {
            try {
                // the refusal's detail is the highest token; no server message: unreadable as well
                long highest = Long.parseLong(server == null ? "" : server.getDetail());
                return state.equals(STALE) ? new WriteResult.Stale(highest) : new WriteResult.TooFar(highest);
            } catch (RuntimeException unreadable) {
                return new WriteResult.Unavailable("refused token, highest unreadable: " + e.getMessage());
            }
        }
        if (state.equals("40001") || state.equals("40P01")) {
            return sent(Problem.of(ProblemType.SERIALIZATION_FAILURE, detail + " (gave up after"
                    + " " + (attempts + 1) + " attempts; nothing was written)"));
        }
        if (state.equals("23505")) {
            return sent(Problem.of(ProblemType.UNIQUE_VIOLATION, detail
                    + "; nothing was written").with("constraint", constraint));
        }
        if (state.startsWith("23")) {
            return sent(Problem.of(ProblemType.CONSTRAINT_VIOLATION, detail
                    + "; nothing was written").with("constraint", constraint));
        }
        if (state.equals("57014")) {
            return sent(Problem.of(ProblemType.STATEMENT_TIMEOUT, "the database cancelled"
                    + " the statements after the statement timeout of " + config.datasource().statementTimeout()
                    .toMillis() + " ms; the transaction was rolled back, nothing was written"));
        }
        if (state.startsWith("57P") || state.equals("08001") || state.equals("08004")) {
            // the server refused or terminated the session before anything committed
            return new WriteResult.Unavailable("database unavailable: " + detail);
        }
        if (state.startsWith("08")) {
            // before the COMMIT was sent: the server never committed this transaction
            return new WriteResult.Unavailable("the database connection failed before COMMIT, nothing was"
                    + " written: " + e.getMessage());
        }
        if (state.startsWith("22")) {
            return sent(Problem.of(ProblemType.BAD_PARAMETER, "the database refused a value: "
                    + detail + "; nothing was written"));
        }
        LOG.log(Level.WARNING, "policy " + exchange.route().policy().name() + ": statement failed (SQLSTATE "
                + state + ")", e);
        // a text-bound scope variable meeting a column of another type: say why it is text, and what to do
        String why = (state.equals("42883") || state.equals("42804")) && call.binder().bindsScopeText()
                ? "; a path variable the scope reads " + Binder.SCOPE_TEXT_HINT : "";
        return sent(Problem.of(ProblemType.STATEMENT_FAILED, "the database refused the"
                + " policy's statements (SQLSTATE " + state + "): " + detail + why + "; nothing was written")
                .with("sqlstate", state));
    }

    /** The database refused the write: nothing was written, and the pipeline answers the refusal. */
    private static WriteResult sent(Problem p) {
        return new WriteResult.Refused(p);
    }
}
