package io.stockade.client;

import java.net.URI;
import java.net.URLEncoder;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import org.jspecify.annotations.Nullable;

/**
 * Consul's session + KV lock over its HTTP API (java.net.http; no Consul library).
 *
 * <ul>
 *   <li>Acquire: {@code PUT /v1/session/create} with the lease's ttl as {@code TTL} (whole seconds, rounded up;
 *       Consul takes 10s..24h), {@code LockDelay} 15s and {@code Behavior} release; then
 *       {@code PUT /v1/kv/<prefix + name>?acquire=<session>} until it answers {@code true} (polled; the session is
 *       renewed while waiting); then {@code GET /v1/kv/<key>?consistent}.</li>
 *   <li>Token: the key's {@code ModifyIndex} in that read — the Raft index of the acquiring write, which the next
 *       holder's acquisition (after this holder's release or session invalidation, each a write of the key) exceeds.
 *       {@code LockIndex} is not used: it is per key and starts again at 1 when the key is deleted and re-created.
 *       The provider never writes the key while holding it (that would move its {@code ModifyIndex}).</li>
 *   <li>Renewal: {@code PUT /v1/session/renew/<session>} (404: the session was invalidated, {@link Renewal#REVOKED}),
 *       then {@code GET /v1/kv/<key>?consistent}: the key must still name our session and our index, otherwise
 *       {@link Renewal#REFUSED} (gone: {@link Renewal#REVOKED}).</li>
 *   <li>Release: {@code PUT /v1/kv/<key>?release=<session>} (only our session's hold is released), then
 *       {@code PUT /v1/session/destroy/<session>}.</li>
 * </ul>
 * Validity is counted on this process's ticker from just before the session was created or last renewed, for the
 * ttl: Consul invalidates a session no sooner than its TTL after the last renewal (in practice up to twice that).
 */
final class ConsulLeaseService implements LeaseService {
    /** Consul's bounds on a session TTL. */
    static final Duration MIN_TTL = Duration.ofSeconds(10);
    static final Duration MAX_TTL = Duration.ofHours(24);
    static final String LOCK_DELAY = "15s";
    private static final Duration CALL_TIMEOUT = Duration.ofSeconds(10);

    /** A held key: the session that holds it. */
    record Handle(String session, String key) {
    }

    private final String base;
    private final String prefix;
    private final @Nullable String aclToken;
    private final HttpClient http;
    private final Ticker ticker;

    ConsulLeaseService(URI url, String prefix, @Nullable String aclToken, HttpClient http, Ticker ticker) {
        String scheme = url.getScheme();
        if (scheme == null || !scheme.matches("(?i)https?") || url.getHost() == null) {
            throw new IllegalArgumentException("expected the Consul HTTP API as http://host:8500 or https://…, got '"
                    + url + "'");
        }
        if (prefix.startsWith("/")) {
            throw new IllegalArgumentException("the key prefix '" + prefix + "' starts with '/': Consul KV keys do not"
                    + " (write e.g. locks/)");
        }
        this.base = url.toString().replaceAll("/+$", "");
        this.prefix = prefix;
        this.aclToken = aclToken;
        this.http = http;
        this.ticker = ticker;
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        long seconds = (ttl.toNanos() + 999_999_999L) / 1_000_000_000L;
        if (ttl.compareTo(MIN_TTL) < 0 || ttl.compareTo(MAX_TTL) > 0) {
            throw new IllegalArgumentException("a Consul session's TTL must be 10s..24h, so must the lease ttl: "
                    + ttl);
        }
        String key = prefix + name;
        if (key.startsWith("/") || key.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
            throw new IllegalArgumentException("'" + key + "' cannot be a Consul KV key (no leading '/', no control"
                    + " character)");
        }
        long deadline = ticker.read() + timeout.toNanos();
        long poll = LeaseService.pollNanos(ttl);
        Map<String, Object> spec = new LinkedHashMap<>();
        spec.put("Name", "stockade " + holder + " " + name);
        spec.put("TTL", seconds + "s");
        spec.put("LockDelay", LOCK_DELAY);
        spec.put("Behavior", "release");
        long sent = ticker.read();
        HttpResponse<String> created = send("PUT", base + "/v1/session/create", Json.write(spec), CALL_TIMEOUT);
        expect(created, 200);
        String session = (String) Json.object(created.body()).get("ID");
        if (session == null || session.isEmpty()) {
            throw new IllegalStateException("Consul created a session without an ID: " + created.body());
        }
        boolean granted = false;
        try {
            while (true) {
                HttpResponse<String> r = send("PUT", kv(key) + "?acquire=" + enc(session), holder, CALL_TIMEOUT);
                expect(r, 200);
                if (r.body().strip().equals("true")) {
                    Map<String, Object> entry = entry(key, CALL_TIMEOUT);
                    if (entry != null && session.equals(entry.get("Session"))
                            && entry.get("ModifyIndex") instanceof Long index) {
                        granted = true;
                        return new Grant(index, sent, new Handle(session, key));
                    }
                    // released or taken between the two calls: try again
                }
                long left = deadline - ticker.read();
                if (left <= 0) {
                    throw new TimeoutException("Consul lock '" + key + "' is held by another session (or in its"
                            + " lock-delay); not acquired within " + timeout);
                }
                TimeUnit.NANOSECONDS.sleep(Math.min(left, poll));
                if (ticker.read() - sent > ttl.toNanos() / 3) { // keep the waiting session alive
                    long renewSent = ticker.read();
                    HttpResponse<String> renewed = send("PUT", base + "/v1/session/renew/" + enc(session), "",
                            CALL_TIMEOUT);
                    expect(renewed, 200);
                    sent = renewSent;
                }
            }
        } finally {
            if (!granted) {
                destroyQuietly(session);
            }
        }
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        Handle h = (Handle) grant.handle();
        long deadline = ticker.read() + timeout.toNanos();
        HttpResponse<String> r = send("PUT", base + "/v1/session/renew/" + enc(h.session()), "", timeout);
        if (r.statusCode() == 404) {
            return Renewal.REVOKED; // the session was invalidated: Consul released the key
        }
        expect(r, 200);
        Map<String, Object> entry = entry(h.key(), Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1),
                deadline - ticker.read())));
        if (entry == null) {
            return Renewal.REVOKED; // the key was deleted
        }
        if (!h.session().equals(entry.get("Session"))
                || !(entry.get("ModifyIndex") instanceof Long index && index == grant.token())) {
            return Renewal.REFUSED;
        }
        return Renewal.RENEWED;
    }

    @Override
    public void release(String name, String holder, Grant grant) throws Exception {
        Handle h = (Handle) grant.handle();
        try {
            // releases only our session's hold: a later holder's is untouched (false)
            send("PUT", kv(h.key()) + "?release=" + enc(h.session()), "", Duration.ofSeconds(5));
        } finally {
            destroyQuietly(h.session());
        }
    }

    @Override
    public void close() {
    }

    /** The key's entry read with {@code ?consistent}, or null when there is no such key. */
    @SuppressWarnings("unchecked")
    private @Nullable Map<String, Object> entry(String key, Duration timeout) throws Exception {
        HttpResponse<String> r = send("GET", kv(key) + "?consistent", null, timeout);
        if (r.statusCode() == 404) {
            return null;
        }
        expect(r, 200);
        if (!(Json.parse(r.body()) instanceof List<?> list) || list.size() != 1
                || !(list.getFirst() instanceof Map<?, ?> entry)) {
            throw new IllegalStateException("GET " + key + ": not a list of one KV entry: " + r.body());
        }
        return (Map<String, Object>) entry;
    }

    private void destroyQuietly(String session) {
        try {
            send("PUT", base + "/v1/session/destroy/" + enc(session), "", Duration.ofSeconds(5));
        } catch (Exception e) {
            // the session then ends with its TTL, releasing what it held
        }
    }

    /** {@code /v1/kv/<key>}, each segment of the key percent-encoded, the '/' between kept. */
    private String kv(String key) {
        StringBuilder b = new StringBuilder(base).append("/v1/kv");
        for (String segment : key.split("/", -1)) {
            b.append('/').append(enc(segment));
        }
        return b.toString();
    }

    private static String enc(String s) {
        return URLEncoder.encode(s, StandardCharsets.UTF_8).replace("+", "%20");
    }

    private HttpResponse<String> send(String method, String uri, @Nullable String body, Duration timeout)
            throws Exception {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(uri))
                .timeout(Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1), timeout.toNanos())))
                .header("Accept", "application/json")
                .method(method, body == null ? HttpRequest.BodyPublishers.noBody()
                        : HttpRequest.BodyPublishers.ofString(body));
        if (aclToken != null) {
            b.header("X-Consul-Token", aclToken);
        }
        return http.send(b.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void expect(HttpResponse<String> r, int status) {
        if (r.statusCode() != status) {
            throw new IllegalStateException("Consul: " + r.request().method() + " " + r.uri().getRawPath() + ": HTTP "
                    + r.statusCode() + " " + r.body().strip());
        }
    }
}
