package io.stockade.proxy.backend.s3;

import java.math.BigDecimal;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.format.DateTimeParseException;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * The policy document of a browser-form upload (S3's POST Object): its expiration and conditions, judged against
 * the form's fields as S3 judges them.
 * <ul>
 *   <li>{@code {"field": "value"}} and {@code ["eq", "$field", "value"]}: the field must have exactly that value;</li>
 *   <li>{@code ["starts-with", "$field", "prefix"]}: the field must start with it ({@code ""}: any value);</li>
 *   <li>{@code ["content-length-range", min, max]}: the file's size in bytes;</li>
 *   <li>every field of the form must be named by a condition, except the signature's own fields, {@code policy},
 *   {@code file} and {@code x-ignore-*}; and every condition's field must be in the form. Field names compare
 *   case-insensitively; {@code bucket} is the bucket the form is posted to.</li>
 * </ul>
 * Errors carry S3's codes: a document that cannot be read is 400 {@code InvalidPolicyDocument}, a form it does not
 * allow 403 {@code AccessDenied} ("Invalid according to Policy: ...").
 */
final class PostPolicy {
    /** Fields no condition needs to name. */
    private static final Set<String> EXEMPT = Set.of("x-amz-signature", "signature", "awsaccesskeyid", "policy",
            "file");

    private record Condition(String op, String field, String value, Object original) {
    }

    private final Instant expiration;
    private final List<Condition> conditions;
    private final long minLength;
    private final long maxLength;

    private PostPolicy(Instant expiration, List<Condition> conditions, long minLength, long maxLength) {
        this.expiration = expiration;
        this.conditions = conditions;
        this.minLength = minLength;
        this.maxLength = maxLength;
    }

    /** Reads the base64 policy field. */
    static PostPolicy parse(String base64) throws S3Refused {
        Object document;
        try {
            byte[] json = Base64.getMimeDecoder().decode(base64.trim());
            document = new Json(new String(json, StandardCharsets.UTF_8)).document();
        } catch (IllegalArgumentException e) {
            throw invalid("Invalid JSON.");
        }
        if (!(document instanceof Map<?, ?> map)) {
            throw invalid("Invalid JSON.");
        }
        Object exp = map.get("expiration");
        if (exp == null) {
            throw invalid("Policy missing expiration.");
        }
        Instant expiration;
        try {
            expiration = Instant.parse(String.valueOf(exp));
        } catch (DateTimeParseException e) {
            throw invalid("Invalid 'expiration' value: '" + exp + "'");
        }
        Object list = map.get("conditions");
        if (list == null) {
            throw invalid("Policy missing conditions.");
        }
        if (!(list instanceof List<?> items)) {
            throw invalid("Invalid Policy: conditions must be a list.");
        }
        List<Condition> conditions = new ArrayList<>();
        long min = 0;
        long max = Long.MAX_VALUE;
        for (Object item : items) {
            if (item instanceof Map<?, ?> exact) {
                if (exact.size() != 1) {
                    throw invalid("Invalid Condition: an exact-match condition names one field: " + Json.write(item));
                }
                Map.Entry<?, ?> e = exact.entrySet().iterator().next();
                if (!(e.getValue() instanceof String value)) {
                    throw invalid("Invalid Condition: " + Json.write(item));
                }
                conditions.add(new Condition("eq", name(String.valueOf(e.getKey())), value, item));
            } else if (item instanceof List<?> tuple && !tuple.isEmpty() && tuple.get(0) instanceof String op) {
                switch (op.toLowerCase(Locale.ROOT)) {
                    case "eq", "starts-with" -> {
                        if (tuple.size() != 3 || !(tuple.get(1) instanceof String f) || !f.startsWith("$")
                                || !(tuple.get(2) instanceof String value)) {
                            throw invalid("Invalid Condition: " + Json.write(item));
                        }
                        conditions.add(new Condition(op.toLowerCase(Locale.ROOT), name(f.substring(1)), value, item));
                    }
                    case "content-length-range" -> {
                        if (tuple.size() != 3 || !(tuple.get(1) instanceof BigDecimal lo)
                                || !(tuple.get(2) instanceof BigDecimal hi) || lo.signum() < 0 || hi.signum() < 0
                                || lo.compareTo(hi) > 0) {
                            throw invalid("Invalid content-length-range: " + Json.write(item));
                        }
                        min = Math.max(min, lo.longValue());
                        max = Math.min(max, hi.min(BigDecimal.valueOf(Long.MAX_VALUE)).longValue());
                    }
                    default -> throw invalid("Invalid Condition: " + Json.write(item));
                }
            } else {
                throw invalid("Invalid Condition: " + Json.write(item));
            }
        }
        return new PostPolicy(expiration, List.copyOf(conditions), min, max);
    }

    private static String name(String field) {
        return field.toLowerCase(Locale.ROOT);
    }

    private static S3Refused invalid(String why) {
        return new S3Refused(400, "InvalidPolicyDocument", "Invalid Policy: " + why);
    }

    private static S3Refused denied(String why) {
        return new S3Refused(403, "AccessDenied", "Invalid according to Policy: " + why);
    }

    /**
     * Judges the form against the policy.
     *
     * @param fields the form's fields by lower-case name (the key with {@code ${filename}} already filled in), plus
     *               {@code bucket}
     */
    void check(Map<String, String> fields, Instant now) throws S3Refused {
        if (!now.isBefore(expiration)) {
            throw denied("Policy expired.");
        }
        for (Condition c : conditions) {
            String value = fields.get(c.field());
            boolean holds = value != null && (c.op().equals("eq") ? value.equals(c.value())
                    : value.startsWith(c.value()));
            if (!holds) {
                throw denied("Policy Condition failed: " + Json.write(c.original()));
            }
        }
        List<String> extra = new ArrayList<>();
        for (String field : fields.keySet()) {
            if (!EXEMPT.contains(field) && !field.startsWith("x-ignore-")
                    && conditions.stream().noneMatch(c -> c.field().equals(field))) {
                extra.add(field);
            }
        }
        if (!extra.isEmpty()) {
            throw denied("Extra input fields: " + String.join(", ", extra));
        }
    }

    /** The smallest file the policy allows (0 without a content-length-range). */
    long minLength() {
        return minLength;
    }

    /** The largest file the policy allows ({@code Long.MAX_VALUE} without a content-length-range). */
    long maxLength() {
        return maxLength;
    }

    /** Just enough JSON for a policy document: objects, arrays, strings, numbers, true, false, null. */
    static final class Json {
        private final String text;
        private int at;

        Json(String text) {
            this.text = text;
        }

        /** The document's value; null for the JSON {@code null}. */
        @Nullable Object document() {
            Object value = value();
            space();
            if (at != text.length()) {
                throw new IllegalArgumentException("trailing characters");
            }
            return value;
        }

        private @Nullable Object value() {
            space();
            if (at >= text.length()) {
                throw new IllegalArgumentException("unexpected end");
            }
            char c = text.charAt(at);
            switch (c) {
                case '{' -> {
                    at++;
                    Map<String, Object> map = new LinkedHashMap<>();
                    space();
                    if (peek('}')) {
                        return map;
                    }
                    do {
                        space();
                        String key = string();
                        space();
                        expect(':');
                        map.put(key, value());
                        space();
                    } while (next(','));
                    expect('}');
                    return map;
                }
                case '[' -> {
                    at++;
                    List<Object> list = new ArrayList<>();
                    space();
                    if (peek(']')) {
                        return list;
                    }
                    do {
                        list.add(value());
                        space();
                    } while (next(','));
                    expect(']');
                    return list;
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    for (String word : new String[]{"true", "false", "null"}) {
                        if (text.startsWith(word, at)) {
                            at += word.length();
                            return word.equals("null") ? null : Boolean.valueOf(word);
                        }
                    }
                    int start = at;
                    while (at < text.length() && "+-0123456789.eE".indexOf(text.charAt(at)) >= 0) {
                        at++;
                    }
                    if (start == at) {
                        throw new IllegalArgumentException("unexpected '" + c + "'");
                    }
                    try {
                        return new BigDecimal(text.substring(start, at));
                    } catch (NumberFormatException e) {
                        throw new IllegalArgumentException("bad number");
                    }
                }
            }
        }

        private String string() {
            expect('"');
            StringBuilder b = new StringBuilder();
            while (true) {
                if (at >= text.length()) {
                    throw new IllegalArgumentException("unterminated string");
                }
                char c = text.charAt(at++);
                if (c == '"') {
                    return b.toString();
                }
                if (c == '\\') {
                    if (at >= text.length()) {
                        throw new IllegalArgumentException("unterminated escape");
                    }
                    char e = text.charAt(at++);
                    switch (e) {
                        case '"', '\\', '/' -> b.append(e);
                        case 'b' -> b.append('\b');
                        case 'f' -> b.append('\f');
                        case 'n' -> b.append('\n');
                        case 'r' -> b.append('\r');
                        case 't' -> b.append('\t');
                        case 'u' -> {
                            if (at + 4 > text.length()) {
                                throw new IllegalArgumentException("bad \\u escape");
                            }
                            b.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                            at += 4;
                        }
                        default -> throw new IllegalArgumentException("bad escape");
                    }
                } else {
                    b.append(c);
                }
            }
        }

        private void space() {
            while (at < text.length() && Character.isWhitespace(text.charAt(at))) {
                at++;
            }
        }

        private boolean peek(char c) {
            if (at < text.length() && text.charAt(at) == c) {
                at++;
                return true;
            }
            return false;
        }

        private boolean next(char c) {
            return peek(c);
        }

        private void expect(char c) {
            if (!peek(c)) {
                throw new IllegalArgumentException("expected '" + c + "'");
            }
        }

        /** A condition as S3 quotes it in its answers. */
        static String write(@Nullable Object value) {
            if (value instanceof String s) {
                return "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
            }
            if (value instanceof List<?> list) {
                List<String> parts = new ArrayList<>();
                list.forEach(v -> parts.add(write(v)));
                return "[" + String.join(", ", parts) + "]";
            }
            if (value instanceof Map<?, ?> map) {
                List<String> parts = new ArrayList<>();
                map.forEach((k, v) -> parts.add(write(String.valueOf(k)) + ": " + write(v)));
                return "{" + String.join(", ", parts) + "}";
            }
            return String.valueOf(value);
        }
    }
}
