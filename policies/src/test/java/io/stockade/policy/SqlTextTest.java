package io.stockade.policy;

import java.util.List;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The postgres backend's statements as the policy reader turns them into JDBC text: what is a placeholder, and what
 * only looks like one inside a literal, an identifier, a comment or a cast. A misread placeholder binds a value
 * where the author did not put one, so every quoting form PostgreSQL's lexer knows is checked here.
 */
class SqlTextTest {

    private static void reads(String sql, String jdbc, String... names) {
        SqlText text = SqlText.parse(sql);
        assertEquals(jdbc, text.jdbc(), sql);
        assertEquals(List.of(names), text.placeholders(), sql);
    }

    @Test
    void placeholdersBecomeQuestionMarksInOrderAndMayRepeat() {
        reads("UPDATE t SET v = :body, n = :n WHERE k = :key AND n < :n",
                "UPDATE t SET v = ?, n = ? WHERE k = ? AND n < ?", "body", "n", "key", "n");
        reads("SELECT :_x1", "SELECT ?", "_x1");
    }

    @Test
    void castsAreNotPlaceholders() {
        reads("SELECT :v::jsonb, x::text", "SELECT ?::jsonb, x::text", "v");
        reads("SELECT a[1:2], :n", "SELECT a[1:2], ?", "n");
    }

    @Test
    void stringLiteralsAreLeftAlone() {
        reads("SELECT 'a :b', :c", "SELECT 'a :b', ?", "c");
        reads("SELECT 'it''s :x', :y", "SELECT 'it''s :x', ?", "y");
        // E'' strings take backslash escapes: \' does not end them
        reads("SELECT E'\\' :x', :y", "SELECT E'\\' :x', ?", "y");
        reads("SELECT e'\\\\', :y", "SELECT e'\\\\', ?", "y");
        // a standard string ends at its first lone quote: the backslash is a character
        reads("SELECT '\\', :y", "SELECT '\\', ?", "y");
        // 'e' ending an identifier does not make the next literal an E'' string
        reads("SELECT name'\\', :y", "SELECT name'\\', ?", "y");
    }

    @Test
    void quotedIdentifiersAreLeftAlone() {
        reads("SELECT \"col:x\", \"a\"\"b:c\", :d", "SELECT \"col:x\", \"a\"\"b:c\", ?", "d");
        reads("SELECT \"a$$b\", :d", "SELECT \"a$$b\", ?", "d");
    }

    @Test
    void dollarQuotedStringsAreLeftAlone() {
        reads("SELECT $$ :x ' $$, :y", "SELECT $$ :x ' $$, ?", "y");
        reads("SELECT $fn$ :x $$ $fn$, :y", "SELECT $fn$ :x $$ $fn$, ?", "y");
        reads("SELECT $é$ :x $é$, :y", "SELECT $é$ :x $é$, ?", "y");
        // not tags: a $ inside an identifier, a positional parameter
        reads("SELECT a$b, :y", "SELECT a$b, ?", "y");
        reads("SELECT $1, :y", "SELECT $1, ?", "y");
    }

    @Test
    void commentsAreLeftAlone() {
        reads("SELECT 1 -- :x\n, :y", "SELECT 1 -- :x\n, ?", "y");
        reads("SELECT /* :x /* nested :z */ still :w */ :y", "SELECT /* :x /* nested :z */ still :w */ ?", "y");
        // PostgreSQL ends a -- comment at a carriage return as at a line feed
        reads("SELECT 1 -- :x\r, :y", "SELECT 1 -- :x\r, ?", "y");
        reads("SELECT 1 -- :x\r\n, :y", "SELECT 1 -- :x\r\n, ?", "y");
    }

    @Test
    void oneTrailingSemicolonIsDropped() {
        reads("UPDATE t SET v = :v;  \n", "UPDATE t SET v = ?", "v");
    }

    @ParameterizedTest
    @ValueSource(strings = {"SELECT 1; SELECT 2", "SELECT 'a", "SELECT \"a", "SELECT /* a", "SELECT $$ a",
        "SELECT $t$ a $$", "SELECT ? ", "SELECT data ? 'k'", "  ", ";", "-- only a comment"})
    void whatIsNotOneStatementIsRefused(String sql) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SqlText.parse(sql));
        assertTrue(e.getMessage() != null && !e.getMessage().isBlank(), sql);
    }

    @Test
    void theFirstKeywordSkipsBlanksAndComments() {
        assertEquals(Optional.of("BEGIN"), SqlText.parse("/* c */ -- d\n  begin").firstKeyword());
        assertEquals(Optional.of("COMMIT"), SqlText.parse("-- d\rcommit").firstKeyword());
        assertEquals(Optional.of("UPDATE"), SqlText.parse("update t set v = :v").firstKeyword());
        // a nested comment ends where PostgreSQL ends it, not at the first */ (found in review: COMMIT hid behind it)
        assertEquals(Optional.of("COMMIT"), SqlText.parse("/* x /* y */ z */ COMMIT").firstKeyword());
        assertEquals(Optional.empty(), SqlText.parse("(SELECT 1)").firstKeyword());
    }

    @Test
    void positionalParametersForPrepare() {
        SqlText text = SqlText.parse("UPDATE t SET a = :a, b = ':b?', c = :a::jsonb /* :c */ WHERE id = :id");
        assertEquals("UPDATE t SET a = $1, b = ':b?', c = $2::jsonb /* :c */ WHERE id = $3", text.positional());
        assertEquals(List.of("a", "a", "id"), text.placeholders());
    }
}
