package io.stockade.proxy.postgres;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;

import io.stockade.policy.Datasource;
import io.stockade.policy.Datasource.Statements;
import io.stockade.testing.Pg;
import io.stockade.testing.PgBouncer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;
import org.postgresql.PGConnection;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The datasource's {@code statements}, read from the server: a pool's connection that reaches PostgreSQL directly
 * keeps named server-side statements under {@code auto} (they show in {@code pg_prepared_statements} of its own
 * session once pgjdbc's threshold is passed), one through PgBouncer in transaction pooling never does, and
 * {@code unnamed} never does either.
 */
@RequiresTools(Tools.Tool.PGBOUNCER)
class PostgresStatementsIT {
    private static final int RUNS = 8;

    @Test
    void autoNamesStatementsOnADirectConnectionOnly() throws Exception {
        try (Pg pg = Pg.create("CREATE TABLE t (id int PRIMARY KEY, v int); INSERT INTO t VALUES (1, 0)");
             PgBouncer bouncer = PgBouncer.transaction(pg)) {
            assertEquals(new Seen(5, true), seen(pg.url(), Statements.AUTO), "direct, auto");
            assertEquals(new Seen(2, true), seen(pg.url() + "&prepareThreshold=2", Statements.AUTO),
                    "direct, auto: the URL's threshold");
            assertEquals(new Seen(0, false), seen(pg.url(), Statements.UNNAMED), "direct, unnamed");
            assertEquals(new Seen(0, false), seen(bouncer.url() + "&prepareThreshold=1", Statements.AUTO),
                    "through PgBouncer, auto");
        }
    }

    /** What a pool's connection was given and whether its session then holds a named statement. */
    record Seen(int threshold, boolean named) {
    }

    private static Seen seen(String url, Statements statements) throws Exception {
        Datasource ds = new Datasource(url, "postgres", null, null, 1, Datasource.DEFAULT_STATEMENT_TIMEOUT,
                Datasource.DEFAULT_CONNECT_TIMEOUT, statements);
        try (HikariDataSource pool = PostgresPools.open(ds, "statements-test");
             Connection c = pool.getConnection()) {
            int threshold = c.unwrap(PGConnection.class).getPrepareThreshold();
            c.setAutoCommit(false); // one transaction: through PgBouncer, one server connection answers it all
            for (int i = 0; i < RUNS; i++) {
                try (PreparedStatement s = c.prepareStatement("UPDATE t SET v = ? WHERE id = 1")) {
                    s.setInt(1, i);
                    s.executeUpdate();
                }
            }
            boolean named = namedStatements(c);
            c.commit();
            return new Seen(threshold, named);
        }
    }

    private static boolean namedStatements(Connection c) throws SQLException {
        try (PreparedStatement s = c.prepareStatement(
                "SELECT count(*) FROM pg_prepared_statements WHERE statement LIKE 'UPDATE t SET v%'");
             ResultSet r = s.executeQuery()) {
            r.next();
            return r.getLong(1) > 0;
        }
    }
}
