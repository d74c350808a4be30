package io.stockade.proxy.sql.statement;

import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The narrow recogniser: the token's statement shapes, the refusals, and the lexing that keeps them honest. */
class StatementsTest {
    private final Statements statements = new Statements(Set.of("jobs", "public.jobs"));

    private Statements.Setter only(String sql, boolean parameters) {
        Statements.Classified c = statements.classify(sql, parameters);
        assertNull(c.refusal(), sql);
        assertEquals(1, c.setters().size(), sql);
        return c.setters().getFirst();
    }

    @Test
    void theTokenStatementsAreRecognisedInEveryAllowedSpelling() {
        Statements.Setter set = only("set LOCAL Stockade.Fencing_Token TO '42'", false);
        assertEquals(Statements.Action.SET, set.action());
        assertTrue(set.local());
        assertEquals("42", set.token());
        assertFalse(only("SET SESSION stockade.fencing_token = 7", false).local());
        assertFalse(only("SET /* c */ stockade . fencing_token=7 -- done", false).local());
        Statements.Setter fn = only("SELECT pg_catalog.set_config('stockade.fencing_token', $1::text, true)", true);
        assertTrue(fn.function() && fn.local());
        assertEquals(0, fn.parameter());
        assertEquals("9", only("select set_config('stockade.fencing_token', '9', false)", false).token());
        assertEquals(Statements.Action.RESET, only("RESET stockade.fencing_token", false).action());
        assertEquals(Statements.Action.SHOW, only("SHOW stockade.fencing_token", false).action());
    }

    @Test
    void aMultiStatementQueryKeepsWhereEachTokenStatementIs() {
        String sql = "BEGIN; SET LOCAL stockade.fencing_token = 8; UPDATE jobs SET s = 'a;b' WHERE id = 1; COMMIT";
        Statements.Classified c = statements.classify(sql, false);
        assertNull(c.refusal());
        Statements.Setter s = c.setters().getFirst();
        assertEquals("SET LOCAL stockade.fencing_token = 8", sql.substring(s.start(), s.end()));
    }

    @Test
    void everythingElseNamingStockadeOrSkippingTheTriggersIsRefused() {
        for (String sql : List.of("SELECT current_setting('stockade.fencing_token')",
                "SET stockade.fencing_token = 7, 8", "SET stockade.fencing_proof = 1",
                "SELECT * FROM stockade.stockade_fences", "SELECT * FROM \"stockade\".stockade_fences",
                "SET session_replication_role = replica", "select set_config('SESSION_REPLICATION_ROLE', 'replica', 0)",
                "ALTER TABLE x DISABLE TRIGGER ALL", "alter table x enable replica trigger t",
                "DROP TRIGGER stockade_fence_row ON jobs", "DROP TABLE public.jobs", "ALTER TABLE jobs RENAME TO j",
                "CREATE RULE r AS ON INSERT TO jobs DO INSTEAD NOTHING",
                "SELECT 1; SELECT set_config('stockade.x', '1', false)")) {
            Statements.Classified c = statements.classify(sql, true);
            assertTrue(c.refused(), sql);
            assertEquals(Statements.REFUSED, c.code(), sql);
        }
    }

    @Test
    void wordsInsideStringsCommentsAndDollarQuotesAreData() {
        for (String sql : List.of("INSERT INTO notes VALUES ('disable trigger; drop table jobs')",
                "SELECT 1 -- session_replication_role\n", "SELECT $q$ disable trigger; drop table jobs $q$",
                "SELECT E'it''s \\' stockade' /* drop table jobs */", "DROP TABLE jobs_archive",
                "INSERT INTO jobs VALUES (1, 'x')", "CREATE TABLE jobs2 (id int)")) {
            assertFalse(statements.classify(sql, true).refused(), sql);
        }
    }

    @Test
    void aMalformedTokenOrAParameterInASimpleQueryIsRefused() {
        assertEquals(Statements.MALFORMED, statements.classify("SET stockade.fencing_token = '007'", false).code());
        assertEquals(Statements.MALFORMED, statements.classify("SET stockade.fencing_token = '-1'", false).code());
        assertEquals(Statements.MALFORMED,
                statements.classify("SET stockade.fencing_token = 9223372036854775808", false).code());
        assertEquals(Statements.REFUSED,
                statements.classify("SELECT set_config('stockade.fencing_token', $1, true)", false).code());
        assertTrue(Statements.validToken("9223372036854775807"));
        assertTrue(Statements.validToken("0"));
    }

    /**
     * A parameter PostgreSQL cannot bind ($0, past $65535) is no token statement: refused for naming the setting,
     * in a simple query and a Parse alike (it reached the relay as a token statement without a token, and ended
     * the client's session with a NullPointerException; $2147483648 threw in classify).
     */
    @Test
    void aParameterPostgresCannotBindIsRefused() {
        for (String param : List.of("$0", "$00", "$65536", "$2147483648", "$99999999999")) {
            String sql = "SELECT set_config('stockade.fencing_token', " + param + ", true)";
            for (boolean parameters : List.of(false, true)) {
                Statements.Classified c = statements.classify(sql, parameters);
                assertEquals(Statements.REFUSED, c.code(), sql);
                assertTrue(c.setters().isEmpty(), sql);
            }
        }
        Statements.Classified last = statements.classify(
                "SELECT set_config('stockade.fencing_token', $65535, true)", true);
        assertEquals(65534, last.setters().getFirst().parameter());
    }
}
