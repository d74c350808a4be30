package io.stockade.proxy.problem;

import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

import io.stockade.proxy.json.JsonWriter;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * An RFC 9457 problem answer ({@code application/problem+json}). Every refusal the proxy makes is one of these,
 * with a {@code type} a client can switch on and a {@code detail} a human can act on.
 */
public final class Problem {
    /** Prefix of every problem type URI. */
    public static final String TYPE_PREFIX = "urn:stockade:problem:";

    private final ProblemType kind;
    private final String detail;
    private final Map<String, Object> extensions = new LinkedHashMap<>();
    private final Map<String, String> headers = new LinkedHashMap<>();

    private Problem(ProblemType kind, String detail) {
        this.kind = kind;
        this.detail = detail;
    }

    /**
     * A new problem. A retryable kind (every 503) says {@code Retry-After: 1} unless {@link #retryAfter} says more.
     *
     * @param kind   what kind of refusal: its type, status and title ({@link ProblemType})
     * @param detail what happened this time, and what to do about it
     */
    public static Problem of(ProblemType kind, String detail) {
        Problem problem = new Problem(kind, detail);
        return kind.retryable() ? problem.retryAfter(1) : problem;
    }

    /** Adds a member (a string, a number, a boolean or null). */
    public Problem with(String name, @Nullable Object value) {
        extensions.put(name, value);
        return this;
    }

    /** Adds a member unless it is there already. */
    public Problem withDefault(String name, Object value) {
        extensions.putIfAbsent(name, value);
        return this;
    }

    /** Adds a response header, e.g. {@code Allow}. */
    public Problem header(String name, String value) {
        headers.put(name, value);
        return this;
    }

    /** Adds {@code Retry-After} (seconds) as a header and as the member {@code retryAfterSeconds}. */
    public Problem retryAfter(long seconds) {
        extensions.put("retryAfterSeconds", seconds);
        return header("Retry-After", Long.toString(seconds));
    }

    public int status() {
        return kind.status();
    }

    /** The full type URI: {@link #TYPE_PREFIX} and the kind's name. */
    public String type() {
        return TYPE_PREFIX + kind.type();
    }

    /** The kind of refusal. */
    public ProblemType kind() {
        return kind;
    }

    /** A member added with {@link #with}, or null. */
    public @Nullable Object member(String name) {
        return extensions.get(name);
    }

    /** The response headers this problem adds ({@code Allow}, {@code Retry-After}, {@code Connection}). */
    public Map<String, String> headers() {
        return Collections.unmodifiableMap(headers);
    }

    public String detail() {
        return detail;
    }

    /** Sends this problem as the whole answer. */
    public void send(ServerResponse response) {
        byte[] body = toJson().getBytes(StandardCharsets.UTF_8);
        response.status(Statuses.of(kind.status()));
        headers.forEach(response::header);
        response.header(HeaderNames.CONTENT_TYPE, "application/problem+json");
        response.send(body);
    }

    /** The JSON body. */
    public String toJson() {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"type\":").append(JsonWriter.quote(type()))
                .append(",\"title\":").append(JsonWriter.quote(kind.title()))
                .append(",\"status\":").append(kind.status())
                .append(",\"detail\":").append(JsonWriter.quote(detail));
        for (Map.Entry<String, Object> e : extensions.entrySet()) {
            b.append(',').append(JsonWriter.quote(e.getKey())).append(':').append(JsonWriter.value(e.getValue()));
        }
        return b.append('}').toString();
    }

    @Override
    public String toString() {
        return toJson();
    }
}
