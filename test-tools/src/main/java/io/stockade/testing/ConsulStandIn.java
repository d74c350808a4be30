package io.stockade.testing;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonParser;
import com.fasterxml.jackson.core.JsonToken;
import com.fasterxml.jackson.core.io.JsonStringEncoder;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.jspecify.annotations.Nullable;

/**
 * An in-process stand-in for a Consul server's HTTP API, the part a lock needs, following Consul's documentation
 * (there is no Consul on this machine: no package, no binary downloads). <b>It is not Consul</b>; what it does:
 * <ul>
 * <li>one rising Raft-like index for the whole "cluster": every write (session create/destroy/invalidation, KV put,
 * acquire, release, delete) takes the next one; {@code CreateIndex}, {@code ModifyIndex} and the
 * {@code X-Consul-Index} header come from it, as Consul assigns them;</li>
 * <li>sessions ({@code PUT /v1/session/create|renew/<id>|destroy/<id>}, {@code GET /v1/session/info/<id>}) with
 * {@code TTL} (10s..24h, as Consul bounds it; invalidated once 2 × TTL passed without a renewal, Consul's grace
 * multiplier), {@code LockDelay} (default 15s) and {@code Behavior} release or delete; a renewal of an unknown
 * session is 404;</li>
 * <li>KV ({@code GET|PUT|DELETE /v1/kv/<key>}) with {@code ?acquire=<session>} (true only when the key is free, or
 * already held by that session, and no lock-delay is running; a new holder raises {@code LockIndex}; an invalid
 * session is 500), {@code ?release=<session>}, {@code ?consistent} accepted (recorded: one node, always
 * consistent); a missing key is 404 with an empty body; values base64 in GET answers;</li>
 * <li>an ACL token, when {@link #requireToken} is set: requests without it in {@code X-Consul-Token} get 403
 * "Permission denied".</li>
 * </ul>
 * Time is the stand-in's own clock ({@link #advance}), so a test moves a session past its TTL without sleeping (or,
 * made with {@link #realTime()}, that clock plus real time);
 * expiry is applied at each request, before it is answered.
 */
public final class ConsulStandIn implements AutoCloseable {
    private static final Pattern KV = Pattern.compile("/v1/kv/(.+)");
    private static final Pattern SESSION = Pattern.compile("/v1/session/(create|renew|destroy|info)(?:/([^/]+))?");
    private static final Pattern DURATION = Pattern.compile("(\\d+)(ms|s|m|h)");

    /** Every request, as {@code METHOD /path?query token=<X-Consul-Token>}. */
    public final List<String> requests = new CopyOnWriteArrayList<>();
    /** When set, requests must carry it in {@code X-Consul-Token}. */
    public volatile @Nullable String requireToken;
    /** When not 0, every request gets this status (a cluster without a leader answers 500). */
    public volatile int failWith;

    private final HttpServer server;
    private final Map<String, Entry> kv = new HashMap<>();
    private final Map<String, Session> sessions = new HashMap<>();
    /** Key -> stand-in time before which it cannot be acquired (the lock-delay of an invalidated holder). */
    private final Map<String, Long> lockDelays = new HashMap<>();
    private long index = 12; // a cluster that has done a few writes already
    private long nanos;      // the stand-in's clock, moved by advance()
    /** {@link System#nanoTime()} at start, when the clock also runs by itself ({@link #realTime()}); else null. */
    private final @Nullable Long realStart;
    /** The longest lock-delay a session gets ({@link #realTime(Duration)}); else unbounded. */
    private final long lockDelayCapNanos;

    private static final class Entry {
        long createIndex;
        long modifyIndex;
        long lockIndex;
        long flags;
        byte[] value = new byte[0];
        @Nullable String session;
    }

    @SuppressWarnings("ArrayRecordComponent") // held by id in a map: never compared, hashed or printed
    private record Session(String id, String name, long ttlNanos, long lockDelayNanos, String behavior,
                           long createIndex, long[] renewedAt) {
    }

    public ConsulStandIn() throws IOException {
        this(null);
    }

    /**
     * A stand-in whose clock runs in real time (plus what {@link #advance} adds): sessions expire by themselves, for
     * tests whose clients renew and pause as real processes (the conformance suite's writers).
     */
    public static ConsulStandIn realTime() throws IOException {
        return new ConsulStandIn(System.nanoTime(), Long.MAX_VALUE);
    }

    /**
     * As {@link #realTime()}, with every session's lock-delay at most {@code lockDelayCap} (a session that asks for
     * more, as the client SDK's 15 s, gets the cap; its {@code info} says so): for tests that wait for handoffs in
     * real time and whose point is not the lock-delay (the conformance suite: the next holder's token must fence
     * the zombie, whenever it took the lock).
     */
    public static ConsulStandIn realTime(Duration lockDelayCap) throws IOException {
        return new ConsulStandIn(System.nanoTime(), lockDelayCap.toNanos());
    }

    private ConsulStandIn(@Nullable Long realStart) throws IOException {
        this(realStart, Long.MAX_VALUE);
    }

    private ConsulStandIn(@Nullable Long realStart, long lockDelayCapNanos) throws IOException {
        this.realStart = realStart;
        this.lockDelayCapNanos = lockDelayCapNanos;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.createContext("/", this::handle);
        server.start();
    }

    public int port() {
        return server.getAddress().getPort();
    }

    public String url() {
        return "http://127.0.0.1:" + port();
    }

    /** The stand-in's time: what {@link #advance} added, plus the real time since start in real-time mode. */
    private long now() {
        return realStart == null ? nanos : nanos + System.nanoTime() - realStart;
    }

    /** Moves the stand-in's clock: sessions past 2 × TTL are invalidated at the next request or look. */
    public synchronized void advance(Duration d) {
        nanos += d.toNanos();
        expire();
    }

    /** Invalidates a session as Consul does when its node's health check fails: its locks released, lock-delay. */
    public synchronized void invalidate(String session) {
        expire();
        if (sessions.containsKey(session)) {
            invalidate(sessions.get(session));
        }
    }

    /** The raw entry of a key as GET answers it, or empty. */
    public synchronized Optional<Map<String, Object>> entry(String key) {
        expire();
        Entry e = kv.get(key);
        return e == null ? Optional.empty() : Optional.of(json(key, e));
    }

    /** The current index (the last write's). */
    public synchronized long index() {
        return index;
    }

    /** The ids of the live sessions. */
    public synchronized List<String> sessions() {
        expire();
        return List.copyOf(sessions.keySet());
    }

    private void expire() {
        for (Session s : List.copyOf(sessions.values())) {
            if (now() - s.renewedAt()[0] >= 2 * s.ttlNanos()) {
                invalidate(s);
            }
        }
    }

    private void invalidate(Session s) {
        sessions.remove(s.id());
        index++;
        for (var it = kv.entrySet().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (s.id().equals(e.getValue().session)) {
                if (s.lockDelayNanos() > 0) {
                    lockDelays.put(e.getKey(), now() + s.lockDelayNanos());
                }
                if (s.behavior().equals("delete")) {
                    it.remove();
                } else {
                    e.getValue().session = null;
                    e.getValue().modifyIndex = index;
                }
            }
        }
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            String path = ex.getRequestURI().getRawPath();
            String query = ex.getRequestURI().getRawQuery();
            String token = ex.getRequestHeaders().getFirst("X-Consul-Token");
            requests.add(ex.getRequestMethod() + " " + path + (query == null ? "" : "?" + query) + " token=" + token);
            byte[] body = ex.getRequestBody().readAllBytes();
            if (failWith != 0) {
                send(ex, failWith, "No cluster leader");
                return;
            }
            if (requireToken != null && !requireToken.equals(token)) {
                send(ex, 403, "Permission denied");
                return;
            }
            Map<String, String> params = params(query);
            synchronized (this) {
                expire();
                Matcher kvPath = KV.matcher(path);
                Matcher sessionPath = SESSION.matcher(path);
                if (kvPath.matches()) {
                    kv(ex, URLDecoder.decode(kvPath.group(1).replace("+", "%2B"), StandardCharsets.UTF_8), params,
                            body);
                } else if (sessionPath.matches()) {
                    session(ex, sessionPath.group(1), sessionPath.group(2), body);
                } else {
                    send(ex, 404, "");
                }
            }
        }
    }

    private void kv(HttpExchange ex, String key, Map<String, String> params, byte[] body) throws IOException {
        switch (ex.getRequestMethod()) {
            case "GET" -> {
                Entry e = kv.get(key);
                ex.getResponseHeaders().set("X-Consul-Index", Long.toString(index));
                if (e == null) {
                    send(ex, 404, "");
                } else {
                    send(ex, 200, "[" + write(json(key, e)) + "]");
                }
            }
            case "PUT" -> {
                if (params.containsKey("acquire")) {
                    String id = params.get("acquire");
                    if (!sessions.containsKey(id)) {
                        send(ex, 500, "invalid session \"" + id + "\"");
                        return;
                    }
                    Entry e = kv.get(key);
                    if (e != null && e.session != null && !e.session.equals(id)) {
                        send(ex, 200, "false");
                        return;
                    }
                    if ((e == null || e.session == null) && lockDelays.getOrDefault(key, Long.MIN_VALUE) > now()) {
                        send(ex, 200, "false"); // lock-delay of a holder whose session was invalidated
                        return;
                    }
                    e = put(key, body, params);
                    if (!id.equals(e.session)) {
                        e.lockIndex++;
                        e.session = id;
                    }
                    send(ex, 200, "true");
                } else if (params.containsKey("release")) {
                    Entry e = kv.get(key);
                    if (e == null || !params.get("release").equals(e.session)) {
                        send(ex, 200, "false");
                        return;
                    }
                    e = put(key, body.length == 0 ? e.value : body, params);
                    e.session = null;
                    send(ex, 200, "true");
                } else {
                    put(key, body, params);
                    send(ex, 200, "true");
                }
            }
            case "DELETE" -> {
                if (kv.remove(key) != null) {
                    index++;
                }
                send(ex, 200, "true");
            }
            default -> send(ex, 405, "method " + ex.getRequestMethod() + " not allowed");
        }
    }

    private Entry put(String key, byte[] value, Map<String, String> params) {
        Entry e = kv.get(key);
        index++;
        if (e == null) {
            e = new Entry();
            e.createIndex = index;
            kv.put(key, e);
        }
        e.modifyIndex = index;
        e.value = value;
        if (params.containsKey("flags")) {
            e.flags = Long.parseLong(params.get("flags"));
        }
        return e;
    }

    private void session(HttpExchange ex, String op, String id, byte[] body) throws IOException {
        if (!ex.getRequestMethod().equals(op.equals("info") ? "GET" : "PUT")) {
            send(ex, 405, "method " + ex.getRequestMethod() + " not allowed");
            return;
        }
        switch (op) {
            case "create" -> {
                Map<String, Object> spec = body.length == 0 ? Map.of()
                        : flatObject(new String(body, StandardCharsets.UTF_8));
                long ttl = spec.get("TTL") instanceof String t && !t.isEmpty() ? nanos(t) : 0;
                if (ttl == 0 || ttl < Duration.ofSeconds(10).toNanos() || ttl > Duration.ofHours(24).toNanos()) {
                    // a session without TTL lives until destroyed or its node fails: not needed here
                    send(ex, 400, "Invalid Session TTL '" + spec.get("TTL") + "', must be between [10s=24h0m0s]");
                    return;
                }
                long delay = Math.min(lockDelayCapNanos, spec.get("LockDelay") instanceof String d ? nanos(d)
                        : Duration.ofSeconds(15).toNanos());
                String behavior = spec.get("Behavior") instanceof String b ? b : "release";
                if (!behavior.equals("release") && !behavior.equals("delete")) {
                    send(ex, 400, "Invalid Behavior setting '" + behavior + "'");
                    return;
                }
                String sid = UUID.randomUUID().toString();
                index++;
                sessions.put(sid, new Session(sid, String.valueOf(spec.getOrDefault("Name", "")), ttl, delay,
                        behavior, index, new long[] {now()}));
                send(ex, 200, "{\"ID\":\"" + sid + "\"}");
            }
            case "renew" -> {
                Session s = id == null ? null : sessions.get(id);
                if (s == null) {
                    send(ex, 404, "Session id '" + id + "' not found");
                    return;
                }
                s.renewedAt()[0] = now();
                send(ex, 200, "[" + sessionJson(s) + "]");
            }
            case "destroy" -> {
                Session s = id == null ? null : sessions.get(id);
                if (s != null) {
                    invalidate(s);
                }
                send(ex, 200, "true");
            }
            default -> {
                Session s = id == null ? null : sessions.get(id);
                send(ex, 200, s == null ? "[]" : "[" + sessionJson(s) + "]");
            }
        }
    }

    private static Map<String, Object> json(String key, Entry e) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("LockIndex", e.lockIndex);
        m.put("Key", key);
        m.put("Flags", e.flags);
        m.put("Value", e.value.length == 0 ? null : Base64.getEncoder().encodeToString(e.value));
        if (e.session != null) {
            m.put("Session", e.session);
        }
        m.put("CreateIndex", e.createIndex);
        m.put("ModifyIndex", e.modifyIndex);
        return m;
    }

    private static String write(Map<String, Object> m) {
        List<String> fields = new ArrayList<>();
        m.forEach((k, v) -> fields.add(quote(k) + ":" + value(v)));
        return "{" + String.join(",", fields) + "}";
    }

    private static String sessionJson(Session s) {
        return "{\"ID\":\"" + s.id() + "\",\"Name\":" + quote(s.name())
                + ",\"Node\":\"stand-in\",\"LockDelay\":" + s.lockDelayNanos() + ",\"Behavior\":\"" + s.behavior()
                + "\",\"TTL\":\"" + (s.ttlNanos() / 1_000_000_000L) + "s\",\"NodeChecks\":[\"serfHealth\"],"
                + "\"ServiceChecks\":null,\"CreateIndex\":" + s.createIndex() + ",\"ModifyIndex\":" + s.createIndex()
                + "}";
    }

    private static long nanos(String text) {
        Matcher m = DURATION.matcher(text);
        if (!m.matches()) {
            throw new IllegalArgumentException("not a duration: " + text);
        }
        long n = Long.parseLong(m.group(1));
        return switch (m.group(2)) {
            case "ms" -> Duration.ofMillis(n).toNanos();
            case "s" -> Duration.ofSeconds(n).toNanos();
            case "m" -> Duration.ofMinutes(n).toNanos();
            default -> Duration.ofHours(n).toNanos();
        };
    }

    private static Map<String, String> params(String query) {
        Map<String, String> p = new HashMap<>();
        if (query != null) {
            // limit 0 drops trailing empty strings: a trailing '&' adds no empty parameter
            for (String part : query.split("&", 0)) {
                int eq = part.indexOf('=');
                p.put(URLDecoder.decode(eq < 0 ? part : part.substring(0, eq), StandardCharsets.UTF_8),
                        eq < 0 ? "" : URLDecoder.decode(part.substring(eq + 1), StandardCharsets.UTF_8));
            }
        }
        return p;
    }

    private static void send(HttpExchange ex, int code, String body) throws IOException {
        byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", body.startsWith("[") || body.startsWith("{")
                ? "application/json" : "text/plain; charset=utf-8");
        ex.sendResponseHeaders(code, bytes.length == 0 ? -1 : bytes.length);
        if (bytes.length > 0) {
            ex.getResponseBody().write(bytes);
        }
    }

    @Override
    public void close() {
        server.stop(0);
    }

    private static final JsonFactory JSON = new JsonFactory();

    /** A session spec: one flat JSON object of strings, numbers and booleans (Jackson's streaming parser). */
    private static Map<String, Object> flatObject(String text) throws IOException {
        Map<String, Object> m = new LinkedHashMap<>();
        try (JsonParser p = JSON.createParser(text)) {
            if (p.nextToken() != JsonToken.START_OBJECT) {
                throw new IOException("expected a JSON object: " + text);
            }
            for (JsonToken t = p.nextToken(); t == JsonToken.FIELD_NAME; t = p.nextToken()) {
                String name = p.currentName();
                JsonToken v = p.nextToken();
                m.put(name, switch (v) {
                    case VALUE_STRING -> p.getText();
                    case VALUE_NUMBER_INT -> p.getLongValue();
                    case VALUE_TRUE, VALUE_FALSE -> v == JsonToken.VALUE_TRUE;
                    case VALUE_NULL -> null;
                    default -> {
                        p.skipChildren();
                        yield null;
                    }
                });
            }
        }
        return m;
    }

    private static String quote(String s) {
        if (s == null) {
            return "null";
        }
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        JsonStringEncoder.getInstance().quoteAsString(s, b);
        return b.append('"').toString();
    }

    private static String value(Object v) {
        return v == null ? "null" : v instanceof Number || v instanceof Boolean ? v.toString() : quote(v.toString());
    }
}
