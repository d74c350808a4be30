package io.stockade.proxy.backend.postgres;

import java.math.BigDecimal;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Types;
import java.util.HashMap;
import java.util.Map;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.BackendConfig.ParamType;
import io.stockade.policy.BackendConfig.SqlParam;
import io.stockade.policy.BackendConfig.Statement;
import io.stockade.proxy.backend.Exchange;

/**
 * The values of a request's statement parameters, read from the path, the query, the JSON body or the whole
 * body, checked against their declared types. A missing or mistyped value is a {@link BadParameter} naming it.
 */
final class Binder {
    private final Map<String, SqlParam> params;
    private final Exchange exchange;
    private final String body;
    private final Long token;
    private final Map<String, Object> values = new HashMap<>();
    private Map<?, ?> json;

    /** A parameter the request does not give, or gives with the wrong type: 400. */
    static final class BadParameter extends Exception {
        private final String parameter;

        BadParameter(String parameter, String message) {
            super(message);
            this.parameter = parameter;
        }

        String parameter() {
            return parameter;
        }
    }

    /**
     * @param body  the request body, or null when no parameter reads it
     * @param token the fencing token, or null (unfenced runs bind {@code :fencing_token} as NULL)
     */
    Binder(Map<String, SqlParam> params, java.util.Set<String> used, Exchange exchange, String body, Long token)
            throws BadParameter {
        this.params = params;
        this.exchange = exchange;
        this.body = body;
        this.token = token;
        for (SqlParam p : params.values()) {
            if (used.contains(p.name())) {
                values.put(p.name(), read(p));
            }
        }
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
                default -> set(ps, index, params.get(name).type(), values.get(name));
            }
            index++;
        }
        return index;
    }

    private static void set(PreparedStatement ps, int index, ParamType type, Object v) throws SQLException {
        if (v == null) {
            ps.setNull(index, Types.OTHER);
            return;
        }
        switch (type) {
            case STRING, JSON -> ps.setObject(index, v, Types.OTHER); // unspecified: the server infers the type
            case INTEGER -> ps.setLong(index, (Long) v);
            case NUMBER -> ps.setBigDecimal(index, (BigDecimal) v);
            case BOOLEAN -> ps.setBoolean(index, (Boolean) v);
        }
    }

    private Object read(SqlParam p) throws BadParameter {
        String where = switch (p.source()) {
            case PATH -> "path variable '" + p.field() + "'";
            case QUERY -> "query parameter '" + p.field() + "'";
            case BODY -> "body field '" + p.field() + "'";
            case BODY_TEXT -> "body";
        };
        switch (p.source()) {
            case PATH -> {
                return text(p, where, exchange.route().variables().get(p.field()));
            }
            case QUERY -> {
                var query = exchange.request().query();
                return text(p, where, query.contains(p.field()) ? query.get(p.field()) : null);
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

    private static Object text(SqlParam p, String where, String text) throws BadParameter {
        if (text == null) {
            if (p.nullable()) {
                return null;
            }
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' is missing: the request has no "
                    + where);
        }
        try {
            return switch (p.type()) {
                case STRING -> withoutNul(p, where, text);
                case INTEGER -> Long.parseLong(text);
                case NUMBER -> new BigDecimal(text);
                case BOOLEAN -> switch (text) {
                    case "true" -> Boolean.TRUE;
                    case "false" -> Boolean.FALSE;
                    default -> throw new NumberFormatException();
                };
                case JSON -> JsonBody.write(JsonBody.parse(text));
            };
        } catch (IllegalArgumentException e) {
            throw mistyped(p, where, "'" + text + "'");
        }
    }

    private static Object json(SqlParam p, String where, Object v) throws BadParameter {
        if (v == JsonBody.NULL) {
            if (p.nullable()) {
                return null;
            }
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") must not be null");
        }
        Object out = switch (p.type()) {
            case STRING -> v instanceof String text ? withoutNul(p, where, text) : null;
            case INTEGER -> {
                if (v instanceof BigDecimal d) {
                    try {
                        yield d.longValueExact();
                    } catch (ArithmeticException notWhole) {
                        yield null;
                    }
                }
                yield null;
            }
            case NUMBER -> v instanceof BigDecimal ? v : null;
            case BOOLEAN -> v instanceof Boolean ? v : null;
            case JSON -> JsonBody.write(v);
        };
        if (out == null) {
            throw mistyped(p, where, JsonBody.write(v));
        }
        return out;
    }

    /**
     * A string parameter is bound as text, which PostgreSQL cannot hold with a NUL character in it: refused here,
     * before the fence, rather than by the database (which says "invalid byte sequence", or "invalid message
     * format" under the simple query protocol, where the NUL ends the query text).
     */
    private static String withoutNul(SqlParam p, String where, String text) throws BadParameter {
        if (text.indexOf('\u0000') >= 0) {
            throw new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") must not contain the"
                    + " character U+0000: PostgreSQL text cannot hold it");
        }
        return text;
    }

    private static BadParameter mistyped(SqlParam p, String where, String got) {
        String expected = switch (p.type()) {
            case STRING -> "a string";
            case INTEGER -> "a whole number";
            case NUMBER -> "a number";
            case BOOLEAN -> "true or false";
            case JSON -> "JSON";
        };
        return new BadParameter(p.name(), "parameter '" + p.name() + "' (" + where + ") must be " + expected
                + ", got " + (got.length() > 80 ? got.substring(0, 80) + "..." : got));
    }
}
