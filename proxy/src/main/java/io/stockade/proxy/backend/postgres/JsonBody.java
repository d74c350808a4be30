package io.stockade.proxy.backend.postgres;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import io.stockade.proxy.json.JsonReader;
import io.stockade.proxy.json.JsonWriter;

/**
 * A request body's JSON, read strictly with {@link JsonReader} ({@link JsonReader.Options#BODY}): objects become
 * {@code Map}, arrays {@code List}, numbers {@code BigDecimal}, {@code null} becomes {@link #NULL} (so a field set
 * to null differs from an absent one). {@link #write} turns a value back into JSON text (for parameters of type
 * json).
 */
final class JsonBody {
    /** JSON null. */
    static final Object NULL = JsonReader.NULL;

    private JsonBody() {
    }

    /** @throws IllegalArgumentException with the position of the first error */
    static Object parse(String text) {
        return Objects.requireNonNull(JsonReader.read(text, JsonReader.Options.BODY),
                "with Options.BODY a JSON null is JsonReader.NULL, never Java null");
    }

    /** The JSON text of a parsed value. */
    static String write(Object v) {
        StringBuilder b = new StringBuilder();
        write(v, b);
        return b.toString();
    }

    private static void write(Object v, StringBuilder b) {
        switch (v) {
            case Map<?, ?> m -> {
                b.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) {
                        b.append(',');
                    }
                    first = false;
                    b.append(JsonWriter.quote((String) e.getKey())).append(':');
                    write(e.getValue(), b);
                }
                b.append('}');
            }
            case List<?> l -> {
                b.append('[');
                for (int k = 0; k < l.size(); k++) {
                    if (k > 0) {
                        b.append(',');
                    }
                    write(l.get(k), b);
                }
                b.append(']');
            }
            case String str -> b.append(JsonWriter.quote(str));
            // never written out plainly (1e2147483647 would not fit in memory); zeros past numeric's scale dropped;
            // a zero with an exponent is 0 (numeric's input refuses 0E+2147483646, an exponent past INT_MAX / 2)
            case BigDecimal d -> b.append(d.signum() == 0 && d.scale() < 0 ? "0"
                    : (d.scale() > Exact.NUMERIC_SCALE ? d.stripTrailingZeros() : d).toString());
            default -> b.append(v); // Boolean, NULL
        }
    }
}
