package io.stockade.proxy.token;

import java.util.List;

/**
 * Reads the fencing token of a request. Strict on purpose: a token is one header holding a decimal integer
 * 0..2^63-1, ASCII digits only, no sign, no spaces, no leading {@code +}. Anything else is malformed, because a
 * lenient parse is how two spellings of one token (or a token no lock service issued) slip through.
 */
public final class FencingToken {
    /** Digits in Long.MAX_VALUE; a longer digit string cannot be a token (leading zeros are refused too). */
    private static final int MAX_DIGITS = 19;

    private FencingToken() {
    }

    /** The result of reading the header: exactly one of present, missing or malformed. */
    public sealed interface Parsed {
    }

    /** A valid token. */
    public record Present(long value) implements Parsed {
    }

    /** No token header. */
    public record Missing() implements Parsed {
    }

    /**
     * The header is there but is not a token.
     *
     * @param reason what is wrong, for the problem body
     */
    public record Malformed(String reason) implements Parsed {
    }

    private static final Missing MISSING = new Missing();

    /**
     * Reads the token from all values of the token header (as received, one list entry per header line).
     *
     * @param header the header name, for messages
     * @param values every value the request carried for it
     */
    public static Parsed parse(String header, List<String> values) {
        if (values.isEmpty()) {
            return MISSING;
        }
        if (values.size() > 1) {
            return new Malformed("the request carries " + values.size() + " " + header
                    + " headers; send exactly one");
        }
        return parse(header, values.getFirst());
    }

    /** Reads one header value. */
    public static Parsed parse(String header, String value) {
        if (value.isEmpty()) {
            return new Malformed(header + " is empty; send a decimal integer 0.." + Long.MAX_VALUE);
        }
        if (value.length() > MAX_DIGITS) {
            return new Malformed(header + " has " + value.length() + " characters; a token is at most "
                    + MAX_DIGITS + " digits (0.." + Long.MAX_VALUE + ")");
        }
        long result = 0;
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if (c < '0' || c > '9') {
                return new Malformed(header + " must be ASCII digits only; found " + describe(c)
                        + " at position " + (i + 1));
            }
            int digit = c - '0';
            if (result > (Long.MAX_VALUE - digit) / 10) {
                return new Malformed(header + " is above the largest token " + Long.MAX_VALUE);
            }
            result = result * 10 + digit;
        }
        if (value.length() > 1 && value.charAt(0) == '0') {
            return new Malformed(header + " has a leading zero; write the token as plain decimal ("
                    + result + ")");
        }
        return new Present(result);
    }

    private static String describe(char c) {
        if (c >= 0x21 && c < 0x7f) {
            return "'" + c + "'";
        }
        return String.format("U+%04X", (int) c);
    }
}
