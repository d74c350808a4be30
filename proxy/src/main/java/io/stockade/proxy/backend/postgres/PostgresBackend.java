package io.stockade.proxy.backend.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.FenceMode;
import io.stockade.policy.BackendConfig.ParamSource;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.postgres.PostgresPools;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.store.postgres.PostgresFenceStore;

import com.zaxxer.hikari.HikariDataSource;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerResponse;
import org.postgresql.core.BaseConnection;
import org.postgresql.core.TransactionState;
import org.postgresql.util.PSQLException;
import org.postgresql.util.ServerErrorMessage;

/**
 * The {@code postgres} backend: each method of a policy runs the policy's named statements, in one transaction
 * with the fence (see the package documentation for the design).
 */
public final class PostgresBackend implements Backend, Keeper.StorageWrite {
    private static final Logger LOG = Logger.getLogger(PostgresBackend.class.getName());
    private static final String FENCE_CALL = "SELECT stockade_fence(?, ?, ?, ?);\n";
    private static final String OBSERVE_CALL = "SELECT stockade_fence_observe(?, ?, ?, ?);\n";
    /** SQLSTATE raised by {@code stockade_fence} for a stale token. */
    static final String STALE = "SF409";
    /** SQLSTATE raised by {@code stockade_fence} for a token jumping more than the policy's max-advance. */
    static final String TOO_FAR = "SF422";

    private final BackendConfig.Postgres config;
    private final HikariDataSource pool;
    private final TransactionWatchdog watchdog = new TransactionWatchdog("stockade-postgres-watchdog");
    private final Map<String, Statements> plans = new HashMap<>();
    private final Statements check;

    /**
     * The statements of one method, joined into one multi-statement (sent in one go, inside the write's
     * transaction).
     *
     * @param plain    the statements alone
     * @param fenced   table mode: the fence call first, then the statements
     * @param observed table mode, observe: the observing fence call first
     * @param single   table mode, a method of one statement with {@code one-statement: true}: the statement and
     *                 the fence as one statement ({@link OneStatement}), sent in autocommit; null otherwise
     * @param readsBody whether a parameter comes from the body
     */
    private record Statements(List<Statement> statements, String plain, String fenced, String observed,
                              String single, boolean readsBody, Set<String> used) {
    }

    private PostgresBackend(BackendConfig.Postgres config, HikariDataSource pool) {
        this.config = config;
        this.pool = pool;
        this.check = config.check().map(s -> statementsOf(List.of(s))).orElse(null);
        config.statements().forEach((method, statements) -> plans.put(method, statementsOf(statements)));
    }

    private Statements statementsOf(List<Statement> statements) {
        // "\n;" ends a statement whose last line is a -- comment
        String joined = String.join("\n;\n", statements.stream().map(s -> s.sql().jdbc()).toList());
        if (pipelinedCommit()) {
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

    /** Opens the pool and creates (or checks) the fence table. */
    public static PostgresBackend open(BackendConfig.Postgres config) throws IOException {
        // no driver socket timeout: the TransactionWatchdog bounds each transaction instead
        HikariDataSource pool = PostgresPools.open(config.datasource(), "stockade-backend", false);
        try {
            if (config.fence() == FenceMode.TABLE) {
                PostgresPools.prepare(pool, config.migrate(), config.datasource().url());
            }
            return new PostgresBackend(config, pool);
        } catch (IOException | RuntimeException e) {
            pool.close();
            throw e;
        }
    }

    /** With {@code fence: table}: the store's operations on this database's fence table, over this pool. */
    @Override
    public Optional<FenceAdmin> ownFenceAdmin() {
        if (config.fence() != FenceMode.TABLE) {
            return Optional.empty();
        }
        return Optional.of(PostgresFenceStore.over(pool, config.datasource().statementTimeout().plusSeconds(5)));
    }

    /**
     * The postgres backend's closed table: a method the policy declares statements for runs them, fenced by the
     * database in the same transaction when the policy fences the method; any other method is 405 before a
     * connection is taken.
     */
    @Override
    public io.stockade.proxy.backend.Plan plan(Exchange exchange) {
        String method = exchange.request().prologue().method().text();
        String scope = exchange.scope();
        if (!plans.containsKey(method)) {
            return new io.stockade.proxy.backend.Plan.Refuse(scope, Problem.of(ProblemType.METHOD_NOT_ALLOWED,
                    "policy '" + exchange.route().policy().name() + "' declares no statements for " + method)
                    .header("Allow", String.join(", ", plans.keySet())));
        }
        if (exchange.fencing().fencesMethod(method)) {
            return exchange.fencing().plan(method, List.of(scope), Backend.headerToken(exchange),
                    new Keeper.InStorage(this), this::forward);
        }
        return new io.stockade.proxy.backend.Plan.Forward(scope, io.stockade.proxy.backend.Plan.Unfenced.NOT_FENCED,
                this::forward);
    }

    @Override
    public WriteResult write(Exchange exchange, long token, Fencing.Rule rule) {
        return run(exchange, token, rule, Kind.FENCED).result();
    }

    @Override
    public Keeper.Observed observe(Exchange exchange, long token, Fencing.Rule rule) {
        Outcome o = run(exchange, token, rule, config.fence() == FenceMode.TABLE ? Kind.OBSERVED : Kind.PLAIN);
        long before = o.before() == null ? FenceRule.NONE : o.before();
        // as enforce judges it: stale, a jump over max-advance, a first token over first-token-max
        // (stockade_fence_observe raised nothing for any of them)
        boolean wouldReject = FenceRule.stale(token, before, rule.acceptEqual()) || rule.tooFar(token, before);
        return new Keeper.Observed(wouldReject, before, o.result());
    }

    /** The statements without a fence (an unfenced method, or a policy that forwards writes unfenced). */
    private WriteResult forward(Exchange exchange) {
        return switch (run(exchange, -1, exchange.fencing().rule(), Kind.PLAIN).result()) {
            case WriteResult.Unavailable u -> new WriteResult.Refused(Problem.of(ProblemType.DATABASE_UNAVAILABLE,
                    u.reason()));
            case WriteResult.Unknown u -> new WriteResult.Refused(Problem.of(ProblemType.UNKNOWN_OUTCOME, u.reason()
                    + "; the statements may or may not have been applied"));
            case WriteResult r -> r;
        };
    }

    private enum Kind { FENCED, OBSERVED, PLAIN }

    /** What a run came to, and for observe the highest token before (null for a new scope). */
    private record Outcome(WriteResult result, Long before) {
        Outcome(WriteResult result) {
            this(result, null);
        }
    }

    /** One statement's result. */
    private record Result(Statement statement, int affected, List<String> rows) {
    }

    /** One write, in order: the plan of its method, its parameters bound, the transaction run (and retried). */
    private Outcome run(Exchange exchange, long token, Fencing.Rule rule, Kind kind) {
        String method = exchange.request().prologue().method().text().toUpperCase(Locale.ROOT);
        Statements plan = plans.get(method); // plan() refused a method without statements
        Bound bound = bind(exchange, plan, kind, token);
        if (bound.refused() != null) {
            return bound.refused();
        }
        boolean fencedColumn = kind == Kind.FENCED && config.fence() == FenceMode.COLUMN;
        boolean single = kind == Kind.FENCED && plan.single() != null;
        String sql = switch (kind) {
            case FENCED -> single ? plan.single() : config.fence() == FenceMode.TABLE ? plan.fenced() : plan.plain();
            case OBSERVED -> plan.observed();
            case PLAIN -> plan.plain();
        };
        return execute(new Call(exchange, plan, bound.binder(), sql, kind, fencedColumn, single, token,
                rule), method);
    }

    /** The parameters of a write, bound; or the answer that refused them (nothing ran). */
    private record Bound(Binder binder, Outcome refused) {
    }

    /** Reads the body when a parameter comes from it, and binds every parameter the plan uses. */
    private Bound bind(Exchange exchange, Statements plan, Kind kind, long token) {
        try {
            byte[] body;
            try {
                body = plan.readsBody() ? readBody(exchange) : null;
            } catch (UncheckedIOException e) {
                BodyBounds.BodyRefused refused = BodyBounds.BodyRefused.in(e);
                if (refused == null) {
                    throw e;
                }
                // Over max-body-bytes or body-timeout while it streamed: nothing ran; the pipeline answers.
                return new Bound(null, new Outcome(new WriteResult.Answered(refused.problem().status())));
            }
            if (body == null && plan.readsBody()) {
                return new Bound(null, new Outcome(new WriteResult.Refused(Problem.of(ProblemType.BODY_TOO_LARGE,
                        "the request body is larger than the policy's body-limit of " + config.bodyLimit()
                                + " bytes"))));
            }
            return new Bound(new Binder(config.params(), plan.used(), exchange, body,
                    kind == Kind.PLAIN ? null : token), null);
        } catch (Binder.BadParameter e) {
            return new Bound(null, new Outcome(new WriteResult.Refused(Problem.of(ProblemType.BAD_PARAMETER,
                    e.getMessage()).with("parameter", e.parameter()))));
        }
    }

    /**
     * Runs the write's transaction on a pooled connection, again (on a fresh one) after a serialization failure
     * or a deadlock up to the policy's retries, and answers: after the commit and after the connection went back
     * to the pool.
     */
    private Outcome execute(Call call, String method) {
        for (int attempt = 0; ; attempt++) {
            Connection c;
            try {
                c = pool.getConnection();
            } catch (SQLException e) {
                return new Outcome(new WriteResult.Unavailable(PostgresPools.why(e)));
            }
            Ran ran;
            try (var watch = watchdog.watch(c, limit(call))) {
                ran = call.single() ? oneStatement(c, call) : transaction(c, call);
            } catch (Failed f) {
                String state = f.cause().getSQLState() == null ? "" : f.cause().getSQLState();
                if ((state.equals("40001") || state.equals("40P01")) && attempt < config.retries()) {
                    continue; // rolled back (the connection is released below, before the next attempt)
                }
                return new Outcome(failure(f.cause(), f.reached(), call, attempt));
            } finally {
                release(c);
            }
            return switch (ran) {
                case Ran.Committed done -> new Outcome(answer(call.exchange().response(), method, done.results(),
                        config.emptyGet()), done.before());
                case Ran.Refused refused -> new Outcome(refused.result());
            };
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
    private record Call(Exchange exchange, Statements plan, Binder binder, String sql, Kind kind, boolean fencedColumn,
                        boolean single, long token, Fencing.Rule rule) {
    }

    /** A transaction that ran to its end: committed, or rolled back for a refused token. */
    private sealed interface Ran {
        record Committed(List<Result> results, Long before) implements Ran {
        }

        record Refused(WriteResult result) implements Ran {
        }
    }

    /** How far a failed transaction got: what its answer may claim. */
    private enum Reached {
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

    /** A transaction that failed, and how far it got. */
    private static final class Failed extends Exception {
        private final Reached reached;

        Failed(SQLException cause, Reached reached) {
            super(cause);
            this.reached = reached;
        }

        SQLException cause() {
            return (SQLException) getCause();
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
                    return new Ran.Refused(new WriteResult.TooFar(highest));
                }
            }
            Ran.Refused first = firstTokenTooFar(c, call);
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
            Ran.Refused stale = recheck(c, call, results);
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
            Ran.Refused first = firstTokenTooFar(c, call);
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
    private Ran.Refused recheck(Connection c, Call call, List<Result> results) throws SQLException {
        if (!call.fencedColumn()
                || results.stream().noneMatch(r -> r.affected() == 0 && !Rows.isQuery(r.statement()))) {
            return null;
        }
        Long highest = checkToken(c, call.binder());
        if (highest != null && FenceRule.stale(call.token(), highest, call.rule().acceptEqual())) {
            c.rollback();
            return new Ran.Refused(new WriteResult.Stale(highest));
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
    private static Ran.Refused firstTokenTooFar(Connection c, Call call) throws SQLException {
        if (call.kind() != Kind.FENCED || call.fencedColumn() || call.token() <= call.rule().firstTokenMax()) {
            return null;
        }
        try (PreparedStatement ps = c.prepareStatement("SELECT token FROM stockade_fences WHERE scope = ?")) {
            ps.setString(1, call.exchange().scope());
            try (ResultSet r = ps.executeQuery()) {
                return r.next() ? null : new Ran.Refused(new WriteResult.TooFar(FenceRule.NONE));
            }
        }
    }

    /** Column mode: the token of the row a write targets, or null when there is no such row. */
    private Long checkToken(Connection c, Binder binder) throws SQLException {
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

    private static WriteResult answer(ServerResponse res, String method, List<Result> results,
                                      BackendConfig.EmptyGet emptyGet) {
        StringBuilder b = new StringBuilder(256);
        boolean read = method.equals("GET") || method.equals("HEAD");
        if (read && emptyGet == BackendConfig.EmptyGet.NOT_FOUND
                && results.stream().allMatch(r -> r.rows().isEmpty())) {
            Problem.of(ProblemType.NOT_FOUND, "the read found no row (the policy's empty-get: not-found; "
                    + "empty-list answers 200 [] instead)").send(res);
            return new WriteResult.Answered(404);
        }
        if (read) {
            b.append('[');
            appendRows(b, results);
            b.append(']');
        } else {
            long affected = results.stream().mapToLong(Result::affected).sum();
            b.append("{\"rows_affected\":").append(affected).append(",\"rows\":[");
            appendRows(b, results);
            b.append("]}");
        }
        res.status(Status.OK_200);
        res.header(HeaderNames.CONTENT_TYPE, "application/json");
        res.send(b.toString().getBytes(StandardCharsets.UTF_8));
        return new WriteResult.Answered(200);
    }

    private static void appendRows(StringBuilder b, List<Result> results) {
        boolean first = true;
        for (Result r : results) {
            for (String row : r.rows()) {
                if (!first) {
                    b.append(',');
                }
                first = false;
                b.append(row);
            }
        }
    }

    /**
     * The answer to a failed transaction. It was rolled back in every case (an explicit transaction commits only
     * when its COMMIT succeeds, and a COMMIT the server refused with an error rolled back too), so the fence bump
     * did not survive either; except when the COMMIT itself got no clear answer (the connection was lost, the
     * server was shutting down): then the outcome is unknown; and except a pipelined write whose COMMIT the server
     * answered before its results could be read: that one was committed.
     *
     * @param reached how far the transaction got
     */
    private WriteResult failure(SQLException e, Reached reached, Call call, int attempts) {
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
                    : "COMMIT was sent" + (pipelinedCommit() ? " (commit: pipelined sends it with the statements)"
                    : "");
            return new WriteResult.Unknown("no clear answer after " + sent + "; the connection failed or the"
                    + " server stopped: " + e.getMessage());
        }
        if (state.equals(STALE) || state.equals(TOO_FAR)) {
            try {
                long highest = Long.parseLong(server.getDetail());
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
        return sent(Problem.of(ProblemType.STATEMENT_FAILED, "the database refused the"
                + " policy's statements (SQLSTATE " + state + "): " + detail + "; nothing was written")
                .with("sqlstate", state));
    }

    /** The database refused the write: nothing was written, and the pipeline answers the refusal. */
    private static WriteResult sent(Problem p) {
        return new WriteResult.Refused(p);
    }

    /**
     * The body's bytes (the binder decodes them, refusing what is not UTF-8), or null when it is larger than the
     * backend's {@code body-limit}. Read within the policy's bounds ({@link Exchange#body()}), before any statement
     * runs.
     */
    private byte[] readBody(Exchange exchange) {
        if (!exchange.request().content().hasEntity()) {
            return new byte[0];
        }
        try (InputStream in = exchange.body()) {
            byte[] bytes = in.readNBytes((int) Math.min(Integer.MAX_VALUE - 8, config.bodyLimit() + 1));
            if (bytes.length > config.bodyLimit()) {
                return null;
            }
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    @Override
    public List<String> definitionErrors() {
        return StatementCheck.problems(pool, config);
    }

    /** Every write is fenced in the database, in its own transaction: the proxy's fence store is never asked. */
    @Override
    public boolean needsFenceStore() {
        return false;
    }

    @Override
    public Optional<String> unreachable() {
        try (Connection c = pool.getConnection()) {
            return c.isValid(2) ? Optional.empty()
                    : Optional.of("database " + config.datasource().url() + ": the connection did not answer");
        } catch (SQLException e) {
            return Optional.of("database " + config.datasource().url() + ": " + PostgresPools.why(e));
        }
    }

    /** The pool, for tests that take the database away. */
    public HikariDataSource pool() {
        return pool;
    }

    @Override
    public void close() {
        watchdog.close();
        pool.close();
    }
}
