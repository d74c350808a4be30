package io.stockade.proxy.json;

import java.math.BigDecimal;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class JsonReaderTest {

    @Test
    void valuesComeOutAsTheOptionsSay() {
        Map<String, Object> plain = JsonReader.object(
                "{\"s\":\"a\\u00e9\\n\",\"n\":42,\"big\":9223372036854775808,\"f\":1.5,\"t\":true,\"x\":null,"
                        + "\"l\":[1,{\"k\":false}]}");
        assertEquals(List.of("s", "n", "big", "f", "t", "x", "l"), List.copyOf(plain.keySet()), "document order");
        assertEquals("aé\n", plain.get("s"));
        assertEquals(42L, plain.get("n"));
        assertEquals(new BigDecimal("9223372036854775808"), plain.get("big"), "past 64 bits: exact, not a long");
        assertEquals(new BigDecimal("1.5"), plain.get("f"));
        assertEquals(Boolean.TRUE, plain.get("t"));
        assertTrue(plain.containsKey("x"));
        assertNull(plain.get("x"));
        assertEquals(List.of(1L, Map.of("k", false)), plain.get("l"));

        @SuppressWarnings("unchecked")
        Map<String, Object> body = (Map<String, Object>) JsonReader.read("{\"n\":42,\"x\":null,\"e\":1e20}",
                JsonReader.Options.BODY);
        assertEquals(new BigDecimal("42"), body.get("n"));
        assertSame(JsonReader.NULL, body.get("x"), "null differs from absent");
        assertEquals(0, new BigDecimal("1e20").compareTo((BigDecimal) body.get("e")));
    }

    @Test
    void malformedTextIsRefusedSayingWhereAndWhat() {
        Map<String, String> cases = new LinkedHashMap<>();
        cases.put("", "no value");
        cases.put("{\"a\":1} x", "character 9");
        cases.put("{\"a\":1,\"a\":2}", "Duplicate field 'a'");
        cases.put("{\"a\":\"\\x\"}", "character");
        cases.put("{\"a\":\"tab\there\"}", "character");
        cases.put("{\"a\":01}", "character");
        cases.put("{'a':1}", "character 2");
        cases.put("{\"a\":1 /* c */}", "character");
        cases.put("[1,2", "character");
        cases.put("{\"a\":NaN}", "character");
        cases.put("[".repeat(JsonReader.MAX_DEPTH + 1) + "]".repeat(JsonReader.MAX_DEPTH + 1), "depth");
        for (Map.Entry<String, String> c : cases.entrySet()) {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> JsonReader.read(c.getKey()),
                    c.getKey());
            assertTrue(e.getMessage().startsWith("invalid JSON at character "), c.getKey() + ": " + e.getMessage());
            assertTrue(e.getMessage().contains(c.getValue()), c.getKey() + ": " + e.getMessage());
            assertTrue(!e.getMessage().contains("\n"), "one line: " + e.getMessage());
        }
        assertThrows(IllegalArgumentException.class, () -> JsonReader.object("[1]"));
        String deepest = "[".repeat(JsonReader.MAX_DEPTH) + "]".repeat(JsonReader.MAX_DEPTH);
        assertEquals(1, ((List<?>) JsonReader.read(deepest)).size(), "64 levels are accepted");
    }
}
