/**
 * What the postgres backend and the postgres fence store share: HikariCP pools over pgjdbc
 * ({@code PostgresPools.open}) and the fence table {@code stockade_fences(scope, token, version, updated_at)} with
 * its functions, created at start when {@code migrate: true} or checked otherwise (resource
 * {@code stockade-fences.sql}).
 * <p>
 * Plain JDBC over HikariCP, not Helidon DbClient: a fenced write is one multi-statement round trip in an implicit
 * transaction (see {@code backend.postgres}), which DbClient cannot express, and DbClient's rollback after a failed
 * statement throws (STACK.md).
 */
package io.stockade.proxy.postgres;
