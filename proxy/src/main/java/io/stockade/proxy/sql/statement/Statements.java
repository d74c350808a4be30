package io.stockade.proxy.sql.statement;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

import io.stockade.proxy.sql.statement.Lexer.Kind;
import io.stockade.proxy.sql.statement.Lexer.Token;

import org.jspecify.annotations.Nullable;

/**
 * What the listener lets through, statement by statement, without parsing SQL: a narrow recogniser for exactly the
 * statements that set, reset or show {@code stockade.fencing_token}, and a refusal for every other statement that
 * names a {@code stockade.} setting or object, {@code session_replication_role}, Stockade's triggers, a
 * {@code DISABLE TRIGGER} / {@code ENABLE REPLICA TRIGGER}, or that drops, alters or puts a rule on a fenced table.
 * Everything else passes untouched.
 * <p>
 * The shapes a token is set with (keywords in any case, any white space and comments between tokens):
 * <pre>
 * SET [SESSION | LOCAL] stockade.fencing_token { = | TO } { 42 | '42' }
 * SELECT [pg_catalog.]set_config('stockade.fencing_token', { '42' | 42 | $n[::text] }, { true | false })
 * RESET stockade.fencing_token
 * SHOW stockade.fencing_token
 * </pre>
 * This is a convenience for honest clients, not the guard: a client can still reach the setting through SQL the
 * recogniser does not see (a function, an expression building the name). The guard is in the database: a value
 * without the listener's proof is refused there.
 */
public final class Statements {
    private static final String SETTING = "stockade.fencing_token";
    /** Refusal codes. */
    public static final String REFUSED = "SF405";
    public static final String MALFORMED = "SF400";

    private final Set<String> fencedTables;

    /**
     * @param fencedTables the fenced tables' names, each unqualified ({@code jobs}) and qualified
     *                     ({@code public.jobs}), lower case
     */
    public Statements(Set<String> fencedTables) {
        this.fencedTables = Set.copyOf(fencedTables);
    }

    /**
     * What a statement does to the token: sets, resets or shows it, or resets every setting ({@code RESET ALL},
     * {@code DISCARD ALL}: relayed as written, and the listener forgets the token).
     */
    public enum Action { SET, RESET, SHOW, RESET_ALL, DISCARD_ALL }

    /**
     * A statement of one of the token's shapes.
     *
     * @param start     where it starts in the text
     * @param end       where it ends (its ';' excluded)
     * @param action    set, reset or show
     * @param local     SET LOCAL, or set_config's third argument true: the token holds until the transaction ends
     * @param function  written as set_config (its rewrite keeps that shape: one row answered)
     * @param token     the literal token, or {@code null}
     * @param parameter the 0-based parameter the token comes in ({@code $1} is 0), or -1
     */
    public record Setter(int start, int end, Action action, boolean local, boolean function,
                         @Nullable String token, int parameter) {
    }

    /**
     * The verdict on a message's SQL text.
     *
     * @param setters the token statements in it, in order
     * @param refusal why it is refused, or {@code null}
     * @param code    the SQLSTATE of the refusal, or {@code null}
     */
    public record Classified(List<Setter> setters, @Nullable String refusal, @Nullable String code) {
        public Classified {
            setters = List.copyOf(setters);
        }

        static Classified refused(String code, String refusal) {
            return new Classified(List.of(), refusal, code);
        }

        public boolean refused() {
            return refusal != null;
        }
    }

    /**
     * Classifies SQL text: every statement in it (a simple Query may hold several; a Parse holds one).
     *
     * @param parameters whether {@code $n} may carry the token (a Parse)
     */
    public Classified classify(String sql, boolean parameters) {
        List<Setter> setters = new ArrayList<>();
        for (Lexer.Statement statement : Lexer.statements(sql)) {
            List<Token> t = statement.tokens();
            Setter setter = setter(statement);
            if (setter != null) {
                if (setter.parameter() >= 0 && !parameters) {
                    return Classified.refused(REFUSED, "the token of a simple query must be written in it:"
                            + " $" + (setter.parameter() + 1) + " has no value here");
                }
                if (setter.token() != null && !validToken(setter.token())) {
                    return Classified.refused(MALFORMED, "malformed fencing token '" + cut(setter.token())
                            + "': decimal digits 0..9223372036854775807, no sign, no leading zeros");
                }
                setters.add(setter);
                continue;
            }
            String refusal = refusal(t);
            if (refusal != null) {
                return Classified.refused(REFUSED, refusal);
            }
        }
        return new Classified(setters, null, null);
    }

    /** Why a statement that is not a token statement is refused, or {@code null}. */
    private @Nullable String refusal(List<Token> t) {
        for (int i = 0; i < t.size(); i++) {
            Token k = t.get(i);
            String lower = k.value().toLowerCase(Locale.ROOT).strip();
            boolean name = k.kind() == Kind.WORD || k.kind() == Kind.QUOTED || k.kind() == Kind.STRING;
            boolean schemaDot = (k.kind() == Kind.WORD || k.kind() == Kind.QUOTED) && lower.equals("stockade")
                    && i + 1 < t.size() && t.get(i + 1).punct(".");
            boolean settingName = (k.kind() == Kind.STRING || k.kind() == Kind.QUOTED) && lower.startsWith("stockade.");
            if (schemaDot || settingName) {
                return "only SET, SET LOCAL, set_config, RESET and SHOW of " + SETTING + " may name a stockade."
                        + " setting or object through the Stockade listener";
            }
            if (name && lower.equals("session_replication_role")) {
                return "session_replication_role is not relayed: it decides which triggers fire, and the fence is"
                        + " a trigger";
            }
            if (name && lower.startsWith("stockade_fence")) {
                return "statements naming Stockade's fence triggers or functions are not relayed";
            }
            boolean disable = k.is("disable") && i + 1 < t.size() && t.get(i + 1).is("trigger");
            boolean replica = k.is("enable") && i + 2 < t.size() && t.get(i + 1).is("replica")
                    && t.get(i + 2).is("trigger");
            if (disable || replica) {
                return "ALTER TABLE ... " + (k.is("disable") ? "DISABLE" : "ENABLE REPLICA")
                        + " TRIGGER is not relayed: it can switch the fence off";
            }
        }
        boolean ddl = !t.isEmpty() && (t.getFirst().is("drop") || t.getFirst().is("alter")
                || (t.getFirst().is("create") && t.stream().anyMatch(k -> k.is("rule"))));
        if (ddl) {
            for (int i = 0; i < t.size(); i++) {
                String table = tableAt(t, i);
                if (table != null && fencedTables.contains(table)) {
                    return t.getFirst().value().toUpperCase(Locale.ROOT) + " naming the fenced table " + table
                            + " is not relayed: run schema changes on the database directly, as its owner";
                }
            }
        }
        return null;
    }

    /** The (possibly qualified) name at {@code i}, lower case, or {@code null}. */
    private static @Nullable String tableAt(List<Token> t, int i) {
        Token k = t.get(i);
        if (k.kind() != Kind.WORD && k.kind() != Kind.QUOTED) {
            return null;
        }
        String name = k.value().toLowerCase(Locale.ROOT);
        if (i + 2 < t.size() && t.get(i + 1).punct(".")
                && (t.get(i + 2).kind() == Kind.WORD || t.get(i + 2).kind() == Kind.QUOTED)) {
            return name + "." + t.get(i + 2).value().toLowerCase(Locale.ROOT);
        }
        return name;
    }

    /** The statement as a token statement, or {@code null} when it is not one of the shapes. */
    private static @Nullable Setter setter(Lexer.Statement s) {
        List<Token> t = s.tokens();
        int i = 0;
        if (t.isEmpty()) {
            return null;
        }
        if (t.size() == 2 && t.get(1).is("all") && (t.getFirst().is("reset") || t.getFirst().is("discard"))) {
            return new Setter(s.start(), s.end(), t.getFirst().is("reset") ? Action.RESET_ALL : Action.DISCARD_ALL,
                    false, false, null, -1);
        }
        if (t.getFirst().is("reset") || t.getFirst().is("show")) {
            if (t.size() == 4 && isSetting(t, 1)) {
                return new Setter(s.start(), s.end(), t.getFirst().is("reset") ? Action.RESET : Action.SHOW, false,
                        false, null, -1);
            }
            return null;
        }
        if (t.getFirst().is("set")) {
            i = 1;
            boolean local = false;
            if (i < t.size() && (t.get(i).is("local") || t.get(i).is("session"))) {
                local = t.get(i).is("local");
                i++;
            }
            if (!isSetting(t, i) || i + 5 != t.size() || !(t.get(i + 3).punct("=") || t.get(i + 3).is("to"))) {
                return null;
            }
            Token v = t.get(i + 4);
            if (v.kind() != Kind.NUMBER && v.kind() != Kind.STRING) {
                return null;
            }
            return new Setter(s.start(), s.end(), Action.SET, local, false, v.value(), -1);
        }
        return setConfig(s);
    }

    /** The digits of a {@code $n} PostgreSQL can bind (65535 at most, checked after). */
    private static final Pattern BINDABLE = Pattern.compile("[1-9][0-9]{0,4}");

    /** The 0-based index of a {@code $n} PostgreSQL can bind ({@code $1} to {@code $65535}), or -1. */
    private static int parameterIndex(String param) {
        String digits = param.substring(1);
        if (!BINDABLE.matcher(digits).matches()) {
            return -1;
        }
        int n = Integer.parseInt(digits);
        return n <= 65535 ? n - 1 : -1;
    }

    /** {@code SELECT [pg_catalog.]set_config('stockade.fencing_token', value, bool)}. */
    private static @Nullable Setter setConfig(Lexer.Statement s) {
        List<Token> t = s.tokens();
        int i = 0;
        if (!t.get(i++).is("select")) {
            return null;
        }
        if (i + 1 < t.size() && t.get(i).is("pg_catalog") && t.get(i + 1).punct(".")) {
            i += 2;
        }
        if (!(i + 4 < t.size() && t.get(i).is("set_config") && t.get(i + 1).punct("(")
                && t.get(i + 2).kind() == Kind.STRING && t.get(i + 2).value().equals(SETTING)
                && t.get(i + 3).punct(","))) {
            return null;
        }
        i += 4;
        Token v = t.get(i++);
        String token = null;
        int parameter = -1;
        if (v.kind() == Kind.STRING || v.kind() == Kind.NUMBER) {
            token = v.value();
        } else if (v.kind() == Kind.PARAM) {
            parameter = parameterIndex(v.value());
            if (parameter < 0) {
                return null; // $0, or past PostgreSQL's 65535: no token statement (refused for naming the setting)
            }
            if (i + 1 < t.size() && t.get(i).punct("::") && t.get(i + 1).is("text")) {
                i += 2;
            }
        } else {
            return null;
        }
        if (!(i + 3 == t.size() && t.get(i).punct(",") && t.get(i + 2).punct(")"))) {
            return null;
        }
        Boolean local = bool(t.get(i + 1));
        if (local == null) {
            return null;
        }
        return new Setter(s.start(), s.end(), Action.SET, local, true, token, parameter);
    }

    private static @Nullable Boolean bool(Token t) {
        String v = t.value().toLowerCase(Locale.ROOT);
        if (t.kind() == Kind.WORD || t.kind() == Kind.STRING) {
            if (v.equals("true") || (v.equals("t") && t.kind() == Kind.STRING)) {
                return true;
            }
            if (v.equals("false") || (v.equals("f") && t.kind() == Kind.STRING)) {
                return false;
            }
        }
        return null;
    }

    /** {@code stockade . fencing_token} at {@code i}. */
    private static boolean isSetting(List<Token> t, int i) {
        return i + 2 < t.size() && t.get(i).is("stockade") && t.get(i + 1).punct(".")
                && t.get(i + 2).is("fencing_token");
    }

    /** A token as the contract spells it: 0..2^63-1, digits only, no leading zeros. */
    public static boolean validToken(String text) {
        if (text.isEmpty() || text.length() > 19 || (text.length() > 1 && text.charAt(0) == '0')) {
            return false;
        }
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) < '0' || text.charAt(i) > '9') {
                return false;
            }
        }
        return text.length() < 19 || text.compareTo("9223372036854775807") <= 0;
    }

    private static String cut(String s) {
        return s.length() > 40 ? s.substring(0, 40) + "..." : s;
    }
}
