/**
 * What the postgres backend and the postgres fence store share: HikariCP pools over pgjdbc
 * ({@code PostgresPools.open}) and the fence table {@code stockade_fences(scope, token, version, updated_at)} with
 * its functions, created at start when {@code migrate: true} or checked otherwise (resource
 * {@code stockade-fences.sql}).
 * <p>
 * Plain JDBC over HikariCP, not Helidon DbClient: a fenced write sends its statements as one multi-statement in
 * an explicit transaction (see {@code backend.postgres}), which DbClient cannot express, and DbClient's rollback
 * after a failed statement throws. Pools are autocommit; the backend turns it off for each write and
 * back on before the connection returns. Whether a connection keeps named server-side statements is the
 * datasource's {@code statements}: with {@code auto}, {@code StatementsDataSource} asks each new connection's server
 * where it arrived and names statements only where nothing stands between.
 * Null-marked: a type here is non-null unless it says {@code @Nullable} (NullAway checks it in the build).
 */
@NullMarked
package io.stockade.proxy.postgres;

import org.jspecify.annotations.NullMarked;
