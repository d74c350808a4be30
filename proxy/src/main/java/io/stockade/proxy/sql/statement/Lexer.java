package io.stockade.proxy.sql.statement;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * Splits SQL text into statements and tokens the way PostgreSQL's lexer does for the parts that decide where a
 * statement ends and what is code: comments ({@code --}, nested {@code /* *}{@code /}), string literals
 * ({@code '...'} with {@code ''}, {@code E'...'} with backslash escapes, {@code U&'...'}), quoted identifiers,
 * dollar quotes ({@code $tag$...$tag$}), parameters ({@code $1}). Nothing is parsed: the listener only needs to know
 * which words and literals a statement holds, and where it starts and ends.
 */
final class Lexer {
    enum Kind { WORD, QUOTED, STRING, NUMBER, PARAM, PUNCT }

    /**
     * A token.
     *
     * @param value a word lower-cased; a quoted identifier or a string's content as written (escapes of
     *              {@code E''} strings are not decoded); the text of anything else
     */
    record Token(Kind kind, String value, int start, int end) {
        boolean is(String word) {
            return kind == Kind.WORD && value.equals(word);
        }

        boolean punct(String p) {
            return kind == Kind.PUNCT && value.equals(p);
        }
    }

    /** A statement: its tokens and where it is in the text (the terminating ';' excluded). */
    record Statement(List<Token> tokens, int start, int end) {
    }

    private final String sql;
    private int at;

    private Lexer(String sql) {
        this.sql = sql;
    }

    /** The statements of {@code sql}, empty ones (only white space, comments or ';') left out. */
    static List<Statement> statements(String sql) {
        return new Lexer(sql).run();
    }

    private List<Statement> run() {
        List<Statement> out = new ArrayList<>();
        List<Token> tokens = new ArrayList<>();
        int start = -1;
        while (true) {
            skipSpaceAndComments();
            if (at >= sql.length() || sql.charAt(at) == ';') {
                if (!tokens.isEmpty()) {
                    out.add(new Statement(List.copyOf(tokens), start, tokens.getLast().end()));
                    tokens.clear();
                }
                if (at >= sql.length()) {
                    return out;
                }
                at++;
                continue;
            }
            Token t = token();
            if (tokens.isEmpty()) {
                start = t.start();
            }
            tokens.add(t);
        }
    }

    private void skipSpaceAndComments() {
        while (at < sql.length()) {
            char c = sql.charAt(at);
            if (Character.isWhitespace(c)) {
                at++;
            } else if (sql.startsWith("--", at)) {
                int nl = sql.indexOf('\n', at);
                at = nl < 0 ? sql.length() : nl + 1;
            } else if (sql.startsWith("/*", at)) {
                int depth = 0;
                while (at < sql.length()) {
                    if (sql.startsWith("/*", at)) {
                        depth++;
                        at += 2;
                    } else if (sql.startsWith("*/", at)) {
                        depth--;
                        at += 2;
                        if (depth == 0) {
                            break;
                        }
                    } else {
                        at++;
                    }
                }
            } else {
                return;
            }
        }
    }

    private Token token() {
        int start = at;
        char c = sql.charAt(at);
        if ((c == 'e' || c == 'E') && at + 1 < sql.length() && sql.charAt(at + 1) == '\'') {
            at++;
            return string(start, true);
        }
        if ((c == 'u' || c == 'U') && sql.startsWith("&'", at + 1)) {
            at += 2;
            return string(start, false);
        }
        if ((c == 'u' || c == 'U') && sql.startsWith("&\"", at + 1)) {
            at += 2;
            return quoted(start);
        }
        if (c == '\'') {
            return string(start, false);
        }
        if (c == '"') {
            return quoted(start);
        }
        if (c == '$') {
            return dollar(start);
        }
        if (Character.isLetter(c) || c == '_' || c > 127) {
            while (at < sql.length() && isWordPart(sql.charAt(at))) {
                at++;
            }
            return new Token(Kind.WORD, sql.substring(start, at).toLowerCase(Locale.ROOT), start, at);
        }
        if (Character.isDigit(c)) {
            while (at < sql.length() && (Character.isLetterOrDigit(sql.charAt(at)) || sql.charAt(at) == '.'
                    || sql.charAt(at) == '_')) {
                at++;
            }
            return new Token(Kind.NUMBER, sql.substring(start, at), start, at);
        }
        if (sql.startsWith("::", at)) {
            at += 2;
            return new Token(Kind.PUNCT, "::", start, at);
        }
        at++;
        return new Token(Kind.PUNCT, String.valueOf(c), start, at);
    }

    private static boolean isWordPart(char c) {
        return Character.isLetterOrDigit(c) || c == '_' || c == '$' || c > 127;
    }

    /** A string from its opening quote (at {@code at}); {@code escapes}: backslash escapes the next character. */
    private Token string(int start, boolean escapes) {
        at++; // the opening quote
        StringBuilder value = new StringBuilder();
        while (at < sql.length()) {
            char c = sql.charAt(at);
            if (escapes && c == '\\' && at + 1 < sql.length()) {
                value.append(c).append(sql.charAt(at + 1));
                at += 2;
            } else if (c == '\'') {
                if (sql.startsWith("''", at)) {
                    value.append('\'');
                    at += 2;
                } else {
                    at++;
                    break;
                }
            } else {
                value.append(c);
                at++;
            }
        }
        return new Token(Kind.STRING, value.toString(), start, at);
    }

    private Token quoted(int start) {
        at++;
        StringBuilder value = new StringBuilder();
        while (at < sql.length()) {
            char c = sql.charAt(at);
            if (c == '"') {
                if (sql.startsWith("\"\"", at)) {
                    value.append('"');
                    at += 2;
                } else {
                    at++;
                    break;
                }
            } else {
                value.append(c);
                at++;
            }
        }
        return new Token(Kind.QUOTED, value.toString(), start, at);
    }

    /** {@code $1} (a parameter), {@code $tag$...$tag$} or {@code $$...$$} (a string), else a '$'. */
    private Token dollar(int start) {
        int i = at + 1;
        if (i < sql.length() && Character.isDigit(sql.charAt(i))) {
            while (i < sql.length() && Character.isDigit(sql.charAt(i))) {
                i++;
            }
            at = i;
            return new Token(Kind.PARAM, sql.substring(start, at), start, at);
        }
        while (i < sql.length() && (Character.isLetterOrDigit(sql.charAt(i)) || sql.charAt(i) == '_'
                || sql.charAt(i) > 127)) {
            i++;
        }
        if (i < sql.length() && sql.charAt(i) == '$') {
            String tag = sql.substring(at, i + 1);
            int end = sql.indexOf(tag, i + 1);
            String value = end < 0 ? sql.substring(i + 1) : sql.substring(i + 1, end);
            at = end < 0 ? sql.length() : end + tag.length();
            return new Token(Kind.STRING, value, start, at);
        }
        at++;
        return new Token(Kind.PUNCT, "$", start, at);
    }
}
