package io.stockade.conformance.lease;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.jspecify.annotations.Nullable;

/**
 * The suite's built-in lock service: one lease with a TTL and a token counter that only rises, over HTTP on
 * loopback. Expiry is judged on this process's monotonic clock, so a holder paused past its TTL loses the lease and
 * the next writer gets a higher token.
 *
 * <pre>
 * POST /acquire?holder=H          200 "token ttlMillis" | 409 "held"
 * POST /renew?holder=H&amp;token=T   200 "ttlMillis"       | 409 "lost"
 * POST /release?holder=H&amp;token=T 204
 * </pre>
 */
public final class CounterLeaseServer implements AutoCloseable {

    private final HttpServer server;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final long ttlNanos;
    private long counter;
    private @Nullable String holder;   // null: the lease is free
    private long token;
    private long expires;
    private int grants;

    private CounterLeaseServer(Duration ttl, long firstToken) throws IOException {
        this.ttlNanos = ttl.toNanos();
        this.counter = firstToken - 1;
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 64);
        server.setExecutor(executor);
        server.createContext("/", this::handle);
        server.start();
    }

    /** Starts a counter whose first token is {@code firstToken}, leases lasting {@code ttl}. */
    public static CounterLeaseServer start(Duration ttl, long firstToken) {
        try {
            return new CounterLeaseServer(ttl, firstToken);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the lease counter", e);
        }
    }

    /** The spec writers pass to {@link LeaseProviders#create}. */
    public String spec() {
        return "counter:" + uri();
    }

    public URI uri() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    /** How many leases were granted. */
    public synchronized int grants() {
        return grants;
    }

    /** The next token that would be handed out (every earlier one is spent). */
    public synchronized long nextToken() {
        return counter + 1;
    }

    private void handle(HttpExchange ex) throws IOException {
        try (ex) {
            Map<String, String> q = query(ex.getRequestURI().getRawQuery());
            String h = q.getOrDefault("holder", "");
            long t = q.containsKey("token") ? Long.parseLong(q.get("token")) : -1;
            String path = ex.getRequestURI().getPath();
            int status;
            String body;
            synchronized (this) {
                long now = System.nanoTime();
                boolean free = holder == null || now - expires >= 0;
                switch (path) {
                    case "/acquire" -> {
                        if (free) {
                            holder = h;
                            token = ++counter;
                            expires = now + ttlNanos;
                            grants++;
                            status = 200;
                            body = token + " " + ttlNanos / 1_000_000;
                        } else {
                            status = 409;
                            body = "held";
                        }
                    }
                    case "/renew" -> {
                        if (!free && h.equals(holder) && t == token) {
                            expires = now + ttlNanos;
                            status = 200;
                            body = "" + ttlNanos / 1_000_000;
                        } else {
                            status = 409;
                            body = "lost";
                        }
                    }
                    case "/release" -> {
                        if (h.equals(holder) && t == token) {
                            holder = null;
                        }
                        status = 204;
                        body = "";
                    }
                    default -> {
                        status = 404;
                        body = "no such endpoint";
                    }
                }
            }
            byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
            ex.sendResponseHeaders(status, bytes.length == 0 ? -1 : bytes.length);
            if (bytes.length > 0) {
                ex.getResponseBody().write(bytes);
            }
        }
    }

    private static Map<String, String> query(String raw) {
        Map<String, String> m = new HashMap<>();
        if (raw != null) {
            for (String kv : raw.split("&", -1)) {
                int eq = kv.indexOf('=');
                if (eq > 0) {
                    m.put(kv.substring(0, eq), URLDecoder.decode(kv.substring(eq + 1), StandardCharsets.UTF_8));
                }
            }
        }
        return m;
    }

    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }
}
