package io.stockade.proxy.backend.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.FenceMode;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.backend.postgres.Failures.Reached;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.postgres.PostgresPools;

import com.zaxxer.hikari.HikariDataSource;
import org.jspecify.annotations.Nullable;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;
import org.postgresql.util.PSQLException;

/**
 * Runs one write of the {@code postgres} backend, its parameters already bound: on a pooled connection, the fence
 * and the statements and the COMMIT (or the one statement carrying the fence), again after a serialization
 * failure or a deadlock, under the {@link TransactionWatchdog}; every failure is mapped to its answer by how far
 * the transaction got ({@link Failures}). The connection goes back to the pool clean before the run answers.
 */
final class TransactionRunner implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(TransactionRunner.class.getName());

    private final BackendConfig.Postgres config;
    private final HikariDataSource pool;
    private final TransactionWatchdog watchdog = new TransactionWatchdog("stockade-postgres-watchdog");
    /** Column mode: the policy's {@code check} SELECT; null without one. */
    private final @Nullable Statements check;

    TransactionRunner(BackendConfig.Postgres config, HikariDataSource pool, @Nullable Statements check) {
        this.config = config;
        this.pool = pool;
        this.check = check;
    }

    /** How a write is fenced: by the database's fence (or its column), observed, or not at all. */
    enum Kind { FENCED, OBSERVED, PLAIN }

    /** One statement's result. */
    record Result(Statement statement, int affected, List<String> rows) {
    }

    /**
     * Runs the write's transaction on a pooled connection, again (on a fresh one) after a serialization failure
     * or a deadlock up to the policy's retries, and tells what it came to: after the commit and after the connection
     * went back to the pool.
     */
    Ran run(Call call) {
        for (int attempt = 0; ; attempt++) {
            Connection c;
            try {
                c = pool.getConnection();
            } catch (SQLException e) {
                return new Ran.Ended(new WriteResult.Unavailable(PostgresPools.why(e)));
            }
            Ran ran;
            try (var watch = watchdog.watch(c, limit(call))) {
                ran = call.single() ? oneStatement(c, call) : transaction(c, call);
            } catch (Failed f) {
                String state = f.cause().getSQLState() == null ? "" : f.cause().getSQLState();
                if ((state.equals("40001") || state.equals("40P01")) && attempt < config.retries()) {
                    continue; // rolled back (the connection is released below, before the next attempt)
                }
                return new Ran.Ended(Failures.answer(f.cause(), f.reached(), call, attempt, config));
            } finally {
                release(c);
            }
            return ran;
        }
    }

    /**
     * The watchdog's bound for one attempt: the statement timeout for each statement the transaction may run —
     * the route's statements, the fence's own (the fence call in table mode; in column mode the max-advance read
     * before and the re-check after) and the COMMIT (its deferred triggers run in it), each of which the server may
     * let run that long, waiting for locks included — plus 5 s.
     */
    static Duration limit(Duration statementTimeout, int statements) {
        return statementTimeout.multipliedBy(statements + 3L).plusSeconds(5);
    }

    private Duration limit(Call call) {
        return limit(config.datasource().statementTimeout(), call.plan().statements().size());
    }

    /**
     * What one run needs, bound once for every attempt.
     *
     * @param single the statement and the fence as one statement, in autocommit ({@link OneStatement})
     */
    record Call(Exchange exchange, Statements plan, Binder binder, String sql, Kind kind, boolean fencedColumn,
                boolean single, long token, Fencing.Rule rule) {
    }

    /**
     * What a run came to: committed, with its results (and for observe the highest token before, null for a new
     * scope); or ended without results to answer: rolled back for a refused token, or failed (the failure's answer).
     */
    sealed interface Ran {
        record Committed(List<Result> results, @Nullable Long before) implements Ran {
        }

        record Ended(WriteResult result) implements Ran {
        }
    }

    /** A transaction that failed, and how far it got. */
    private static final class Failed extends Exception {
        private final SQLException cause;
        private final Reached reached;

        Failed(SQLException cause, Reached reached) {
            super(cause);
            this.cause = cause;
            this.reached = reached;
        }

        /** The cause it was made with (its {@code getCause()}). */
        SQLException cause() {
            return cause;
        }

        Reached reached() {
            return reached;
        }
    }

    /**
     * Runs one write as one explicit transaction on {@code c}: autocommit off, the fence call (table mode) and the
     * statements sent as one multi-statement prepared statement (pgjdbc pipelines its BEGIN with them), then
     * COMMIT only when every statement succeeded and the token was not refused; anything else rolls back. With
     * {@code commit: pipelined} the COMMIT is the multi-statement's last statement instead: the server never
     * commits a transaction in which a statement failed (it skips the COMMIT, the transaction stays open and
     * aborted and is rolled back here; or, after a Sync pgjdbc put between the statements, it answers the COMMIT
     * with ROLLBACK), so it commits under the same condition, one round trip sooner. Never
     * an autocommit multi-statement: pgjdbc may put a Sync between the statements (it does after
     * {@code prepareThreshold} executions, for a statement whose result rows it cannot size), and under autocommit
     * each Sync commits what ran before it.
     */
    private Ran transaction(Connection c, Call call) throws Failed {
        Exchange exchange = call.exchange();
        Statements plan = call.plan();
        long token = call.token();
        boolean committing = false;
        boolean pipelined = pipelinedCommit();
        boolean sent = false;
        boolean executed = false;
        try {
            c.setAutoCommit(false);
            if (call.fencedColumn() && call.rule().mayBeTooFar(token)) {
                // Column mode's comparison is in the user's SQL, so the jump is judged by a read first. A
                // concurrent raise only shrinks the jump: this is never more lenient than an atomic check. No row
                // (or no token in it): the first token, judged against first-token-max.
                Long read = checkToken(c, call.binder());
                long highest = read == null ? FenceRule.NONE : read;
                if (call.rule().tooFar(token, highest)) {
                    c.rollback();
                    return new Ran.Ended(new WriteResult.TooFar(highest));
                }
            }
            Ran.Ended first = firstTokenTooFar(c, call);
            if (first != null) {
                c.rollback();
                return first;
            }
            // the fence call's result comes first: table mode (enforce or observe)
            boolean prefixed = call.kind() == Kind.OBSERVED
                    || (call.kind() == Kind.FENCED && config.fence() == FenceMode.TABLE);
            Long before = null;
            List<Result> results = new ArrayList<>();
            try (PreparedStatement ps = c.prepareStatement(call.sql())) {
                int index = 1;
                if (call.kind() == Kind.FENCED && prefixed) {
                    index = bindFence(ps, call);
                } else if (call.kind() == Kind.OBSERVED) {
                    ps.setString(index++, exchange.scope());
                    ps.setLong(index++, token);
                    ps.setLong(index++, call.rule().maxAdvance());
                    ps.setLong(index++, call.rule().firstTokenMax());
                }
                for (Statement s : plan.statements()) {
                    index = call.binder().bind(ps, index, s);
                }
                sent = true;
                boolean isResultSet = ps.execute();
                // pipelined: execute() returns only once the server answered every statement and the COMMIT
                executed = true;
                int n = prefixed ? -1 : 0;
                while (true) {
                    if (!isResultSet && ps.getUpdateCount() == -1) {
                        break;
                    }
                    if (n == -1) {
                        try (ResultSet r = ps.getResultSet()) {
                            r.next();
                            long v = r.getLong(1);
                            before = r.wasNull() ? null : v;
                        }
                    } else if (n < plan.statements().size()) {
                        results.add(result(ps, plan.statements().get(n), isResultSet));
                    }
                    n++;
                    isResultSet = ps.getMoreResults();
                }
            }
            Ran.Ended stale = recheck(c, call, results);
            if (stale != null) {
                return stale;
            }
            committing = true;
            if (!pipelined) {
                c.commit();
            }
            return new Ran.Committed(results, before);
        } catch (SQLException e) {
            if (pipelined && executed) {
                throw new Failed(e, Reached.COMMITTED);
            }
            boolean commitMayHaveRun = committing || (pipelined && sent && commitMayHaveRun(c, e));
            rollbackQuietly(c);
            throw new Failed(e, commitMayHaveRun ? Reached.COMMIT_SENT : Reached.BEFORE_COMMIT);
        }
    }

    /** The result of {@code s}, the statement {@code ps} is at: its rows, or its count of rows changed. */
    private static Result result(PreparedStatement ps, Statement s, boolean isResultSet) throws SQLException {
        if (!isResultSet) {
            return new Result(s, ps.getUpdateCount(), List.of());
        }
        List<String> rows = Rows.read(ps.getResultSet());
        return new Result(s, Rows.isQuery(s) ? 0 : rows.size(), rows);
    }

    /** Binds the fence's four parameters (scope, token, accept equal, max advance) first; answers the next index. */
    private static int bindFence(PreparedStatement ps, Call call) throws SQLException {
        ps.setString(1, call.exchange().scope());
        ps.setLong(2, call.token());
        ps.setBoolean(3, call.rule().acceptEqual());
        ps.setLong(4, call.rule().maxAdvance());
        return 5;
    }

    /**
     * Runs a fenced write of one statement as one statement with its fence ({@link OneStatement}), in autocommit:
     * one implicit transaction, committed as the statement ends, rolled back by any error in it (the fence's stale
     * token included) or at its commit (a deferred constraint). Its outcome is therefore known from the server's
     * answer: an error the server sent is a rollback; no answer at all (the connection lost, the server stopping)
     * leaves it unknown once the statement was sent, as for a lost COMMIT.
     */
    private Ran oneStatement(Connection c, Call call) throws Failed {
        Statement s = call.plan().statements().getFirst();
        boolean sent = false;
        boolean answered = false;
        try {
            if (!c.getAutoCommit()) {
                c.setAutoCommit(true); // the pool hands out autocommit connections (release() restores it)
            }
            Ran.Ended first = firstTokenTooFar(c, call);
            if (first != null) {
                return first; // a read in autocommit: nothing to roll back
            }
            try (PreparedStatement ps = c.prepareStatement(call.sql())) {
                call.binder().bind(ps, bindFence(ps, call), s);
                sent = true;
                boolean isResultSet = ps.execute();
                answered = true; // the server answered the statement: it committed as it ended
                return new Ran.Committed(List.of(result(ps, s, isResultSet)), null);
            }
        } catch (SQLException e) {
            if (answered) {
                throw new Failed(e, Reached.COMMITTED);
            }
            throw new Failed(e, sent && !serverRefused(e) ? Reached.COMMIT_SENT : Reached.BEFORE_COMMIT);
        }
    }

    /**
     * Column mode: a fenced statement that changed no row may have met a higher token in the row (or no row):
     * the policy's {@code check} tells which; a higher token (or an equal one the policy refuses) rolls back.
     * Null when the write stands.
     */
    private Ran.@Nullable Ended recheck(Connection c, Call call, List<Result> results) throws SQLException {
        if (!call.fencedColumn()
                || results.stream().noneMatch(r -> r.affected() == 0 && !Rows.isQuery(r.statement()))) {
            return null;
        }
        Long highest = checkToken(c, call.binder());
        if (highest != null && FenceRule.stale(call.token(), highest, call.rule().acceptEqual())) {
            c.rollback();
            return new Ran.Ended(new WriteResult.Stale(highest));
        }
        return null;
    }

    /**
     * Whether COMMIT is sent with the statements ({@code commit: pipelined}, table mode only), not after their
     * results were read.
     */
    private boolean pipelinedCommit() {
        return config.commit() == BackendConfig.Commit.PIPELINED;
    }

    /**
     * After a pipelined write failed: could its COMMIT have run? Not when the server answered with an error and the
     * transaction is still open (aborted): the COMMIT was skipped with the rest. When the connection failed (no
     * answer from the server) or the transaction is over, it may have.
     */
    private static boolean commitMayHaveRun(Connection c, SQLException e) {
        if (!serverRefused(e)) {
            return true; // the connection failed or the server ended the session: its last state is not known
        }
        try {
            return c.isClosed() || c.unwrap(BaseConnection.class).getTransactionState() == TransactionState.IDLE;
        } catch (SQLException unwrap) {
            return true;
        }
    }

    /**
     * Whether {@code e} is the server's answer refusing what ran (an error it sent, the session going on), not a
     * connection that failed or a session the server ended ({@code 08}, {@code 57P}, {@code 58}, {@code XX}), after
     * which what last happened is not known.
     */
    private static boolean serverRefused(SQLException e) {
        String state = e.getSQLState() == null ? "" : e.getSQLState();
        return e instanceof PSQLException p && p.getServerErrorMessage() != null && !state.startsWith("08")
                && !state.startsWith("57P") && !state.startsWith("58") && !state.startsWith("XX");
    }

    /**
     * Rolls back whatever is open (nothing is sent when no transaction is); a broken connection is left to
     * {@link #release}.
     */
    private static void rollbackQuietly(Connection c) {
        try {
            if (!c.getAutoCommit()) {
                c.rollback();
            }
        } catch (SQLException e) {
            // the connection is gone: release() evicts it
        }
    }

    /**
     * Returns the connection to the pool clean: no transaction open, autocommit on. Rolling back first matters:
     * turning autocommit on commits an open transaction. A connection that cannot be made clean is evicted.
     */
    private void release(Connection c) {
        try {
            if (!c.getAutoCommit()) {
                c.rollback(); // no round trip after a commit or a rollback: pgjdbc knows no transaction is open
                c.setAutoCommit(true);
            }
            c.close();
        } catch (SQLException e) {
            LOG.log(Level.FINE, "a connection could not be made clean; evicting it", e);
            pool.evictConnection(c);
        }
    }

    /**
     * Table mode's first-token bound ({@code fence.first-token-max}, {@link Policy.Fence#tooFar}): the fence
     * function bounds the jump over an existing row, not the first row, so a token above the bound is refused when
     * the scope has no row yet, read first in the write's transaction (or just before its one statement). A row
     * that appears after the read does not matter: the refusal is right as of the read, and nothing was written.
     * Only a token above the bound is read for; null when the write may go on.
     */
    private static Ran.@Nullable Ended firstTokenTooFar(Connection c, Call call) throws SQLException {
        if (call.kind() != Kind.FENCED || call.fencedColumn() || call.token() <= call.rule().firstTokenMax()) {
            return null;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT token FROM stockade_fences WHERE scope = ?")) {
            ps.setString(1, call.exchange().scope());
            try (ResultSet r = ps.executeQuery()) {
                return r.next() ? null : new Ran.Ended(new WriteResult.TooFar(FenceRule.NONE));
            }
        }
    }

    /** Column mode: the token of the row a write targets, or null when there is no such row. */
    private @Nullable Long checkToken(Connection c, Binder binder) throws SQLException {
        Statements check = Objects.requireNonNull(this.check, "fence: column, the only mode that reads it, needs"
                + " check (the loader refuses it without)");
        try (PreparedStatement ps = c.prepareStatement(check.plain())) {
            binder.bind(ps, 1, check.statements().getFirst());
            try (ResultSet r = ps.executeQuery()) {
                if (!r.next()) {
                    return null;
                }
                long v = r.getLong(1);
                return r.wasNull() ? null : v;
            }
        }
    }

    @Override
    public void close() {
        watchdog.close();
    }
}
