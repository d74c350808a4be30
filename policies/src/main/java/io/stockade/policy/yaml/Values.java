package io.stockade.policy.yaml;

import java.net.URI;
import java.net.URISyntaxException;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Collection;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import io.stockade.policy.Sizes;

/**
 * Conversions of scalar fields to typed values. Each reports a bad value at its position, naming what is
 * valid, and answers empty.
 */
final class Values {
    private static final Pattern SIZE = Pattern.compile("(\\d+)(KiB|MiB|GiB)?");
    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)");
    /**
     * The longest duration a policy file may give, for every duration key. Each is a timeout, a quarantine, a
     * cache lifetime or a clock skew on the request path, where a day is already far past any sensible value; and
     * a bound keeps every later conversion ({@code Duration.toNanos()}, deadlines as {@code nanoTime} sums) from
     * overflowing, which would otherwise throw on every request that uses the value.
     */
    static final Duration MAX_DURATION = Duration.ofHours(24);
    /** RFC 9110 token: one or more tchar. */
    private static final Pattern TOKEN = Pattern.compile("[!#$%&'*+\\-.^_`|~0-9A-Za-z]+");

    private Values() {
    }

    /**
     * An exception's message for a problem: the parsers here always give one; a library's exception without one
     * is named by its class instead of "null".
     */
    static String message(Exception e) {
        String message = e.getMessage();
        return message != null ? message : e.getClass().getSimpleName();
    }

    /** Whether every part was read; a part that was not has already been reported. */
    static boolean allPresent(Optional<?>... parts) {
        return Stream.of(parts).allMatch(Optional::isPresent);
    }

    /** Non-empty text. */
    static Optional<String> text(Field field) {
        return field.text().flatMap(text -> {
            if (text.isEmpty()) {
                field.error("must not be empty");
                return Optional.empty();
            }
            return Optional.of(text);
        });
    }

    /** Text matching {@code pattern}; {@code rule} says in words what that is. */
    static Optional<String> matching(Field field, Pattern pattern, String rule) {
        return field.text().flatMap(text -> {
            if (!pattern.matcher(text).matches()) {
                field.error("'" + text + "' " + rule);
                return Optional.empty();
            }
            return Optional.of(text);
        });
    }

    /** One of a fixed set of words, spelled exactly. */
    static Optional<String> keyword(Field field, String what, Collection<String> valid) {
        return field.text().flatMap(text -> {
            if (!valid.contains(text)) {
                field.error(Suggestions.unknown(what, text, valid));
                return Optional.empty();
            }
            return Optional.of(text);
        });
    }

    /** The value a word stands for. */
    static <T> Optional<T> keyword(Field field, String what, Map<String, T> valid) {
        return keyword(field, what, valid.keySet()).map(valid::get);
    }

    /** A whole number in {@code min..max}; {@code what} names it, e.g. "port number". */
    static Optional<Integer> integer(Field field, int min, int max, String what) {
        return field.text().flatMap(text -> {
            try {
                int value = Integer.parseInt(text);
                if (value >= min && value <= max) {
                    return Optional.of(value);
                }
            } catch (NumberFormatException notAnInt) {
                // reported below
            }
            field.error("expected a " + what + " " + min + ".." + max + ", got '" + text + "'");
            return Optional.empty();
        });
    }

    /** A whole number in {@code min..max} as a long; {@code what} names it. */
    static Optional<Long> longInteger(Field field, long min, long max, String what) {
        return field.text().flatMap(text -> {
            try {
                long value = Long.parseLong(text);
                if (value >= min && value <= max) {
                    return Optional.of(value);
                }
            } catch (NumberFormatException notALong) {
                // reported below
            }
            field.error("expected a " + what + " " + min + ".." + max + ", got '" + text + "'");
            return Optional.empty();
        });
    }

    /** A positive number of bytes, optionally with a binary suffix: {@code 65536}, {@code 512KiB}, {@code 64MiB}. */
    static Optional<Long> size(Field field) {
        return field.text().flatMap(text -> {
            Matcher m = SIZE.matcher(text);
            if (!m.matches()) {
                field.error("expected a size: a number of bytes, optionally with suffix KiB, MiB or GiB"
                        + " (e.g. 65536, 512KiB, 64MiB), got '" + text + "'");
                return Optional.empty();
            }
            int shift = m.group(2) == null ? 0 : switch (m.group(2)) {
                case "KiB" -> 10;
                case "MiB" -> 20;
                default -> 30;
            };
            try {
                long bytes = Math.multiplyExact(Long.parseLong(m.group(1)), 1L << shift);
                if (bytes > 0) {
                    return Optional.of(bytes);
                }
                field.error("a size must be positive, got '" + text + "'");
            } catch (NumberFormatException | ArithmeticException tooLarge) {
                field.error("size '" + text + "' is too large");
            }
            return Optional.empty();
        });
    }

    /** A size within {@code min..max} bytes; the message names the bounds as written in a policy file. */
    static Optional<Long> size(Field field, long min, long max) {
        return size(field).flatMap(bytes -> {
            if (bytes < min || bytes > max) {
                field.error("expected a size from " + bytes(min) + " to " + bytes(max) + ", got " + bytes(bytes));
                return Optional.empty();
            }
            return Optional.of(bytes);
        });
    }

    /** A size as a policy file would write it: {@code 16KiB}, {@code 300}. */
    static String bytes(long bytes) {
        return Sizes.text(bytes);
    }

    /** A positive duration of at most {@link #MAX_DURATION}: a whole number with suffix ms, s, m or h. */
    static Optional<Duration> duration(Field field) {
        return field.text().flatMap(text -> {
            Matcher m = DURATION.matcher(text);
            if (!m.matches()) {
                field.error("expected a duration: a whole number with suffix ms, s, m or h (e.g. 250ms, 30s, 1m),"
                        + " got '" + text + "'");
                return Optional.empty();
            }
            try {
                long amount = Long.parseLong(m.group(1));
                Duration duration = switch (m.group(2)) {
                    case "ms" -> Duration.ofMillis(amount);
                    case "s" -> Duration.ofSeconds(amount);
                    case "m" -> Duration.ofMinutes(amount);
                    default -> Duration.ofHours(amount);
                };
                if (!duration.isPositive()) {
                    field.error("a duration must be positive, got '" + text + "'");
                } else if (duration.compareTo(MAX_DURATION) > 0) {
                    field.error("a duration must be at most 24h, got '" + text + "'");
                } else {
                    return Optional.of(duration);
                }
            } catch (NumberFormatException | ArithmeticException tooLarge) {
                field.error("a duration must be at most 24h, got '" + text + "'");
            }
            return Optional.empty();
        });
    }

    /** A file system path, as written (a relative path resolves against the process's working directory). */
    static Optional<Path> path(Field field) {
        return text(field).flatMap(text -> {
            try {
                return Optional.of(Path.of(text));
            } catch (InvalidPathException e) {
                field.error("not a valid path: " + e.getReason());
                return Optional.empty();
            }
        });
    }

    /** An absolute http or https URL with a host and without query or fragment. */
    static Optional<URI> httpUrl(Field field) {
        return text(field).flatMap(text -> httpUrl(text, field));
    }

    /** {@code text} as in {@link #httpUrl(Field)}, reporting at {@code field}. */
    static Optional<URI> httpUrl(String text, Field field) {
        return uri(text, field).flatMap(uri -> {
            String problem;
            if (uri.getScheme() == null || !uri.getScheme().matches("(?i)https?")) {
                problem = "expected an absolute http:// or https:// URL, got '" + text + "'";
            } else if (uri.getHost() == null) {
                problem = "URL '" + text + "' has no host (or a host name with characters a URL cannot hold)";
            } else if (uri.getRawQuery() != null) {
                problem = "URL '" + text + "' must not have a query: requests keep their own";
            } else if (uri.getRawFragment() != null) {
                problem = "URL '" + text + "' must not have a fragment";
            } else {
                return Optional.of(uri);
            }
            field.error(problem);
            return Optional.empty();
        });
    }

    /** {@code text} as a URI (RFC 3986), or an error at {@code field}: what the URL's kind checks next. */
    static Optional<URI> uri(String text, Field field) {
        try {
            URI uri = new URI(text);
            if (uri.getScheme() != null && uri.getHost() == null && uri.getRawSchemeSpecificPart() != null
                    && uri.getRawSchemeSpecificPart().matches("\\d+(/.*)?")) {
                // "127.0.0.1:8080/x" reads as the scheme "127.0.0.1" (or "localhost:8080" as "localhost")
                field.error("'" + text + "' has no scheme: write http://" + text + " (or https://)");
                return Optional.empty();
            }
            return Optional.of(uri);
        } catch (URISyntaxException e) {
            String message = message(e);
            field.error(text.matches("[^/:]+:\\d+.*") || message.contains("scheme name")
                    ? "'" + text + "' has no scheme: write http://" + text + " (or https://)"
                    : "not a valid URL: " + message);
            return Optional.empty();
        }
    }

    /** An HTTP header name: an RFC 9110 token. */
    static Optional<String> headerName(Field field) {
        return matching(field, TOKEN, "is not a valid header name: use letters, digits and !#$%&'*+-.^_`|~"
                + " (an RFC 9110 token)");
    }

    /** {@code true} or {@code false}. */
    static Optional<Boolean> bool(Field field) {
        return field.text().flatMap(text -> switch (text) {
            case "true" -> Optional.of(true);
            case "false" -> Optional.of(false);
            default -> {
                field.error("expected true or false, got '" + text + "'");
                yield Optional.empty();
            }
        });
    }
}
