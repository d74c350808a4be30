package io.stockade.proxy.admin;

import java.util.List;
import java.util.Map;

import io.stockade.proxy.json.JsonReader;

/**
 * One flat JSON object whose values are strings, whole numbers (as {@link Long}), booleans or null — all the admin
 * requests and the export lines need — read with {@link JsonReader}. Anything else is an
 * {@link IllegalArgumentException} with a short reason.
 */
final class FlatJson {
    private FlatJson() {
    }

    static Map<String, Object> parse(String text) {
        Map<String, Object> object = JsonReader.object(text);
        for (Map.Entry<String, Object> e : object.entrySet()) {
            Object v = e.getValue();
            if (v instanceof Map || v instanceof List) {
                throw new IllegalArgumentException("'" + e.getKey() + "': expected a string, a whole number, true,"
                        + " false or null, not " + (v instanceof Map ? "an object" : "an array"));
            }
            if (v instanceof Number && !(v instanceof Long)) {
                throw new IllegalArgumentException("'" + e.getKey() + "': " + v + " is not a whole number that fits"
                        + " 64 bits (a token is an integer)");
            }
        }
        return object;
    }
}
