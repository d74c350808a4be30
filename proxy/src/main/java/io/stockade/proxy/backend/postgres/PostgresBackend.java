package io.stockade.proxy.backend.postgres;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.sql.SQLException;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.FenceMode;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.backend.postgres.TransactionRunner.Call;
import io.stockade.proxy.backend.postgres.TransactionRunner.Kind;
import io.stockade.proxy.backend.postgres.TransactionRunner.Ran;
import io.stockade.proxy.backend.postgres.TransactionRunner.Result;
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
import org.jspecify.annotations.Nullable;

/**
 * The {@code postgres} backend: each method of a policy runs the policy's named statements, in one transaction
 * with the fence (see the package documentation for the design).
 */
public final class PostgresBackend implements Backend, Keeper.StorageWrite {
    private final BackendConfig.Postgres config;
    private final HikariDataSource pool;
    private final Map<String, Statements> plans = new HashMap<>();
    private final TransactionRunner runner;

    /** The parameters that read a path variable the scope reads ({@link Binder#scopeParams}). */
    private final Set<String> scopeParams;

    private PostgresBackend(BackendConfig.Postgres config, HikariDataSource pool, List<String> scopeVariables) {
        this.scopeParams = Binder.scopeParams(config.params(), scopeVariables);
        this.config = config;
        this.pool = pool;
        Statements check = config.check().map(s -> Statements.of(config, List.of(s), null)).orElse(null);
        config.statements().forEach((method, statements) -> plans.put(method, Statements.of(config, statements,
                check)));
        this.runner = new TransactionRunner(config, pool, check);
    }

    /**
     * Opens the pool and creates (or checks) the fence table.
     *
     * @param scopeVariables the path variables the policy's scope reads (bound as text: {@link Binder})
     */
    public static PostgresBackend open(BackendConfig.Postgres config, List<String> scopeVariables)
            throws IOException {
        // no driver socket timeout: the TransactionWatchdog bounds each transaction instead
        HikariDataSource pool = PostgresPools.open(config.datasource(), "stockade-backend", false);
        try {
            if (config.fence() == FenceMode.TABLE) {
                PostgresPools.prepare(pool, config.migrate(), config.datasource().url());
            }
            return new PostgresBackend(config, pool, scopeVariables);
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
    public Plan plan(Exchange exchange) {
        String method = exchange.request().prologue().method().text();
        String scope = exchange.scope();
        if (!plans.containsKey(method)) {
            return new Plan.Refuse(scope, Problem.of(ProblemType.METHOD_NOT_ALLOWED,
                    "policy '" + exchange.route().policy().name() + "' declares no statements for " + method)
                    .header("Allow", String.join(", ", plans.keySet())));
        }
        if (exchange.fencing().fencesMethod(method)) {
            return exchange.fencing().plan(method, List.of(scope), Backend.headerToken(exchange),
                    new Keeper.InStorage(this), this::forward);
        }
        return new Plan.Forward(scope, Plan.Unfenced.NOT_FENCED,
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

    /** What a run came to, and for observe the highest token before (null for a new scope). */
    private record Outcome(WriteResult result, @Nullable Long before) {
        Outcome(WriteResult result) {
            this(result, null);
        }
    }

    /**
     * One write, in order: the plan of its method, its parameters bound, the transaction run (and retried) by the
     * {@link TransactionRunner}, the answer.
     */
    private Outcome run(Exchange exchange, long token, Fencing.Rule rule, Kind kind) {
        String method = exchange.request().prologue().method().text().toUpperCase(Locale.ROOT);
        Statements plan = Objects.requireNonNull(plans.get(method), "plan() refused a method without statements");
        Bound bound = bind(exchange, plan, kind, token);
        if (bound.refused() != null) {
            return bound.refused();
        }
        boolean fencedColumn = kind == Kind.FENCED && config.fence() == FenceMode.COLUMN;
        String one = kind == Kind.FENCED ? plan.single() : null;
        boolean single = one != null;
        String sql = switch (kind) {
            case FENCED -> one != null ? one : config.fence() == FenceMode.TABLE ? plan.fenced() : plan.plain();
            case OBSERVED -> plan.observed();
            case PLAIN -> plan.plain();
        };
        Binder binder = Objects.requireNonNull(bound.binder(), "a Bound that refused nothing has its binder");
        Call call = new Call(exchange, plan, binder, sql, kind, fencedColumn, single, token, rule);
        return switch (runner.run(call)) {
            case Ran.Committed done -> new Outcome(answer(exchange.response(), method, done.results(),
                    config.emptyGet()), done.before());
            case Ran.Ended ended -> new Outcome(ended.result());
        };
    }

    /** The parameters of a write, bound; or the answer that refused them (nothing ran): one of the two is null. */
    private record Bound(@Nullable Binder binder, @Nullable Outcome refused) {
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
            return new Bound(new Binder(config.params(), scopeParams, plan.used(), exchange, body,
                    kind == Kind.PLAIN ? null : token), null);
        } catch (Binder.BadParameter e) {
            return new Bound(null, new Outcome(new WriteResult.Refused(Problem.of(ProblemType.BAD_PARAMETER,
                    e.getMessage()).with("parameter", e.parameter()))));
        }
    }

    /** The answer to a committed write: the rows read (GET, HEAD), or the rows changed and returned. */
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
     * The body's bytes (the binder decodes them, refusing what is not UTF-8), or null when it is larger than the
     * backend's {@code body-limit}. Read within the policy's bounds ({@link Exchange#body()}), before any statement
     * runs.
     */
    private byte @Nullable [] readBody(Exchange exchange) {
        if (!exchange.request().content().hasEntity()) {
            return new byte[0];
        }
        // One byte over the limit tells "at the limit" from "over it". A declared length sizes the read: readNBytes
        // allocates its first buffer for what it is asked (16 KiB at most), which a small JSON body would zero and
        // throw away on every write.
        long most = Math.min(Integer.MAX_VALUE - 8, config.bodyLimit() + 1);
        OptionalLong declared = exchange.request().headers().contentLength();
        if (declared.isPresent() && declared.getAsLong() >= 0 && declared.getAsLong() < most) {
            most = declared.getAsLong() + 1;
        }
        try (InputStream in = exchange.body()) {
            byte[] bytes = in.readNBytes((int) most);
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
        return StatementCheck.problems(pool, config, scopeParams);
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
        runner.close();
        pool.close();
    }
}
