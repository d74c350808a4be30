package io.stockade.proxy.backend.postgres;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.math.BigInteger;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.IntStream;

import io.stockade.proxy.ProxyFixture;
import io.stockade.testing.Http;
import io.stockade.testing.Pg;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.StreamReadConstraints;
import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.Tuple;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import net.jqwik.api.statistics.Statistics;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Numbers and strings at every edge, sent through the proxy to the routes of {@link PostgresExactValuesIT} (real
 * PostgreSQL): each write is either 200, and the row read back directly (JDBC) holds what was sent, or 400
 * {@code bad-parameter} naming the parameter, and the row and its {@code stockade_fences} row read back as they
 * were. An independent model of what PostgreSQL can hold (decimal digits before and after the point, the JSON and
 * decimal grammars, UTF-16 well-formedness, U+0000) says which of the two each value must get. Tries: 300 per
 * property in CI (jqwik.properties); more with {@code -Djqwik.tries.default=N}.
 */
class PostgresExactValuesPropertyIT {
    private static final Pattern JSON_NUMBER = Pattern.compile("-?(0|[1-9][0-9]*)(\\.([0-9]+))?([eE]([+-]?[0-9]+))?");
    private static final Pattern DECIMAL = Pattern.compile("[+-]?([0-9]*)(\\.([0-9]*))?([eE]([+-]?[0-9]+))?");
    private static final Pattern INTEGER = Pattern.compile("[+-]?[0-9]+");
    private static final JsonFactory LARGE = JsonFactory.builder()
            .streamReadConstraints(StreamReadConstraints.builder().maxNumberLength(1_000_000).build()).build();

    private static Path dir;
    private static Pg pg;
    private static Connection look;
    private static ProxyFixture proxy;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-exact-prop");
        pg = Pg.create(PostgresExactValuesIT.DDL + "INSERT INTO vals (id) VALUES ('r');");
        look = pg.connect();
        proxy = ProxyFixture.start(dir.resolve("j"), PostgresExactValuesIT.YAML, Map.of("PG_URL", pg.url()));
    }

    @AfterContainer
    static void stop() throws SQLException {
        if (proxy != null) {
            proxy.close();
        }
        if (look != null) {
            look.close();
        }
        if (pg != null) {
            pg.close();
        }
    }

    /** What the model says a value must get. */
    enum Expect { STORED, REFUSED, EITHER }

    // ---- numbers ----

    @Property
    void aNumberIsStoredExactlyOrRefused(@ForAll("numbers") String text, @ForAll("numberRoutes") String route)
            throws Exception {
        boolean query = route.endsWith("q");
        boolean amount = route.startsWith("amount");
        Model m = model(text, query ? DECIMAL : JSON_NUMBER);
        Expect expect = m.expect(amount ? 12 : 131072, amount ? 2 : 16383);
        String column = amount ? "amount" : "num";
        write(route, query ? text : "{\"val\": " + text + "}", expect, () -> {
            String stored = value(column);
            assertEquals(0, m.value().compareTo(new BigDecimal(stored)), text + " was stored as " + shorten(stored));
        });
    }

    @Property
    void aWholeNumberIsStoredExactlyOrRefused(@ForAll("integers") String text, @ForAll boolean query)
            throws Exception {
        Model m = model(text, query ? INTEGER : JSON_NUMBER);
        Expect expect = m.value() == null ? m.expect(0, 0)
                : m.value().signum() != 0 && m.fraction() > 0 ? Expect.REFUSED
                : m.expect(19, 0) == Expect.REFUSED ? Expect.REFUSED
                : m.value().compareTo(BigDecimal.valueOf(Long.MAX_VALUE)) > 0
                || m.value().compareTo(BigDecimal.valueOf(Long.MIN_VALUE)) < 0 ? Expect.REFUSED : Expect.STORED;
        write(query ? "intq" : "int", query ? text : "{\"val\": " + text + "}", expect,
                () -> assertEquals(0, m.value().compareTo(new BigDecimal(value("n"))), text));
    }

    /** The text of a number: a sign, digits, a point, digits, an exponent from the edges, or a near miss. */
    @Provide
    Arbitrary<String> numbers() {
        Arbitrary<String> digits = Arbitraries.oneOf(Arbitraries.strings().numeric().ofMinLength(1).ofMaxLength(40),
                Arbitraries.of("0", "1", "9", "00", "007", "10", "100", "5", "999999999999", "1000000000000"));
        Arbitrary<String> exponents = Arbitraries.oneOf(
                Arbitraries.of(0L, 1L, 2L, 12L, 13L, 16382L, 16383L, 16384L, 16385L, 131070L, 131071L, 131072L,
                        131073L, 1000000000L, 2147483646L, 2147483647L, 2147483648L, 2147483649L, 4294967296L,
                        99999999999L).flatMap(e -> Arbitraries.of(e, -e)),
                Arbitraries.longs().between(-140000, 140000))
                .flatMap(e -> Arbitraries.of("e", "E", "e+", "E-").map(mark -> mark.endsWith("-") && e >= 0
                        ? "E-" + e : mark.endsWith("+") && e >= 0 ? "e+" + e : (mark.length() > 1 ? mark.substring(0, 1)
                        : mark) + e));
        Arbitrary<String> composed = Combinators.combine(Arbitraries.of("", "", "-", "+"), digits,
                Arbitraries.oneOf(Arbitraries.just(""), digits.map(d -> "." + d), Arbitraries.of(".", ".0", ".00")),
                Arbitraries.oneOf(Arbitraries.just(""), exponents))
                .as((sign, whole, fraction, exponent) -> sign + whole + fraction + exponent);
        Arbitrary<String> nearMisses = Arbitraries.of("NaN", "nan", "-NaN", "Infinity", "-Infinity", "+Infinity",
                "inf", "-inf", "Inf", "1e", "e1", "--1", "1..2", "1.2.3", ".5", "5.", "-.5", "\u0661\u0662",
                "\uff11", " 1", "1 ", "0x1f", "1_000", "", "1e+", "1e-", "١", "1d", "1f", "0b1", "1,5", "\"1\"",
                "1e0x1", "+", "-", ".", "00.5", "-0", "0.0e-1000000000", "1.0e-16384", "1e-16383", "1e131071");
        return Arbitraries.frequencyOf(Tuple.of(8, composed), Tuple.of(2, nearMisses));
    }

    @Provide
    Arbitrary<String> integers() {
        return Arbitraries.oneOf(numbers(), Arbitraries.longs().map(l -> Long.toString(l)),
                Arbitraries.of("9223372036854775807", "9223372036854775808", "-9223372036854775808",
                        "-9223372036854775809", "18446744073709551616", "1e18", "1e19", "9.223372036854775807e18",
                        "1.0", "1.5", "-0", "0e-1000000000", "1e-1000000000", "1e2147483647", "00", "+1"));
    }

    @Provide
    Arbitrary<String> numberRoutes() {
        return Arbitraries.of("num", "numq", "amount", "amountq");
    }

    /**
     * The model of a number's text: its value (null when the grammar refuses it, or Java's decimal cannot hold its
     * exponent) and the decimal digits of that value before and after the point, counted on the digits.
     */
    record Model(BigDecimal value, long integer, long fraction, boolean parses) {
        /** Stored when the digits fit, refused otherwise; a zero too large for Java's exponent: either. */
        Expect expect(long maxInteger, long maxFraction) {
            if (!parses) {
                return Expect.REFUSED;
            }
            if (value == null) {
                return integer == 0 && fraction == 0 ? Expect.EITHER : Expect.REFUSED;
            }
            return integer <= maxInteger && fraction <= maxFraction ? Expect.STORED : Expect.REFUSED;
        }
    }

    static Model model(String sent, Pattern grammar) {
        // around a number in a JSON body, JSON's whitespace is no part of it
        String text = grammar == JSON_NUMBER ? sent.replaceAll("^[ \t\r\n]+|[ \t\r\n]+$", "") : sent;
        Matcher g = grammar.matcher(text);
        if (text.length() > 1000 || !g.matches()) {
            return new Model(null, 0, 0, false);
        }
        Matcher m = Pattern.compile("[+-]?([0-9]*)(?:\\.([0-9]*))?(?:[eE]([+-]?[0-9]+))?").matcher(text);
        assertTrue(m.matches(), text);
        String whole = m.group(1);
        String fraction = m.group(2) == null ? "" : m.group(2);
        if (whole.isEmpty() && fraction.isEmpty()) {
            return new Model(null, 0, 0, false);
        }
        BigInteger exponent = m.group(3) == null ? BigInteger.ZERO : new BigInteger(m.group(3));
        String digits = (whole + fraction).replaceFirst("^0+", "");
        BigInteger scale = BigInteger.valueOf(fraction.length()).subtract(exponent);
        if (digits.isEmpty()) { // zero
            boolean fits = scale.bitLength() < 32;
            return new Model(fits ? BigDecimal.ZERO : null, 0, 0, true);
        }
        int trailing = digits.length() - digits.replaceFirst("0+$", "").length();
        // value = significant * 10^power
        BigInteger power = exponent.subtract(BigInteger.valueOf(fraction.length())).add(BigInteger.valueOf(trailing));
        long significant = digits.length() - trailing;
        BigInteger before = BigInteger.valueOf(significant).add(power).max(BigInteger.ZERO);
        BigInteger after = power.negate().max(BigInteger.ZERO);
        long cap = Long.MAX_VALUE / 2;
        long b = before.min(BigInteger.valueOf(cap)).longValueExact();
        long a = after.min(BigInteger.valueOf(cap)).longValueExact();
        BigDecimal value = scale.bitLength() < 32
                ? new BigDecimal(new BigInteger((text.startsWith("-") ? "-" : "") + whole + fraction), scale.intValue())
                : null;
        return new Model(value, b, a, true);
    }

    // ---- strings ----

    @Property
    void aStringIsStoredExactlyOrRefused(@ForAll("strings") String s, @ForAll("stringRoutes") String route)
            throws Exception {
        boolean wellFormed = wellFormed(s);
        Expect expect = !wellFormed || s.indexOf('\u0000') >= 0 ? Expect.REFUSED : Expect.STORED;
        String sent = switch (route) {
            case "str" -> "{\"val\": " + escaped(s) + "}";
            case "str-raw" -> "{\"val\": \"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"}";
            default -> s;
        };
        if (route.equals("str-raw") && s.chars().anyMatch(c -> c < 0x20)) {
            expect = Expect.REFUSED; // a control character is not JSON unescaped
        }
        write(route.equals("str-raw") ? "str" : route, sent, expect, () -> assertEquals(s, value("s"),
                "stored differently"));
    }

    /** Strings of the characters encoders get wrong: NUL, controls, lone and paired surrogates, BOM, U+FFFD. */
    @Provide
    Arbitrary<String> strings() {
        Arbitrary<String> unit = Arbitraries.oneOf(
                Arbitraries.strings().withCharRange(' ', '~').ofMinLength(1).ofMaxLength(5),
                Arbitraries.of("\u0000", "\t", "\n", "\r", "\u0001", "\u001f", "\u007f", "\"", "\\", "+", "%", "&",
                        "=", "#", "?", "/", " "),
                Arbitraries.of("\u00e9", "\u0080", "\u00ff", "\u4e2d", "\ufffd", "\ufeff", "\uffff", "\ufffe",
                        "\u2028", "\u0301", "\ud7ff", "\ue000"),
                Arbitraries.of("\ud83d\ude00", "\udbff\udfff", "\ud800\udc00"),
                Arbitraries.of("\ud800", "\udbff", "\ud83d", "\udc00", "\udfff", "\ude00"));
        return unit.list().ofMaxSize(6).map(l -> String.join("", l));
    }

    @Provide
    Arbitrary<String> stringRoutes() {
        return Arbitraries.of("str", "str-raw", "strq", "text");
    }

    // ---- JSON ----

    @Property
    void aJsonValueIsStoredExactlyOrRefused(@ForAll("jsonValues") Object value, @ForAll boolean query)
            throws Exception {
        // a body field set to null is SQL NULL, which val is not; the query's text null is the JSON value null
        Expect expect = value == Json.NULL && !query ? Expect.REFUSED : expect(value);
        String text = render(value);
        write(query ? "jsonq" : "json", query ? text : "{\"val\": " + text + "}", expect, () -> {
            Object stored = parseLarge(value("j"));
            assertTrue(same(value, stored), text + " was stored as " + shorten(value("j")));
        });
    }

    /**
     * Zeros and numbers at the bounds of numeric's exponent and scale, every time: a CI run's random draw once met
     * {@code 0e2147483646}, which the proxy wrote on as {@code 0E+2147483646} and PostgreSQL refused (a 400 that
     * named no parameter) where the value is a plain 0.
     */
    @Example
    void jsonNumbersAtTheExponentBoundOfNumeric() throws Exception {
        for (String n : List.of("0e2147483646", "0e-1073741823", "1E1073741823", "0e1073741822", "0e-1073741822",
                "0e-16383", "0e-16384", "0.0e-16383", "-0.5e-16382")) {
            for (boolean query : List.of(true, false)) {
                aJsonValueIsStoredExactlyOrRefused(new Json.Num(n), query);
            }
        }
    }

    /** A JSON value: a tree of the strings and numbers above; a duplicate key now and then. */
    @Provide
    Arbitrary<Object> jsonValues() {
        Arbitrary<Object> number = numbers().filter(t -> JSON_NUMBER.matcher(t).matches()).map(Json.Num::new);
        Arbitrary<Object> leaf = Arbitraries.oneOf(strings().map(s -> (Object) s), number,
                Arbitraries.of(Boolean.TRUE, Boolean.FALSE, Json.NULL));
        return tree(leaf, 3);
    }

    private Arbitrary<Object> tree(Arbitrary<Object> leaf, int depth) {
        if (depth == 0) {
            return leaf;
        }
        Arbitrary<Object> child = tree(leaf, depth - 1);
        Arbitrary<Object> list = child.list().ofMaxSize(3).map(l -> (Object) l);
        Arbitrary<Object> object = Combinators.combine(strings().list().ofMaxSize(3), child.list().ofSize(3),
                Arbitraries.integers().between(0, 9)).as((keys, values, dup) -> {
                    List<Map.Entry<String, Object>> entries = new ArrayList<>();
                    List<String> seen = new ArrayList<>();
                    for (int k = 0; k < keys.size(); k++) {
                        if (!seen.contains(keys.get(k))) {
                            seen.add(keys.get(k));
                            entries.add(Map.entry(keys.get(k), values.get(k)));
                        }
                    }
                    if (dup == 0 && !entries.isEmpty()) {
                        entries.add(Map.entry(entries.getFirst().getKey(), values.get(2)));
                    }
                    return new Json.Obj(entries);
                });
        return Arbitraries.frequencyOf(Tuple.of(3, leaf), Tuple.of(1, list),
                Tuple.of(2, object));
    }

    /** The JSON model: numbers keep their text, objects their entries in order (duplicates included). */
    sealed interface Json {
        Object NULL = new Object() {
            @Override
            public String toString() {
                return "null";
            }
        };

        record Num(String text) implements Json {
        }

        record Obj(List<Map.Entry<String, Object>> entries) implements Json {
        }
    }

    private static Expect expect(Object v) {
        return switch (v) {
            case String s -> wellFormed(s) && s.indexOf('\u0000') < 0 ? Expect.STORED : Expect.REFUSED;
            case Json.Num n -> model(n.text(), JSON_NUMBER).expect(131072, 16383);
            case List<?> l -> l.stream().map(PostgresExactValuesPropertyIT::expect).reduce(Expect.STORED,
                    PostgresExactValuesPropertyIT::worst);
            case Json.Obj o -> {
                Expect e = o.entries().stream().map(Map.Entry::getKey).distinct().count() < o.entries().size()
                        ? Expect.REFUSED : Expect.STORED;
                for (Map.Entry<String, Object> entry : o.entries()) {
                    e = worst(worst(e, expect(entry.getKey())), expect(entry.getValue()));
                }
                yield e;
            }
            default -> Expect.STORED;
        };
    }

    private static Expect worst(Expect a, Expect b) {
        return a == Expect.REFUSED || b == Expect.REFUSED ? Expect.REFUSED
                : a == Expect.EITHER || b == Expect.EITHER ? Expect.EITHER : Expect.STORED;
    }

    private static String render(Object v) {
        return switch (v) {
            case String s -> escaped(s);
            case Json.Num n -> n.text();
            case List<?> l -> "[" + String.join(", ", l.stream().map(PostgresExactValuesPropertyIT::render).toList())
                    + "]";
            case Json.Obj o -> "{" + String.join(", ", o.entries().stream().map(e -> escaped(e.getKey()) + ": "
                    + render(e.getValue())).toList()) + "}";
            default -> v.toString();
        };
    }

    /** Whether what jsonb gave back is the value sent: numbers by value, objects by their (distinct) keys. */
    private static boolean same(Object sent, Object stored) {
        return switch (sent) {
            case Json.Num n -> stored instanceof BigDecimal d && new BigDecimal(n.text()).compareTo(d) == 0;
            case List<?> l -> stored instanceof List<?> s && s.size() == l.size()
                    && IntStream.range(0, l.size()).allMatch(k -> same(l.get(k), s.get(k)));
            case Json.Obj o -> stored instanceof Map<?, ?> m && m.size() == o.entries().size()
                    && o.entries().stream().allMatch(e -> m.containsKey(e.getKey())
                    && same(e.getValue(), m.get(e.getKey())));
            default -> Objects.equals(sent == Json.NULL ? null : sent, stored);
        };
    }

    private static Object parseLarge(String text) throws Exception {
        try (JsonParser p = LARGE.createParser(text)) {
            return readLarge(p, p.nextToken());
        }
    }

    private static Object readLarge(JsonParser p, JsonToken t) throws Exception {
        return switch (t) {
            case START_OBJECT -> {
                Map<String, Object> m = new LinkedHashMap<>();
                for (JsonToken k = p.nextToken(); k != JsonToken.END_OBJECT; k = p.nextToken()) {
                    String name = p.currentName();
                    m.put(name, readLarge(p, p.nextToken()));
                }
                yield m;
            }
            case START_ARRAY -> {
                List<Object> l = new ArrayList<>();
                for (JsonToken e = p.nextToken(); e != JsonToken.END_ARRAY; e = p.nextToken()) {
                    l.add(readLarge(p, e));
                }
                yield l;
            }
            case VALUE_STRING -> p.getText();
            case VALUE_NUMBER_INT, VALUE_NUMBER_FLOAT -> new BigDecimal(p.getText());
            case VALUE_TRUE -> Boolean.TRUE;
            case VALUE_FALSE -> Boolean.FALSE;
            default -> null;
        };
    }

    // ---- one write ----

    /** A check of what was stored, run when the write answered 200. */
    interface Stored {
        void check() throws Exception;
    }

    /**
     * Sends {@code sent} to {@code route} (the body, or the query parameter {@code val} of a route ending in
     * {@code q}) with a token above the fence; 200 must have stored it (and moved the fence), 400 must name the
     * parameter and leave the row and fence as they were.
     */
    private static void write(String route, String sent, Expect expect, Stored check) throws Exception {
        List<String> before = snapshot();
        long token = Long.parseLong(before.get(1).isEmpty() ? "0" : before.get(1)) + 1;
        Http.Response r;
        Map<String, String> headers = Map.of("Fencing-Token", Long.toString(token));
        if (route.endsWith("q")) {
            r = Http.put(proxy.uri("/" + route + "/r?val=" + percentEncoded(sent)), "", headers);
        } else {
            r = Http.send("PUT", proxy.uri("/" + route + "/r"), HttpRequest.BodyPublishers.ofByteArray(utf8(sent)),
                    headers);
        }
        Statistics.collect(route, r.status()); // both answers must come up: the report shows how often
        String what = route + " " + escapedForMessage(sent) + " (expected " + expect + ") -> " + r.status() + " "
                + r.body();
        if (r.status() == 200) {
            assertNotEquals(Expect.REFUSED, expect, what);
            check.check();
            assertEquals(Long.toString(token), snapshot().get(1), what + ": the fence did not move");
        } else if (r.status() == 400) {
            assertNotEquals(Expect.STORED, expect, what);
            assertTrue(r.body().contains("bad-parameter") && r.body().contains("\"parameter\":\"val\""), what);
            assertEquals(before, snapshot(), what + ": the row or the fence changed");
        } else {
            fail(what);
        }
    }

    /** The row as PostgreSQL prints it, and its fence token ("" when none yet) and whole fence row. */
    private static List<String> snapshot() throws SQLException {
        return List.of(single("SELECT v::text FROM vals v WHERE id = 'r'"),
                single("SELECT coalesce((SELECT token::text FROM stockade_fences WHERE scope = 'vals/r'), '')"),
                single("SELECT coalesce((SELECT f::text FROM stockade_fences f WHERE scope = 'vals/r'), '')"));
    }

    private static String value(String column) throws SQLException {
        return single("SELECT " + column + "::text FROM vals WHERE id = 'r'");
    }

    private static String single(String sql) throws SQLException {
        try (PreparedStatement ps = look.prepareStatement(sql); ResultSet r = ps.executeQuery()) {
            assertTrue(r.next(), sql);
            return r.getString(1);
        }
    }

    // ---- encodings ----

    /** Whether every surrogate in {@code s} is half of a pair. */
    static boolean wellFormed(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return false;
            }
        }
        return true;
    }

    /** A JSON string literal with every character outside printable ASCII as a backslash-u escape. */
    static String escaped(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c >= ' ' && c <= '~') {
                b.append(c);
            } else {
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            }
        }
        return b.append('"').toString();
    }

    /**
     * UTF-8, except that a lone surrogate is written as UTF-8 would write its code point (ED A0 80 for U+D800),
     * which is not valid UTF-8: what a client with a lenient encoder sends.
     */
    static byte[] utf8(String s) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                out.writeBytes(s.substring(i, i + 2).getBytes(StandardCharsets.UTF_8));
                i++;
            } else if (Character.isSurrogate(c)) {
                out.write(0xE0 | c >> 12);
                out.write(0x80 | c >> 6 & 0x3F);
                out.write(0x80 | c & 0x3F);
            } else {
                out.writeBytes(String.valueOf(c).getBytes(StandardCharsets.UTF_8));
            }
        }
        return out.toByteArray();
    }

    /** Every byte of {@link #utf8} but unreserved ASCII as %HH. */
    static String percentEncoded(String s) {
        StringBuilder b = new StringBuilder();
        for (byte x : utf8(s)) {
            int c = x & 0xFF;
            if (c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '.'
                    || c == '_' || c == '~') {
                b.append((char) c);
            } else {
                b.append('%').append(String.format(Locale.ROOT, "%02X", c));
            }
        }
        return b.toString();
    }

    private static String escapedForMessage(String s) {
        return shorten(escaped(s));
    }

    private static String shorten(String s) {
        return s == null || s.length() <= 200 ? s : s.substring(0, 100) + "...(" + s.length() + " chars)";
    }
}
