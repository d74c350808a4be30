package io.stockade.proxy.backend.postgres;

import java.math.BigDecimal;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.ParamSource;
import io.stockade.policy.BackendConfig.ParamType;
import io.stockade.policy.BackendConfig.SqlParam;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.proxy.backend.Exchange;

import org.jspecify.annotations.Nullable;
import org.postgresql.util.PGobject;

/**
 * The values of a request's statement parameters, read from the path, the query, the JSON body or the whole
 * body, checked against their declared types. A missing or mistyped value is a {@link BadParameter} naming it.
 */
final class Binder {
    /**
     * Why a parameter that reads a scope variable is bound as text, and what to declare instead: the load check's
     * and the write's answer when a column of another type refuses it.
     */
    static final String SCOPE_TEXT_HINT = "is bound as text, so that one spelling is one scope: declare `type:"
            + " integer` or `type: number` for an integer or decimal key, or keep the key column text (a cast such as"
            + " ::uuid would make two spellings one row again)";

    private final Map<String, SqlParam> params;
    private final Exchange exchange;
    /** The parameters that read a path variable the scope reads ({@link #scopeParams}). */
    private final Set<String> scope;
    private final @Nullable String body;
    private final @Nullable Long token;
    private final Map<String, @Nullable Object> values = new HashMap<>();
    /** The JSON body, parsed when a parameter first reads it; null until then. */
    private @Nullable Map<?, ?> json;

    /** A parameter the request does not give, or gives with the wrong type: 400. */
    static final class BadParameter extends Exception {
        private final String parameter;
        private final String message;

        BadParameter(String parameter, String message) {
            super(message);
            this.parameter = parameter;
            this.message = message;
        }

        /** The message it was made with (never null). */
        @Override
        public String getMessage() {
            return message;
        }

        String parameter() {
            return parameter;
        }
    }

    /**
     * The parameters that read a path variable the scope reads too: their spelling is the scope's, so it is
     * checked (an integer or number in its plain form only) or bound as {@code text} ({@link #boundAsText}). Bound
     * untyped, PostgreSQL would read the text as the column's type, and two spellings of one value (a uuid in
     * upper case, an integer with a leading space, jsonb with other spaces) would be two scopes of one row: a stale
     * writer could pick a spelling no holder ever raised. A column of another type refuses the text (no implicit
     * cast): the load check says so ({@link StatementCheck}), else the write is refused with the database's reason.
     */
    static Set<String> scopeParams(Map<String, SqlParam> params, List<String> scopeVariables) {
        Set<String> names = new HashSet<>();
        for (SqlParam p : params.values()) {
            if (p.source() == ParamSource.PATH && scopeVariables.contains(p.field())) {
                names.add(p.name());
            }
        }
        return Set.copyOf(names);
    }

    /** Whether a parameter of the scope ({@link #scopeParams}) is bound as {@code text}: a string or json one. */
    static boolean boundAsText(SqlParam p) {
        return p.type() == ParamType.STRING || p.type() == ParamType.JSON;
    }

    /**
     * @param scope the parameters that read a scope variable ({@link #scopeParams}, made once per backend)
     * @param body  the request body's bytes, or null when no parameter reads it
     * @param token the fencing token, or null (unfenced runs bind {@code :fencing_token} as NULL)
     */
    Binder(Map<String, SqlParam> params, Set<String> scope, Set<String> used, Exchange exchange,
           byte @Nullable [] body, @Nullable Long token)
            throws BadParameter {
        this.params = params;
        this.scope = scope;
        this.exchange = exchange;
        this.token = token;
        this.body = body == null ? null : Exact.utf8(body);
        if (body != null && this.body == null) {
            SqlParam reader = params.values().stream().filter(p -> used.contains(p.name()))
                    .filter(p -> p.source() == ParamSource.BODY || p.source() == ParamSource.BODY_TEXT)
                    .findFirst().orElseThrow();
            throw new BadParameter(reader.name(), "parameter '" + reader.name() + "' is read from the body, which"
                    + " is not valid UTF-8: send the text in UTF-8 (a byte that is not would be stored as U+FFFD)");
        }
        for (SqlParam p : params.values()) {
            if (used.contains(p.name())) {
                values.put(p.name(), read(p, scope.contains(p.name())));
            }
        }
    }

    /** Whether a path variable the scope reads is bound as text ({@link #boundAsText}). */
    boolean bindsScopeText() {
        return values.keySet().stream().anyMatch(name -> scope.contains(name)
                && boundAsText(Objects.requireNonNull(params.get(name), "a value of a declared parameter")));
    }

    /** Binds the placeholders of {@code s} from {@code index}; answers the next index. */
    int bind(PreparedStatement ps, int index, Statement s) throws SQLException {
        for (String name : s.sql().placeholders()) {
            switch (name) {
                case BackendConfig.Postgres.FENCING_TOKEN -> {
                    if (token == null) {
                        ps.setNull(index, Types.BIGINT);
                    } else {
                        ps.setLong(index, token);
                    }
                }
                case BackendConfig.Postgres.SCOPE -> ps.setString(index, exchange.scope());
                default -> {
                    SqlParam p = Objects.requireNonNull(params.get(name), "the loader refuses a placeholder that"
                            + " is neither declared in params nor provided");
                    Object v = values.get(name);
                    if (v != null && scope.contains(name) && boundAsText(p)) {
                        PGobject text = new PGobject();
                        text.setType("text");
                        text.setValue(v instanceof String str ? str : pathText(p));
                        ps.setObject(index, text);
                    } else {
                        set(ps, index, p.type(), v);
                    }
                }
            }
            index++;
        }
        return index;
    }

    private static void set(PreparedStatement ps, int index, ParamType type, @Nullable Object v) throws SQLException {
        if (v == null) {
            ps.setNull(index, Types.OTHER);
            return;
        }
        switch (type) {
            case STRING, JSON -> ps.setObject(index, v, Types.OTHER); // unspecified: the server infers the type
            case INTEGER -> ps.setLong(index, (Long) v);
            case NUMBER -> ps.setObject(index, numeric((BigDecimal) v));
            case BOOLEAN -> ps.setBoolean(index, (Boolean) v);
        }
    }

    /**
     * A checked number as a {@code numeric} parameter in its plain decimal text, which the server reads exactly.
     * Not {@code setBigDecimal}: pgjdbc's binary encoding of it folded what {@code numeric} cannot hold (1e131072
     * was stored as 0) and threw on a huge scale.
     */
    private static PGobject numeric(BigDecimal d) throws SQLException {
        PGobject o = new PGobject();
        o.setType("numeric");
        o.setValue(Exact.bindable(d).toPlainString());
        return o;
    }

    /** The path variable's text as the request spelled it (a json-typed one was parsed on reading). */
    private String pathText(SqlParam p) {
        return Objects.requireNonNull(exchange.route().variables().get(p.field()), "read from the path");
    }

    private @Nullable Object read(SqlParam p, boolean inScope) throws BadParameter {
        String where = switch (p.source()) {
            case PATH -> "path variable '" + p.field() + "'";
            case QUERY -> "query parameter '" + p.field() + "'";
            case BODY -> "body field '" + p.field() + "'";
            case BODY_TEXT -> "body";
        };
        switch (p.source()) {
            case PATH -> {
                String text = exchange.route().variables().get(p.field());
                Object value = text(p, where, text);
                if (inScope && value != null && !canonical(p.type(), value, Objects.requireNonNull(text))) {
                    throw mistyped(p, where, "'" + text + "'", "a scope variable is spelled one way only, so that"
                            + " one value is one scope: write it as " + canonicalText(value));
                }
                return value;
            }
            case QUERY -> {
                return text(p, where, queryValue(p, where));
            }
            case BODY_TEXT -> {
                return text(p, where, body);
            }
            default -> {
                Map<?, ?> object = jsonBody(p);
                if (!object.containsKey(p.field()) && !p.nullable()) {
                    throw new BadParameter(p.name(), "parameter '" + p.name() + "': the JSON body has no field '"
                            + p.field() + "'");
                }
                // An absent field of a nullable parameter is null, as an absent query parameter is.
                return json(p, where, object.containsKey(p.field()) ? object.get(p.field()) : JsonBody.NULL);
            }
        }
    }

    /**
     * A query parameter's value, decoded strictly from its raw spelling; null when absent. Given twice it is
     * refused: which of the two would bind is a guess.
     */
    private @Nullable String queryValue(SqlParam p, String where) throws BadParameter {
        var query = exchange.request().query();
        if (!query.contains(p.field())) {
            return null;
        }
        List<String> raw = query.getAllRaw(p.field());
        if (raw.size() > 1) {
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") is given " + raw.size()
                    + " times: give it once");
        }
        String value = Exact.queryValue(raw.getFirst());
        if (value == null) {
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") is not valid UTF-8 once"
                    + " percent-decoded: encode the text's UTF-8 bytes as %HH");
        }
        return value;
    }

    private Map<?, ?> jsonBody(SqlParam p) throws BadParameter {
        if (json == null) {
            Object parsed;
            try {
                parsed = JsonBody.parse(body == null ? "" : body);
            } catch (IllegalArgumentException e) {
                throw new BadParameter(p.name(), "parameter '" + p.name() + "' is read from the JSON body, but the"
                        + " body is not JSON: " + e.getMessage());
            }
            if (!(parsed instanceof Map<?, ?> m)) {
                throw new BadParameter(p.name(), "parameter '" + p.name() + "' is read from the JSON body, which"
                        + " must be a JSON object");
            }
            json = m;
        }
        return json;
    }

    /**
     * Whether {@code text}, read as {@code value}, is the one spelling of that value: no sign or leading zero on an
     * integer, no exponent, trailing zero or sign of zero on a number. Text, json (bound as text) and boolean (only
     * true and false) have one each.
     */
    private static boolean canonical(ParamType type, Object value, String text) {
        return switch (type) {
            case INTEGER, NUMBER -> text.equals(canonicalText(value));
            case STRING, JSON, BOOLEAN -> true;
        };
    }

    private static String canonicalText(Object value) {
        if (value instanceof BigDecimal d) {
            return d.signum() == 0 ? "0" : d.stripTrailingZeros().toPlainString();
        }
        return value.toString();
    }

    private static @Nullable Object text(SqlParam p, String where, @Nullable String text) throws BadParameter {
        if (text == null) {
            if (p.nullable()) {
                return null;
            }
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' is missing: the request has no "
                    + where);
        }
        Object value;
        try {
            value = switch (p.type()) {
                case STRING -> text;
                case INTEGER -> Exact.parseInteger(text);
                case NUMBER -> Exact.parseNumber(text);
                case BOOLEAN -> switch (text) {
                    case "true" -> true;
                    case "false" -> false;
                    default -> throw new IllegalArgumentException();
                };
                case JSON -> JsonBody.parse(text);
            };
        } catch (IllegalArgumentException e) {
            throw mistyped(p, where, "'" + text + "'", e.getMessage());
        }
        return exact(p, where, value);
    }

    private static @Nullable Object json(SqlParam p, String where, Object v) throws BadParameter {
        if (v == JsonBody.NULL) {
            if (p.nullable()) {
                return null;
            }
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") must not be null");
        }
        Object out = switch (p.type()) {
            case STRING -> v instanceof String ? v : null;
            case INTEGER -> v instanceof BigDecimal d ? whole(p, where, d) : null;
            case NUMBER -> v instanceof BigDecimal ? v : null;
            case BOOLEAN -> v instanceof Boolean ? v : null;
            case JSON -> v;
        };
        if (out == null) {
            throw mistyped(p, where, JsonBody.write(v), null);
        }
        return exact(p, where, out);
    }

    /** A JSON number as a bigint, refused when it is not whole or out of bigint's range. */
    private static Long whole(SqlParam p, String where, BigDecimal d) throws BadParameter {
        try {
            return d.longValueExact();
        } catch (ArithmeticException e) {
            boolean fraction = Exact.integerDigits(d) <= 19 && Exact.fractionDigits(d) > 0;
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") must be a whole number"
                    + (fraction ? "" : " in bigint's range " + Long.MIN_VALUE + ".." + Long.MAX_VALUE) + ", got "
                    + Exact.shown(d));
        }
    }

    /**
     * A typed value checked for what PostgreSQL stores exactly ({@link Exact}), and in the form it is bound: a
     * string without U+0000 or a lone surrogate, a number {@code numeric} (or the parameter's precision and scale)
     * holds, JSON whose strings and numbers jsonb holds as they are (as its text). Refused here, before the fence,
     * rather than changed on the way (pgjdbc wrote a lone surrogate as {@code ?}) or refused by the database.
     */
    private static Object exact(SqlParam p, String where, Object value) throws BadParameter {
        String wrong = switch (value) {
            case String text when p.type() == ParamType.STRING -> Exact.text(text);
            case BigDecimal d -> Exact.number(d, p.digits());
            default -> p.type() == ParamType.JSON ? Exact.json(value, "$") : null;
        };
        if (wrong != null) {
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ")"
                    + (p.type() == ParamType.STRING ? " " : ": ") + wrong);
        }
        return p.type() == ParamType.JSON ? JsonBody.write(value) : value;
    }

    /** @param why what the parser said, or null */
    private static BadParameter mistyped(SqlParam p, String where, String got,
                                          @Nullable String why) {
        String expected = switch (p.type()) {
            case STRING -> "a string";
            case INTEGER -> "a whole number";
            case NUMBER -> "a number";
            case BOOLEAN -> "true or false";
            case JSON -> "JSON";
        };
        return new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") must be " + expected
                + ", got " + (got.length() > 80 ? got.substring(0, Character.isHighSurrogate(got.charAt(79)) ? 79
                : 80) + "..." : got)
                + (why == null || why.isEmpty() ? "" : " (" + why + ")"));
    }
}
