package io.stockade.policy;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * SQL text with {@code :name} placeholders, turned into JDBC text with {@code ?} and the names in order.
 * String literals ({@code '...'}, {@code E'...'}, {@code $tag$...$tag$}), quoted identifiers, comments and
 * {@code ::type} casts are left alone. One statement per text: a {@code ;} outside quotes is refused (a route
 * lists its statements separately), except at the very end.
 *
 * @param sql          the text as written in the policy
 * @param jdbc         the text with each placeholder replaced by {@code ?}
 * @param placeholders the placeholder names, in the order of the {@code ?}s (a name may repeat)
 */
public record SqlText(String sql, String jdbc, List<String> placeholders) {

    public SqlText {
        placeholders = List.copyOf(placeholders);
    }

    /**
     * The statement's first keyword in upper case, after leading blanks and comments (nested block comments too, as
     * PostgreSQL reads them); empty if it has none.
     */
    public Optional<String> firstKeyword() {
        int i = 0;
        int n = sql.length();
        while (i < n) {
            if (Character.isWhitespace(sql.charAt(i))) {
                i++;
            } else if (sql.startsWith("--", i)) {
                while (i < n && sql.charAt(i) != '\n' && sql.charAt(i) != '\r') {
                    i++;
                }
            } else if (sql.startsWith("/*", i)) {
                i = blockComment(sql, i);
            } else {
                break;
            }
        }
        int end = i;
        while (end < n && ((sql.charAt(end) >= 'A' && sql.charAt(end) <= 'Z')
                || (sql.charAt(end) >= 'a' && sql.charAt(end) <= 'z'))) {
            end++;
        }
        return end > i ? Optional.of(sql.substring(i, end).toUpperCase(Locale.ROOT)) : Optional.empty();
    }

    /**
     * Reads {@code sql}: its placeholders, and the JDBC text with a {@code ?} in place of each.
     *
     * @throws IllegalArgumentException for an unterminated literal or comment, or a second statement
     */
    public static SqlText parse(String sql) {
        return parse(sql, false);
    }

    /**
     * The text with PostgreSQL's positional parameters ({@code $1}, {@code $2}, ... in the order of
     * {@link #placeholders}) instead of {@code ?}: what a {@code PREPARE name AS ...} takes.
     */
    public String positional() {
        return parse(sql, true).jdbc();
    }

    private static SqlText parse(String sql, boolean positional) {
        StringBuilder out = new StringBuilder(sql.length());
        List<String> names = new ArrayList<>();
        int n = sql.length();
        int i = 0;
        boolean content = false; // anything but blanks and comments
        while (i < n) {
            char c = sql.charAt(i);
            char next = i + 1 < n ? sql.charAt(i + 1) : 0;
            boolean comment = (c == '-' && next == '-') || (c == '/' && next == '*');
            content |= !comment && !Character.isWhitespace(c) && c != ';';
            String tag = c == '$' ? dollarTag(sql, i) : null; // a dollar-quoted string starts here
            if (c == '\'') {
                boolean escapes = i > 0 && (sql.charAt(i - 1) == 'E' || sql.charAt(i - 1) == 'e')
                        && (i < 2 || (!Character.isLetterOrDigit(sql.charAt(i - 2)) && sql.charAt(i - 2) != '_'));
                int end = quoted(sql, i, '\'', escapes);
                out.append(sql, i, end);
                i = end;
            } else if (c == '"') {
                int end = quoted(sql, i, '"', false);
                out.append(sql, i, end);
                i = end;
            } else if (c == '-' && next == '-') {
                int end = i + 2; // to the end of the line: PostgreSQL ends it at a carriage return too
                while (end < n && sql.charAt(end) != '\n' && sql.charAt(end) != '\r') {
                    end++;
                }
                out.append(sql, i, end);
                i = end;
            } else if (c == '/' && next == '*') {
                int end = blockComment(sql, i);
                out.append(sql, i, end);
                i = end;
            } else if (tag != null) {
                int close = sql.indexOf(tag, i + tag.length());
                if (close < 0) {
                    throw new IllegalArgumentException("unterminated " + tag + " quoted string");
                }
                int end = close + tag.length();
                out.append(sql, i, end);
                i = end;
            } else if (c == ':' && next == ':') {
                out.append("::");
                i += 2;
            } else if (c == ':' && (Character.isLetter(next) || next == '_')) {
                int end = i + 1;
                while (end < n && (Character.isLetterOrDigit(sql.charAt(end)) || sql.charAt(end) == '_')) {
                    end++;
                }
                names.add(sql.substring(i + 1, end));
                out.append(positional ? "$" + names.size() : "?");
                i = end;
            } else if (c == '?') {
                throw new IllegalArgumentException("'?' is not a placeholder here: name parameters as :name"
                        + " (a JSON operator such as ?| or ? must be written as a function call)");
            } else if (c == ';') {
                if (!sql.substring(i + 1).isBlank()) {
                    throw new IllegalArgumentException("one statement per entry: list the statements of a route"
                            + " separately instead of joining them with ';'");
                }
                i = n;
            } else {
                out.append(c);
                i++;
            }
        }
        if (!content) {
            throw new IllegalArgumentException("empty statement (nothing but blanks and comments)");
        }
        return new SqlText(sql, out.toString().strip(), names);
    }

    private static int quoted(String sql, int start, char quote, boolean backslashEscapes) {
        int i = start + 1;
        while (i < sql.length()) {
            char c = sql.charAt(i);
            if (backslashEscapes && c == '\\') {
                i += 2;
            } else if (c == quote) {
                if (i + 1 < sql.length() && sql.charAt(i + 1) == quote) {
                    i += 2;
                } else {
                    return i + 1;
                }
            } else {
                i++;
            }
        }
        throw new IllegalArgumentException("unterminated " + (quote == '"' ? "quoted identifier" : "string literal")
                + " starting at character " + (start + 1));
    }

    private static int blockComment(String sql, int start) {
        int depth = 0;
        int i = start;
        while (i < sql.length() - 1) {
            if (sql.startsWith("/*", i)) {
                depth++;
                i += 2;
            } else if (sql.startsWith("*/", i)) {
                depth--;
                i += 2;
                if (depth == 0) {
                    return i;
                }
            } else {
                i++;
            }
        }
        throw new IllegalArgumentException("unterminated /* comment");
    }

    /** The dollar-quote tag ({@code $$} or {@code $tag$}) starting at {@code i}, or null. */
    private static @Nullable String dollarTag(String sql, int i) {
        if (i > 0 && (Character.isLetterOrDigit(sql.charAt(i - 1)) || sql.charAt(i - 1) == '_')) {
            return null; // part of an identifier such as a$b
        }
        int end = i + 1;
        while (end < sql.length() && (Character.isLetterOrDigit(sql.charAt(end)) || sql.charAt(end) == '_')) {
            end++;
        }
        if (end < sql.length() && sql.charAt(end) == '$'
                && (end == i + 1 || !Character.isDigit(sql.charAt(i + 1)))) {
            return sql.substring(i, end + 1);
        }
        return null;
    }
}
