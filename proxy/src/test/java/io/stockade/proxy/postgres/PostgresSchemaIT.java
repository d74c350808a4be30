package io.stockade.proxy.postgres;

import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;

import io.stockade.policy.Datasource;
import io.stockade.testing.Pg;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link PostgresPools#prepare} applies the fence schema once and marks it; a start that finds this build's mark and
 * every object leaves the database alone (no DDL, no lock), and one that finds an object missing or another mark
 * applies the schema again. Read from the catalog itself: the functions' transaction IDs ({@code xmin}) change only
 * when {@code CREATE OR REPLACE FUNCTION} runs.
 */
class PostgresSchemaIT {
    @Test
    void theSchemaIsAppliedOnceAndAgainOnlyWhenItsMarkOrAnObjectIsMissing() throws Exception {
        try (Pg pg = Pg.create("");
             HikariDataSource pool = PostgresPools.open(new Datasource(pg.url(), "postgres", null, null, 2,
                     Datasource.DEFAULT_STATEMENT_TIMEOUT, Datasource.DEFAULT_CONNECT_TIMEOUT), "schema-test")) {
            PostgresPools.prepare(pool, true, pg.url());
            String first = functionsXmin(pg);
            assertTrue(pg.single("SELECT obj_description('stockade_fences'::regclass, 'pg_class')")
                    .orElseThrow().startsWith("stockade-fences.sql sha256:"));

            PostgresPools.prepare(pool, true, pg.url());
            assertEquals(first, functionsXmin(pg), "a second start with the schema in place ran the DDL again");

            pg.execute("COMMENT ON TABLE stockade_fences IS 'stockade-fences.sql sha256:an older file'");
            PostgresPools.prepare(pool, true, pg.url());
            String second = functionsXmin(pg);
            assertTrue(!second.equals(first), "another build's mark did not make the start apply the schema");

            pg.execute("DROP FUNCTION stockade_floor_of(text) CASCADE");
            PostgresPools.prepare(pool, true, pg.url());
            assertTrue(!functionsXmin(pg).equals(second), "a missing function was not created again");
            PostgresPools.prepare(pool, false, pg.url()); // migrate: false finds every object
        }
    }

    /** The transaction IDs that last wrote Stockade's functions in the schema. */
    private static String functionsXmin(Pg pg) throws Exception {
        try (Connection c = pg.connect(); Statement s = c.createStatement();
             ResultSet r = s.executeQuery("SELECT string_agg(p.proname || ':' || p.xmin, ',' ORDER BY p.proname)"
                     + " FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace"
                     + " WHERE n.nspname = current_schema() AND p.proname LIKE 'stockade%'")) {
            r.next();
            return r.getString(1);
        }
    }
}
