package io.stockade.proxy.json;

import com.fasterxml.jackson.core.io.JsonStringEncoder;
import org.jspecify.annotations.Nullable;

/**
 * The little JSON writing the proxy does by hand (problem bodies, log lines, the admin API's answers): string
 * literals escaped by Jackson's {@link JsonStringEncoder}, and scalar values.
 */
public final class JsonWriter {
    private static final JsonStringEncoder ENCODER = JsonStringEncoder.getInstance();

    private JsonWriter() {
    }

    /** A JSON string literal ({@code null} for null). */
    public static String quote(@Nullable String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        ENCODER.quoteAsString(s, b);
        return b.append('"').toString();
    }

    /** A JSON value for a string, number, boolean or null. */
    public static String value(Object v) {
        if (v == null) {
            return "null";
        }
        if (v instanceof Number || v instanceof Boolean) {
            return v.toString();
        }
        return quote(v.toString());
    }
}
