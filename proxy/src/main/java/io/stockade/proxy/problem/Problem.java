package io.stockade.proxy.problem;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;

import io.stockade.proxy.json.JsonWriter;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerResponse;

/**
 * An RFC 9457 problem answer ({@code application/problem+json}). Every refusal the proxy makes is one of these,
 * with a {@code type} a client can switch on and a {@code detail} a human can act on.
 */
public final class Problem {
    /** Prefix of every problem type URI. */
    public static final String TYPE_PREFIX = "urn:stockade:problem:";

    private final int status;
    private final String type;
    private final String title;
    private final String detail;
    private final Map<String, Object> extensions = new LinkedHashMap<>();
    private final Map<String, String> headers = new LinkedHashMap<>();

    private Problem(int status, String type, String title, String detail) {
        this.status = status;
        this.type = TYPE_PREFIX + type;
        this.title = title;
        this.detail = detail;
    }

    /**
     * A new problem.
     *
     * @param status HTTP status
     * @param type   short kebab-case name, e.g. {@code stale-token}; prefixed with {@link #TYPE_PREFIX}
     * @param title  a short summary that is the same for every occurrence of the type
     * @param detail what happened this time, and what to do about it
     */
    public static Problem of(int status, String type, String title, String detail) {
        return new Problem(status, type, title, detail);
    }

    /** Adds a member (a string, a number, a boolean or null). */
    public Problem with(String name, Object value) {
        extensions.put(name, value);
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
        return status;
    }

    public String type() {
        return type;
    }

    public String detail() {
        return detail;
    }

    /** Sends this problem as the whole answer. */
    public void send(ServerResponse response) {
        byte[] body = toJson().getBytes(StandardCharsets.UTF_8);
        response.status(Statuses.of(status));
        headers.forEach(response::header);
        response.header(HeaderNames.CONTENT_TYPE, "application/problem+json");
        response.send(body);
    }

    /** The JSON body. */
    public String toJson() {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"type\":").append(JsonWriter.quote(type))
                .append(",\"title\":").append(JsonWriter.quote(title))
                .append(",\"status\":").append(status)
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
