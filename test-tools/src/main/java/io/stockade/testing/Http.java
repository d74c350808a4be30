package io.stockade.testing;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;

/**
 * A tiny HTTP/1.1 client for tests: one shared {@link HttpClient} (no redirects, 5 s connect timeout) and a 10 s
 * timeout on every request. A timeout surfaces as {@link java.net.http.HttpTimeoutException}, which racing tests
 * record as an unknown outcome.
 *
 * <p>Note: {@code java.net.http} refuses restricted headers ({@code Connection}, {@code Host},
 * {@code Content-Length}, {@code Expect}, {@code Upgrade}) unless the system property
 * {@code jdk.httpclient.allowRestrictedHeaders} lists them before the first client is built.
 */
public final class Http {

    /** The timeout of every request. */
    public static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(10);

    /**
     * An answer.
     *
     * @param status  the status code
     * @param body    the body as UTF-8 text ({@code ""} if none)
     * @param headers the response headers
     */
    public record Response(int status, String body, HttpHeaders headers) {

        /** The first value of a response header, if present. */
        public Optional<String> header(String name) {
            return headers.firstValue(name);
        }
    }

    private static final class Holder {
        static final HttpClient CLIENT = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(5))
                .followRedirects(HttpClient.Redirect.NEVER)
                .build();
    }

    private Http() {
    }

    /** The shared client (HTTP/1.1). */
    public static HttpClient client() {
        return Holder.CLIENT;
    }

    /** {@code PUT} with a UTF-8 body. */
    public static Response put(URI uri, String body, Map<String, String> headers)
            throws IOException, InterruptedException {
        return send("PUT", uri, HttpRequest.BodyPublishers.ofString(body, StandardCharsets.UTF_8), headers);
    }

    /** {@code PUT} with a binary body. */
    public static Response put(URI uri, byte[] body, Map<String, String> headers)
            throws IOException, InterruptedException {
        return send("PUT", uri, HttpRequest.BodyPublishers.ofByteArray(body), headers);
    }

    /** {@code GET}. */
    public static Response get(URI uri, Map<String, String> headers) throws IOException, InterruptedException {
        return send("GET", uri, HttpRequest.BodyPublishers.noBody(), headers);
    }

    /** {@code GET} without extra headers. */
    public static Response get(URI uri) throws IOException, InterruptedException {
        return get(uri, Map.of());
    }

    /** {@code DELETE}. */
    public static Response delete(URI uri, Map<String, String> headers) throws IOException, InterruptedException {
        return send("DELETE", uri, HttpRequest.BodyPublishers.noBody(), headers);
    }

    /** Any method with any body publisher (e.g. {@code BodyPublishers.ofInputStream} for a large streamed body). */
    public static Response send(String method, URI uri, HttpRequest.BodyPublisher body, Map<String, String> headers)
            throws IOException, InterruptedException {
        HttpRequest.Builder b = HttpRequest.newBuilder(uri).timeout(REQUEST_TIMEOUT).method(method, body);
        headers.forEach(b::header);
        HttpResponse<String> r = client().send(b.build(), HttpResponse.BodyHandlers.ofString(StandardCharsets.UTF_8));
        return new Response(r.statusCode(), r.body() == null ? "" : r.body(), r.headers());
    }
}
