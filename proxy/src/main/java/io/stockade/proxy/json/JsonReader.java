package io.stockade.proxy.json;

import java.io.IOException;
import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonLocation;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.core.StreamReadFeature;
import org.jspecify.annotations.Nullable;

/**
 * The proxy's one JSON reader, on Jackson's streaming parser ({@code jackson-core}): every JSON the proxy reads —
 * a lock service's answer, an admin request, a request body bound to SQL parameters — goes through it. Objects become
 * {@code LinkedHashMap} (in document order), arrays {@code List}, strings {@code String}, {@code true}/{@code false}
 * {@code Boolean}; numbers and {@code null} as the {@link Options} say. Strict: one value and nothing after it, no
 * duplicate field, no comment, no control character in a string, at most {@link #MAX_DEPTH} levels of nesting.
 * A malformed text is an {@link IllegalArgumentException} saying what and at which character.
 */
public final class JsonReader {
    /** JSON {@code null} where it must differ from an absent field ({@link Options#nullMarker}). */
    public static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    /**
     * How values come out.
     *
     * @param decimals   every number as a {@link BigDecimal} (exact, as a database takes it); otherwise an integral
     *                   number that fits 64 bits is a {@link Long}, any other a {@link BigDecimal}
     * @param nullMarker {@code null} comes out as {@link #NULL}; otherwise as Java {@code null}
     */
    public record Options(boolean decimals, boolean nullMarker) {
        /** Longs where whole, Java nulls: a lock service's answer, an admin request. */
        public static final Options PLAIN = new Options(false, false);
        /** BigDecimals and {@link #NULL}: a request body whose values become SQL parameters. */
        public static final Options BODY = new Options(true, true);
    }

    /** The deepest nesting of objects and arrays accepted. */
    public static final int MAX_DEPTH = 64;

    private static final JsonFactory FACTORY = JsonFactory.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(MAX_DEPTH).build())
            .build();

    private JsonReader() {
    }

    /** Any JSON value ({@code null} for JSON's {@code null}), read with {@link Options#PLAIN}. */
    public static @Nullable Object read(String text) {
        return read(text, Options.PLAIN);
    }

    /** A JSON object, read with {@link Options#PLAIN}. */
    @SuppressWarnings("unchecked")
    public static Map<String, Object> object(String text) {
        Object v = read(text, Options.PLAIN);
        if (!(v instanceof Map)) {
            throw new IllegalArgumentException("expected a JSON object");
        }
        return (Map<String, Object>) v;
    }

    /** Any JSON value ({@code null} for JSON's {@code null} where the options keep no other mark for it). */
    public static @Nullable Object read(String text, Options options) {
        try (JsonParser p = FACTORY.createParser(text)) {
            JsonToken first = p.nextToken();
            if (first == null) {
                throw new IllegalArgumentException("invalid JSON at character 1: no value (an empty text)");
            }
            Object value = value(p, first, options);
            if (p.nextToken() != null) {
                throw new IllegalArgumentException("invalid JSON at character " + character(p.currentTokenLocation())
                        + ": unexpected text after the value");
            }
            return value;
        } catch (JsonProcessingException e) {
            String what = e.getOriginalMessage();
            int nl = what.indexOf('\n');
            throw new IllegalArgumentException("invalid JSON at character " + character(e.getLocation()) + ": "
                    + (nl < 0 ? what : what.substring(0, nl)), e);
        } catch (IOException e) {
            throw new IllegalArgumentException("invalid JSON: " + e.getMessage(), e);
        }
    }

    private static long character(JsonLocation at) {
        return at == null || at.getCharOffset() < 0 ? 0 : at.getCharOffset() + 1;
    }

    private static @Nullable Object value(JsonParser p, JsonToken t, Options o) throws IOException {
        return switch (t) {
            case START_OBJECT -> {
                Map<String, Object> m = new LinkedHashMap<>();
                for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
                    String name = p.currentName();
                    m.put(name, value(p, p.nextToken(), o));
                }
                yield m;
            }
            case START_ARRAY -> {
                List<Object> l = new ArrayList<>();
                for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
                    l.add(value(p, e, o));
                }
                yield l;
            }
            case VALUE_STRING -> p.getText();
            case VALUE_TRUE -> true;
            case VALUE_FALSE -> false;
            case VALUE_NULL -> o.nullMarker() ? NULL : null;
            case VALUE_NUMBER_INT -> o.decimals() ? p.getDecimalValue()
                    : p.getNumberType() == JsonParser.NumberType.BIG_INTEGER ? p.getDecimalValue() : p.getLongValue();
            case VALUE_NUMBER_FLOAT -> p.getDecimalValue();
            default -> throw new IllegalArgumentException("invalid JSON at character "
                    + character(p.currentTokenLocation()) + ": unexpected " + t);
        };
    }
}
