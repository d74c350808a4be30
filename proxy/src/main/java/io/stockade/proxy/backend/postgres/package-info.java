/**
 * The {@code postgres} backend: HTTP routes mapped to named SQL statements declared in the policy (never SQL from
 * the request), fenced in the same transaction as the write (the atomic class: safe with any number of proxy
 * replicas, pauses and delays).
 *
 * <h2>Design</h2>
 * <ul>
 *   <li><b>One round trip.</b> In {@code fence: table} mode a fenced write sends
 *   {@code SELECT stockade_fence(scope, token, accept_equal); stmt1; stmt2 ...} as one pgjdbc multi-statement
 *   prepared statement on an autocommit connection: pgjdbc sends every statement with a single Sync, so the server
 *   runs them as one implicit transaction that commits at the Sync, or rolls back entirely when any of them fails.
 *   The fence is bumped first (a conditional upsert; see {@code stockade-fences.sql}); a stale token raises
 *   SQLSTATE {@code SF409} carrying the highest token, which rolls back everything. {@code AtomicityIT} proves the
 *   rollback of the fence with a failing second statement.</li>
 *   <li><b>Column mode.</b> The user's statements compare their own token column with {@code :fencing_token}; a
 *   fenced statement that changed no row triggers the policy's {@code check} SELECT (in the same transaction): a
 *   higher token there is a 409, otherwise the answer reports zero rows. One statement: one autocommit round trip;
 *   several: an explicit transaction rolled back on a stale token.</li>
 *   <li><b>Binding.</b> {@code Binder} reads each declared parameter from the path, the query, a JSON body field or
 *   the whole body and checks its type; {@code :fencing_token} and {@code :scope} are provided. Strings and JSON are
 *   bound with an unspecified type, so PostgreSQL infers the column's type.</li>
 *   <li><b>Errors.</b> stale → 409 (engine); unique violation → 409 naming the constraint; other integrity
 *   violations → 422; serialization failure or deadlock → retried {@code retries} times, then 409; a data exception
 *   → 400; statement timeout → 504 (rolled back); no connection or the server shutting down → 503 (engine,
 *   {@code Retry-After}); a connection lost mid-transaction → 504 unknown outcome; anything else → 502. Every
 *   failure rolls back the fence bump with the write.</li>
 *   <li><b>Plain JDBC over HikariCP</b> rather than Helidon DbClient: the one-round-trip multi-statement is not
 *   expressible in DbClient, and its rollback trap (STACK.md) is avoided.</li>
 *   <li><b>Observe and off.</b> {@code observe} (table mode only) runs the statements without refusing, after
 *   {@code stockade_fence_observe} raised the high-water mark as enforce would and answered the highest before, so
 *   the engine counts and logs a would-reject. {@code off}, unfenced methods and {@code missing: allow} run the
 *   statements alone with {@code :fencing_token} NULL. Column mode refuses observe and off at load: its fence is in
 *   the statements themselves.</li>
 * </ul>
 */
package io.stockade.proxy.backend.postgres;
