package io.stockade.proxy.admin;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Reads one flat JSON object whose values are strings, integers, booleans or null — all the admin requests and the
 * export lines need. Anything else is an {@link IllegalArgumentException} with a short reason.
 */
final class FlatJson {
    private final String s;
    private int i;

    private FlatJson(String s) {
        this.s = s;
    }

    static Map<String, Object> parse(String text) {
        FlatJson p = new FlatJson(text);
        Map<String, Object> out = p.object();
        p.ws();
        if (p.i != p.s.length()) {
            throw new IllegalArgumentException("trailing characters after the JSON object");
        }
        return out;
    }

    private Map<String, Object> object() {
        ws();
        expect('{');
        Map<String, Object> out = new LinkedHashMap<>();
        ws();
        if (peek() == '}') {
            i++;
            return out;
        }
        while (true) {
            ws();
            String key = string();
            ws();
            expect(':');
            ws();
            if (out.put(key, value()) != null) {
                throw new IllegalArgumentException("duplicate key '" + key + "'");
            }
            ws();
            char c = next();
            if (c == '}') {
                return out;
            }
            if (c != ',') {
                throw new IllegalArgumentException("expected ',' or '}' at offset " + (i - 1));
            }
        }
    }

    private Object value() {
        char c = peek();
        if (c == '"') {
            return string();
        }
        if (c == '-' || Character.isDigit(c)) {
            int start = i;
            if (c == '-') {
                i++;
            }
            while (i < s.length() && Character.isDigit(s.charAt(i))) {
                i++;
            }
            if (i < s.length() && ".eE".indexOf(s.charAt(i)) >= 0) {
                throw new IllegalArgumentException("numbers must be whole (a token is an integer)");
            }
            try {
                return Long.parseLong(s.substring(start, i));
            } catch (NumberFormatException e) {
                throw new IllegalArgumentException("number out of range: " + s.substring(start, i));
            }
        }
        for (String word : new String[]{"true", "false", "null"}) {
            if (s.startsWith(word, i)) {
                i += word.length();
                return word.equals("null") ? null : Boolean.valueOf(word);
            }
        }
        throw new IllegalArgumentException("expected a string, a whole number, true, false or null at offset " + i);
    }

    private String string() {
        expect('"');
        StringBuilder b = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') {
                return b.toString();
            }
            if (c == '\\') {
                char e = next();
                switch (e) {
                    case '"', '\\', '/' -> b.append(e);
                    case 'b' -> b.append('\b');
                    case 'f' -> b.append('\f');
                    case 'n' -> b.append('\n');
                    case 'r' -> b.append('\r');
                    case 't' -> b.append('\t');
                    case 'u' -> {
                        if (i + 4 > s.length()) {
                            throw new IllegalArgumentException("bad \\u escape");
                        }
                        b.append((char) Integer.parseInt(s.substring(i, i + 4), 16));
                        i += 4;
                    }
                    default -> throw new IllegalArgumentException("bad escape \\" + e);
                }
            } else if (c < 0x20) {
                throw new IllegalArgumentException("control character in a string");
            } else {
                b.append(c);
            }
        }
    }

    private void ws() {
        while (i < s.length() && Character.isWhitespace(s.charAt(i))) {
            i++;
        }
    }

    private char peek() {
        if (i >= s.length()) {
            throw new IllegalArgumentException("unexpected end of JSON");
        }
        return s.charAt(i);
    }

    private char next() {
        char c = peek();
        i++;
        return c;
    }

    private void expect(char c) {
        if (next() != c) {
            throw new IllegalArgumentException("expected '" + c + "' at offset " + (i - 1));
        }
    }
}
