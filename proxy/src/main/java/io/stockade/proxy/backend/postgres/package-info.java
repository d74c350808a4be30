/**
 * The {@code postgres} backend: HTTP routes mapped to named SQL statements declared in the policy (never SQL from
 * the request), fenced in the same transaction as the write (the atomic class: safe with any number of proxy
 * replicas, pauses and delays).
 *
 * <h2>Design</h2>
 * <ul>
 *   <li><b>One explicit transaction per write.</b> Every run (fenced, observed or unfenced, either fence mode,
 *   any number of statements) takes a pooled connection, turns autocommit off, and sends
 *   {@code SELECT stockade_fence(scope, token, accept_equal, max_advance); stmt1; stmt2 ...} (table mode; the
 *   statements alone otherwise) as one pgjdbc multi-statement prepared statement; pgjdbc pipelines its BEGIN with
 *   them, so this is one round trip (unless pgjdbc puts Syncs between the statements, see below: inside the
 *   transaction that costs round trips, not atomicity). COMMIT (one more round trip) is sent only when every
 *   statement succeeded and the token was not refused; any failure rolls back, and the connection goes back to
 *   the pool rolled back and in autocommit (one that cannot be made so is evicted). The fence is decided first,
 *   under the scope row's lock held to the end of the transaction (a higher token rewrites the row, an accepted
 *   equal one leaves it as it is; see {@code stockade-fences.sql}); a stale token raises SQLSTATE {@code SF409}
 *   carrying the highest token, which rolls back everything. {@code commit: pipelined} (table mode) appends COMMIT
 *   to the multi-statement instead: the server commits only if nothing before it failed, so the rule is the same
 *   and the write takes one round trip; the price is that a connection lost during it leaves the outcome unknown
 *   (504).
 *   Which statement failed is told apart by the transaction's state afterwards (still open and aborted: the
 *   COMMIT was skipped, the answer is definite).
 *   <p><b>One statement</b> ({@code one-statement: true}, opt-in, table mode): a fenced method of one
 *   statement is sent as that statement behind a data-modifying {@code WITH} that calls {@code stockade_fence}, in
 *   autocommit: one implicit transaction, one round trip, no BEGIN or COMMIT ({@code OneStatement} says how and
 *   what differs: the fence is decided as the statement ends, so it suits statements that write only the rows they
 *   name by key). A server error is a rollback; no answer once it was sent is an unknown outcome (504).
 *   <p>Never an autocommit multi-statement, and statements named on the server only on a connection that
 *   reaches PostgreSQL directly (the datasource's {@code statements}, {@code PostgresPools}); why, with the
 *   driver behaviour behind each: docs/pgbouncer.md, "The postgres backend's transaction".
 *   {@code PostgresAtomicWritesIT} runs every failing shape on one connection under several driver settings
 *   (named and unnamed) and through PgBouncer.</li>
 *   <li><b>Column mode.</b> The user's statements compare their own token column with {@code :fencing_token}; a
 *   fenced statement that changed no row triggers the policy's {@code check} SELECT (in the same transaction): a
 *   higher token there is a 409 and everything is rolled back, otherwise the answer reports zero rows. With
 *   {@code fence.max-advance}, {@code check} is also read first, in the same transaction.</li>
 *   <li><b>Binding.</b> {@code Binder} reads each declared parameter from the path, the query, a JSON body field or
 *   the whole body and checks its type; {@code :fencing_token} and {@code :scope} are provided. Strings and JSON are
 *   bound with an unspecified type, so PostgreSQL infers the column's type; numbers as {@code numeric} text (not
 *   pgjdbc's binary {@code setBigDecimal}, which folded what numeric cannot hold). Every value is stored exactly as
 *   sent or refused (400 naming it) before anything runs: {@code Exact} knows what PostgreSQL holds (numeric's
 *   digits, a parameter's precision and scale, bigint, text without U+0000 or lone surrogates, valid UTF-8) and
 *   counts a number's digits without writing it out.</li>
 *   <li><b>Errors.</b> stale → 409 (engine); unique violation → 409 naming the constraint; other integrity
 *   violations → 422; serialization failure or deadlock → retried {@code retries} times, then 409; a data exception
 *   → 400; statement timeout → 504 (rolled back); no connection, the server shutting down, or a connection lost
 *   before COMMIT was sent → 503 (engine, {@code Retry-After}; nothing committed); a COMMIT without a clear answer
 *   (connection lost, server stopping) → 504 unknown outcome; anything else → 502. Every failure rolls back the
 *   fence bump with the write, including a COMMIT the server refused (a deferred constraint). A database that
 *   stops answering: {@code TransactionWatchdog} aborts the connection once the transaction has run the
 *   statement-timeout for each statement plus 5 s (503 before COMMIT, 504 during it); the pool has no driver
 *   socket timeout, whose timed reads each cost a timer wake-up.</li>
 *   <li><b>Plain JDBC over HikariCP</b> rather than Helidon DbClient: the multi-statement in one round trip is not
 *   expressible in DbClient, and its rollback trap (a rollback after a failed statement throws) is avoided.
 *   Measured side by side ({@code bench/dbclient.sh}, {@code docs/benchmarks.md}): DbClient's three round trips
 *   per fenced write reach 0.82-0.87x of this backend's throughput, 0.65-0.78x of {@code commit: pipelined}.</li>
 *   <li><b>Observe and off.</b> {@code observe} (table mode only) runs the statements without refusing, after
 *   {@code stockade_fence_observe} raised the high-water mark as enforce would and answered the highest before, so
 *   the engine counts and logs a would-reject. {@code off}, unfenced methods and {@code missing: allow} run the
 *   statements alone with {@code :fencing_token} NULL. Column mode refuses observe and off at load: its fence is in
 *   the statements themselves.</li>
 * </ul>
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.backend.postgres;

import org.jspecify.annotations.NullMarked;
