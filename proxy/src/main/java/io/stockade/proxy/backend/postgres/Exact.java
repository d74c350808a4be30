package io.stockade.proxy.backend.postgres;

import java.io.ByteArrayOutputStream;
import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetDecoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.BackendConfig.Digits;
import io.stockade.proxy.json.JsonWriter;

import org.jspecify.annotations.Nullable;

/**
 * What PostgreSQL stores exactly as a client sent it, and why a value would not be: every value a parameter binds
 * is checked here before anything runs, so that it is stored as sent or refused (400), never changed on the way.
 * <ul>
 *   <li>A number: {@code numeric} holds at most {@value #NUMERIC_INTEGER_DIGITS} digits before the point and
 *   {@value #NUMERIC_SCALE} after it (pgjdbc's binary encoding folded larger exponents: 1e131072 was stored as 0);
 *   with a parameter's {@code precision}/{@code scale}, what the column holds (PostgreSQL would round 1.005 into
 *   {@code numeric(14, 2)}). Checked on the value's unscaled digits and scale, never by writing it out: 1e-1000000000
 *   is eleven characters and would be a billion digits.</li>
 *   <li>Text: no U+0000 (PostgreSQL text cannot hold it, nor jsonb a {@code \u0000}) and no lone surrogate (not a
 *   Unicode character; pgjdbc's UTF-8 encoder turned it into {@code ?}).</li>
 *   <li>Bytes: a body or a query value must be valid UTF-8 (a lenient decoder turns a bad byte into U+FFFD).</li>
 * </ul>
 * Each check answers null when the value can be stored as sent, or what is wrong and what to do.
 */
final class Exact {
    /** The most digits before the point a PostgreSQL {@code numeric} holds. */
    static final int NUMERIC_INTEGER_DIGITS = 131072;
    /** The most digits after the point a PostgreSQL {@code numeric} holds (its display scale). */
    static final int NUMERIC_SCALE = 16383;
    /**
     * The longest number text read (as the JSON reader's own limit): a longer one is refused before it is parsed,
     * which costs time growing with the square of its length.
     */
    static final int MAX_NUMBER_TEXT = 1000;

    private Exact() {
    }

    /** Digits before the point of {@code d}'s value, computed without writing it out. */
    static long integerDigits(BigDecimal d) {
        return d.signum() == 0 ? 0 : Math.max(0, (long) d.precision() - d.scale());
    }

    /**
     * Digits after the point of {@code d}'s value, trailing zeros not counted. Call it only once
     * {@link #integerDigits} was found bounded (stripping zeros from 1e2147483647 would overflow its scale).
     */
    static long fractionDigits(BigDecimal d) {
        return d.signum() == 0 || d.scale() <= 0 ? 0 : Math.max(0, d.stripTrailingZeros().scale());
    }

    /**
     * Why {@code d} cannot be bound exactly: more digits than PostgreSQL's {@code numeric} holds, or than the
     * parameter's {@code numeric(precision, scale)}; null when it can.
     */
    static @Nullable String number(BigDecimal d, Optional<Digits> digits) {
        long before = integerDigits(d);
        if (digits.isPresent()) {
            Digits n = digits.get();
            if (before > n.integerDigits()) {
                return shown(d) + " has " + before + " digit" + (before == 1 ? "" : "s") + " before the point, and"
                        + " the parameter's " + n + " holds at most " + n.integerDigits() + ": send a smaller value";
            }
            long after = fractionDigits(d);
            if (after > n.scale()) {
                return shown(d) + " has " + after + " digit" + (after == 1 ? "" : "s") + " after the point, and"
                        + " the parameter's " + n + " holds " + n.scale() + " (PostgreSQL would round it without a"
                        + " word): round it to " + n.scale() + " digit" + (n.scale() == 1 ? "" : "s")
                        + " after the point before sending";
            }
            return null;
        }
        if (before > NUMERIC_INTEGER_DIGITS) {
            return shown(d) + " has " + before + " digits before the point; PostgreSQL's numeric holds at most "
                    + NUMERIC_INTEGER_DIGITS + ": send a smaller value";
        }
        long after = fractionDigits(d);
        if (after > NUMERIC_SCALE) {
            return shown(d) + " has " + after + " digits after the point; PostgreSQL's numeric holds at most "
                    + NUMERIC_SCALE + ": round it before sending";
        }
        return null;
    }

    /**
     * {@code d}, checked by {@link #number}, in a form PostgreSQL's {@code numeric} takes as it is: trailing zeros
     * past {@value #NUMERIC_SCALE} digits after the point dropped (the value is the same), a negative scale made 0.
     */
    static BigDecimal bindable(BigDecimal d) {
        BigDecimal v = d;
        if (v.scale() > NUMERIC_SCALE) {
            v = v.stripTrailingZeros();
        }
        return v.scale() < 0 ? v.setScale(0) : v;
    }

    /** A number for a message: its shortest spelling, at most 40 characters. */
    static String shown(BigDecimal d) {
        String s = d.toString();
        return s.length() > 40 ? s.substring(0, 20) + "..." + s.substring(s.length() - 12) : s;
    }

    /**
     * A number's text (a path variable, a query parameter, the body) as an exact decimal: plain ASCII digits, an
     * optional sign, point and exponent, at most {@value #MAX_NUMBER_TEXT} characters. NaN and the infinities are
     * not numbers a {@code numeric} column should take from a client; {@link BigDecimal} would take other scripts'
     * digits.
     *
     * @throws NumberFormatException saying what is wrong
     */
    static BigDecimal parseNumber(String text) {
        if (text.length() > MAX_NUMBER_TEXT) {
            throw new NumberFormatException("a number of more than " + MAX_NUMBER_TEXT + " characters");
        }
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (!((c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E')) {
                throw new NumberFormatException("not a decimal number");
            }
        }
        try {
            return new BigDecimal(text);
        } catch (NumberFormatException e) {
            boolean exponent = text.matches("[+-]?([0-9]+\\.?[0-9]*|\\.[0-9]+)[eE][+-]?[0-9]+");
            throw new NumberFormatException(exponent ? "its exponent is out of any numeric's range"
                    : "not a decimal number");
        }
    }

    /**
     * A whole number's text as a bigint: plain ASCII digits with an optional sign.
     *
     * @throws NumberFormatException saying what is wrong
     */
    static long parseInteger(String text) {
        if (!text.matches("[+-]?[0-9]{1,1000}")) {
            throw new NumberFormatException("not a whole number");
        }
        try {
            return Long.parseLong(text);
        } catch (NumberFormatException e) {
            throw new NumberFormatException("out of bigint's range " + Long.MIN_VALUE + ".." + Long.MAX_VALUE);
        }
    }

    /** Why {@code s} cannot be stored as text exactly: a U+0000 or a lone surrogate in it; null when it can. */
    static @Nullable String text(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c == '\u0000') {
                return "holds the character U+0000 (at UTF-16 index " + i + "), which PostgreSQL text and jsonb"
                        + " cannot hold: remove it";
            }
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
            } else if (Character.isSurrogate(c)) {
                return "holds a lone surrogate U+" + String.format(Locale.ROOT, "%04X", (int) c) + " (at UTF-16"
                        + " index " + i + "), which is not a character and cannot be written in UTF-8: send the"
                        + " character itself, or both halves of its surrogate pair";
            }
        }
        return null;
    }

    /**
     * Why a parsed JSON value (a {@link JsonBody} result) cannot be stored exactly as jsonb: a string or a key that
     * {@link #text} refuses, or a number that {@link #number} refuses (jsonb keeps numbers as numeric); null when it
     * can. {@code at} is the value's JSON path for the message, e.g. {@code $} or {@code $.memo}.
     */
    static @Nullable String json(Object v, String at) {
        switch (v) {
            case Map<?, ?> m -> {
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    String key = (String) e.getKey();
                    String wrong = text(key);
                    if (wrong != null) {
                        return "a key in " + at + " " + wrong;
                    }
                    wrong = json(e.getValue(), at + (key.matches("[A-Za-z_][A-Za-z0-9_]*") ? "." + key
                            : "[" + JsonWriter.quote(key) + "]"));
                    if (wrong != null) {
                        return wrong;
                    }
                }
                return null;
            }
            case List<?> l -> {
                for (int k = 0; k < l.size(); k++) {
                    String wrong = json(l.get(k), at + "[" + k + "]");
                    if (wrong != null) {
                        return wrong;
                    }
                }
                return null;
            }
            case String s -> {
                String wrong = text(s);
                return wrong == null ? null : "the string at " + at + " " + wrong;
            }
            case BigDecimal d -> {
                String wrong = number(d, Optional.empty());
                return wrong == null ? null : "the number at " + at + ": " + wrong;
            }
            default -> {
                return null; // true, false, null
            }
        }
    }

    /**
     * Bytes as UTF-8 text, or null when they are not valid UTF-8 (a surrogate encoded in UTF-8 included).
     */
    static @Nullable String utf8(byte[] bytes) {
        CharsetDecoder utf8 = StandardCharsets.UTF_8.newDecoder()
                .onMalformedInput(CodingErrorAction.REPORT)
                .onUnmappableCharacter(CodingErrorAction.REPORT);
        try {
            CharBuffer text = utf8.decode(ByteBuffer.wrap(bytes));
            return text.toString();
        } catch (CharacterCodingException e) {
            return null;
        }
    }

    /**
     * A raw query value percent-decoded ({@code +} is a space, as in a form) into UTF-8 text; null when an escape
     * is malformed or the bytes are not valid UTF-8 (a lenient decoder would put U+FFFD in their place).
     */
    static @Nullable String queryValue(String raw) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(raw.length());
        for (int i = 0; i < raw.length(); i++) {
            char c = raw.charAt(i);
            if (c == '%') {
                int hi = i + 2 < raw.length() ? Character.digit(raw.charAt(i + 1), 16) : -1;
                int lo = hi < 0 ? -1 : Character.digit(raw.charAt(i + 2), 16);
                if (lo < 0 || raw.charAt(i + 1) > 'f' || raw.charAt(i + 2) > 'f') {
                    return null;
                }
                bytes.write(hi * 16 + lo);
                i += 2;
            } else if (c == '+') {
                bytes.write(' ');
            } else if (c >= 0x80) {
                return null; // a raw request target is ASCII
            } else {
                bytes.write(c);
            }
        }
        return utf8(bytes.toByteArray());
    }
}
