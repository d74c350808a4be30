package io.stockade.proxy.testing;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Combinators;

/**
 * A grammar of hostile request targets for the differential fuzzers: a few resources, each spelled in the ways
 * parsers disagree about (every character possibly percent-encoded, in either case, or twice; {@code +} for a
 * space; path parameters in any segment; dot-segments plain and encoded; empty segments and trailing slashes;
 * encoded slashes and backslashes; a query or fragment holding dot-segments; the absolute form; overlong and
 * Unicode segments). The resources are few on purpose, so that spellings of one resource collide, and tokens are
 * drawn from a small range, so that stale tokens are common.
 */
public final class TargetGrammar {
    private TargetGrammar() {
    }

    /** One generated request: method, the request target exactly as sent, and the token (null for none). */
    public record Attempt(String method, String target, Long token) {
        @Override
        public String toString() {
            return method + " " + target + (token == null ? "" : " (token " + token + ")");
        }
    }

    /** Names of resources; spellings of them are what the fuzzer varies. Includes characters that need care. */
    public static final List<String> NAMES = List.of("a", "b", "a b", "a+b", "x;y", "k:1", "é", "n%41", "dot.",
            "~t", "q?r", "h#i");

    /**
     * Attempts on {@code prefix} (the policy's literal path start, such as {@code /docs}) followed by one or two
     * segments.
     *
     * @param depth how many segments the policy's template takes after the prefix (1, or a greedy tail: 2)
     */
    public static Arbitrary<Attempt> attempts(String prefix, List<String> methods, int depth) {
        Arbitrary<List<String>> names = Arbitraries.of(NAMES).list().ofMinSize(1).ofMaxSize(depth);
        Arbitrary<String> target = Combinators.combine(names, Arbitraries.integers().between(0, 11),
                        Arbitraries.longs().between(0, Long.MAX_VALUE), Arbitraries.integers().between(0, 99))
                .as((segments, mutation, seed, where) -> spell(prefix, segments, mutation, seed, where));
        Arbitrary<Long> token = Arbitraries.frequencyOf(
                net.jqwik.api.Tuple.of(9, Arbitraries.longs().between(1, 12).map(Long::valueOf)),
                net.jqwik.api.Tuple.of(1, Arbitraries.just((Long) null)));
        return Combinators.combine(Arbitraries.of(methods), target, token).as(Attempt::new);
    }

    private static String spell(String prefix, List<String> segments, int mutation, long seed, int where) {
        java.util.Random random = new java.util.Random(seed);
        List<String> raw = new ArrayList<>();
        for (String s : segments) {
            raw.add(encode(s, random));
        }
        String query = "";
        int at = where % raw.size();
        switch (mutation) {
            case 0, 1, 2, 3 -> {
                // a plain (but randomly encoded) spelling: the common case
            }
            case 4 -> raw.set(at, raw.get(at) + ";" + pick(random, "p", "p=1", "", "w1"));
            case 5 -> raw.add(at, pick(random, ".", "..", "%2e", "%2E%2e", ".%2e", "x/.."));
            case 6 -> raw.set(at, raw.get(at) + pick(random, "/", "//", "%2F", "%2f..%2f", "%5C", "\\"));
            case 7 -> query = "?" + pick(random, "x=/../../a", "/../b", "/../../../../escaped", "..;/a", "%2F..%2Fa",
                    "", "a=1&b=/./c");
            case 8 -> query = pick(random, "#/../a", "#frag", "?x#y");
            case 9 -> raw.set(at, "é".repeat(1 + random.nextInt(200)));
            case 10 -> raw.set(at, encode(raw.get(at), random)); // double-encoded
            case 11 -> {
                return pick(random, "http://h", "https://h:1", "//h") + prefix + "/" + String.join("/", raw);
            }
            default -> throw new IllegalStateException();
        }
        return prefix + "/" + String.join("/", raw) + query;
    }

    /** Percent-encodes what must be, and each other character with some probability, in random hex case. */
    static String encode(String text, java.util.Random random) {
        StringBuilder out = new StringBuilder();
        for (byte b : text.getBytes(StandardCharsets.UTF_8)) {
            int c = b & 0xff;
            boolean plain = c < 128 && (Character.isLetterOrDigit(c) || "-._~!$&'()*+,=:@".indexOf(c) >= 0);
            if (plain && random.nextInt(5) != 0) {
                out.append((char) c);
            } else if (c == ' ' && random.nextInt(3) == 0) {
                out.append('+'); // a form-encoding habit: '+' for a space (a literal plus in a path)
            } else {
                String hex = String.format("%02X", c);
                out.append('%').append(random.nextBoolean() ? hex : hex.toLowerCase(Locale.ROOT));
            }
        }
        return out.toString();
    }

    private static String pick(java.util.Random random, String... options) {
        return options[random.nextInt(options.length)];
    }
}
