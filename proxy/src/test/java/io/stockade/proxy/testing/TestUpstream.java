package io.stockade.proxy.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.ReentrantLock;
import java.util.zip.CRC32C;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;

/**
 * A real HTTP storage service for the proxy's integration tests: an in-memory key-value store on
 * {@code 127.0.0.1} (ephemeral port) where the key is the raw request path.
 *
 * <ul>
 *   <li>{@code GET}/{@code HEAD}: 200 with the body and a strong {@code ETag} ({@code "v<n>"}, from one counter
 *       per upstream), or 404.</li>
 *   <li>{@code PUT}: stores the body; 201 if new, 204 if replaced; answers the new {@code ETag}.</li>
 *   <li>{@code DELETE}: 204, or 404 if absent.</li>
 *   <li>Other methods: 405.</li>
 * </ul>
 *
 * <p>{@code PUT} and {@code DELETE} honour {@code If-Match} (a list or {@code *}, strong comparison) and
 * {@code If-None-Match} ({@code *} or a list, weak comparison). The check and the write happen under one lock per
 * key, so they are atomic; a failed precondition answers 412 and changes nothing.
 * {@link #ignoreConditions(boolean)} turns this off (a naive upstream).
 *
 * <p>Fault injection: {@link #delayWrites(Duration)} (hold a write before checking and applying it, like a request
 * still in transit), {@link #delayAfterApply(Duration)} (apply, then wait before answering) and
 * If the client gives up on a delayed write, the write still lands later. A stubbed answer or a broken connection
 * is WireMock's (UpstreamFaultsIT): this server is storage, and answers as storage does.
 *
 * <p>Every request is recorded ({@link #received()}, {@link #receivedHeaders()}, {@link #requestCount()}), and
 * every applied write too ({@link #applied()}). Bodies are streamed: {@link #discardBodies(boolean)} keeps only
 * the byte count and CRC32C of each body, so gigabytes can pass without being held in memory.
 *
 * <p>All methods are thread-safe. Setters return {@code this} for chaining.
 */
public final class TestUpstream implements AutoCloseable {

    /** What the store holds for one key. {@code body} is null when the body was discarded. */
    private record Entry(byte[] body, String etag, long bytes, long crc32c) {
    }

    private final HttpServer server;
    private final ExecutorService executor;
    private final ConcurrentHashMap<String, ReentrantLock> locks = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Entry> store = new ConcurrentHashMap<>();
    private final AtomicLong etagCounter = new AtomicLong();
    private final AtomicInteger inFlight = new AtomicInteger();

    /** Guards {@link #applied}, {@link #received} and {@link #applySeq}; also the monitor for waiters. */
    private final Object historyLock = new Object();
    private final List<AppliedWrite> applied = new ArrayList<>();
    private final List<ReceivedRequest> received = new ArrayList<>();
    private long applySeq;

    private volatile boolean ignoreConditions;
    private volatile boolean discardBodies;
    private volatile Duration delayWrites = Duration.ZERO;
    private volatile Duration delayAfterApply = Duration.ZERO;

    private TestUpstream(HttpServer server, ExecutorService executor) {
        this.server = server;
        this.executor = executor;
    }

    /** Starts an upstream on {@code 127.0.0.1} and an ephemeral port, with virtual-thread handlers. */
    public static TestUpstream start() {
        try {
            return start(HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the test upstream", e);
        }
    }

    /**
     * Starts an HTTPS upstream (see {@link TestPki}).
     *
     * @param context          the server's certificate and key, and the CA client certificates are checked against
     * @param clientAuthRequired whether a client must present a certificate the context trusts (mutual TLS)
     */
    public static TestUpstream startHttps(javax.net.ssl.SSLContext context, boolean clientAuthRequired) {
        try {
            com.sun.net.httpserver.HttpsServer server = com.sun.net.httpserver.HttpsServer.create(
                    new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 1024);
            server.setHttpsConfigurator(new com.sun.net.httpserver.HttpsConfigurator(context) {
                @Override
                public void configure(com.sun.net.httpserver.HttpsParameters params) {
                    javax.net.ssl.SSLParameters ssl = context.getDefaultSSLParameters();
                    ssl.setNeedClientAuth(clientAuthRequired);
                    params.setSSLParameters(ssl);
                }
            });
            return start(server);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the test upstream", e);
        }
    }

    private static TestUpstream start(HttpServer server) {
        {
            ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
            TestUpstream upstream = new TestUpstream(server, executor);
            server.setExecutor(executor);
            server.createContext("/", upstream::handle);
            server.start();
            return upstream;
        }
    }

    /** {@code http://127.0.0.1:<port>} ({@code https://} for {@link #startHttps}; no trailing slash). */
    public URI baseUri() {
        return URI.create((server instanceof com.sun.net.httpserver.HttpsServer ? "https" : "http") + "://127.0.0.1:"
                + port());
    }

    /** The URI of a path on this upstream, e.g. {@code uri("/docs/a")}. */
    public URI uri(String path) {
        return URI.create(baseUri() + (path.startsWith("/") ? path : "/" + path));
    }

    /** The port the upstream listens on. */
    public int port() {
        return server.getAddress().getPort();
    }

    // ---------------------------------------------------------------- switches

    /** When true, {@code If-Match}/{@code If-None-Match} are ignored: every write is applied (a naive upstream). */
    public TestUpstream ignoreConditions(boolean ignore) {
        this.ignoreConditions = ignore;
        return this;
    }

    /**
     * Holds every later {@code PUT}/{@code DELETE} this long after its body has been received and BEFORE the
     * precondition check and the write. The delay runs outside the key lock, so writes from different clients
     * still race at the moment they land. A write whose client has gone away still lands.
     */
    public TestUpstream delayWrites(Duration delay) {
        this.delayWrites = requireNonNegative(delay);
        return this;
    }

    /** Applies each later {@code PUT}/{@code DELETE}, releases the key, then waits this long before answering. */
    public TestUpstream delayAfterApply(Duration delay) {
        this.delayAfterApply = requireNonNegative(delay);
        return this;
    }

    /**
     * When true, later PUT bodies are streamed through a CRC32C and dropped: only {@link #bytesReceived(String)}
     * and {@link #crc32c(String)} know them, {@link #content(String)} throws, a GET answers an empty body with
     * {@code X-Body-Bytes} and {@code X-Body-Crc32c} headers, and {@link AppliedWrite#body()} is null. (CRC32C, not
     * a cryptographic digest: it is an intrinsic on C1, where the test JVMs run; it catches a relay's lost,
     * repeated or changed bytes, which is what a test of streaming asks.)
     */
    public TestUpstream discardBodies(boolean discard) {
        this.discardBodies = discard;
        return this;
    }

    // ---------------------------------------------------------------- observations

    /** The writes applied so far, in apply order (a snapshot). */
    public List<AppliedWrite> applied() {
        synchronized (historyLock) {
            return List.copyOf(applied);
        }
    }

    /** The writes applied so far to one path, in apply order (a snapshot). */
    public List<AppliedWrite> applied(String path) {
        synchronized (historyLock) {
            return applied.stream().filter(w -> w.path().equals(path)).toList();
        }
    }

    /** The bodies applied to {@code path} as UTF-8 text, in apply order; a DELETE appears as {@code null}. */
    public List<String> appliedBodies(String path) {
        List<String> out = new ArrayList<>();
        for (AppliedWrite w : applied(path)) {
            out.add(w.bodyText());
        }
        return out;
    }

    /**
     * The current body at {@code path} (a copy), or empty if there is none.
     *
     * @throws IllegalStateException if the body was stored in discard mode
     */
    public Optional<byte[]> content(String path) {
        Entry e = store.get(path);
        if (e == null) {
            return Optional.empty();
        }
        if (e.body() == null) {
            throw new IllegalStateException("the body at " + path + " was discarded (discardBodies mode)");
        }
        return Optional.of(e.body().clone());
    }

    /** The current body at {@code path} as UTF-8 text, or empty. */
    public Optional<String> contentText(String path) {
        return content(path).map(b -> new String(b, StandardCharsets.UTF_8));
    }

    /** Every path stored now (raw, as received) with its body as UTF-8 text (a snapshot). */
    public Map<String, String> contents() {
        Map<String, String> out = new TreeMap<>();
        store.forEach((path, e) -> out.put(path, e.body() == null
                ? "<discarded, crc32c " + Long.toHexString(e.crc32c()) + ">"
                : new String(e.body(), StandardCharsets.UTF_8)));
        return out;
    }

    /** The current ETag at {@code path} (with quotes), or empty. */
    public Optional<String> etag(String path) {
        return Optional.ofNullable(store.get(path)).map(Entry::etag);
    }

    /** The size of the body currently stored at {@code path}, or -1 if there is none. Works in both modes. */
    public long bytesReceived(String path) {
        Entry e = store.get(path);
        return e == null ? -1 : e.bytes();
    }

    /** The CRC32C of the body currently stored at {@code path}, or -1 if there is none. Works in both modes. */
    public long crc32c(String path) {
        Entry e = store.get(path);
        return e == null ? -1 : e.crc32c();
    }

    /** The headers of every request received, in arrival order (names lower-cased). */
    public List<Map<String, List<String>>> receivedHeaders() {
        synchronized (historyLock) {
            return received.stream().map(ReceivedRequest::headers).toList();
        }
    }

    /** Every request received, in arrival order. */
    public List<ReceivedRequest> received() {
        synchronized (historyLock) {
            return List.copyOf(received);
        }
    }

    /** How many requests were received (including failed, rejected and still-delayed ones). */
    public int requestCount() {
        synchronized (historyLock) {
            return received.size();
        }
    }

    /** How many requests are being handled right now (e.g. held by {@link #delayWrites(Duration)}). */
    public int inFlight() {
        return inFlight.get();
    }

    /**
     * Waits until at least {@code count} writes have been applied in total.
     *
     * @return whether that happened within {@code timeout}
     */
    public boolean awaitApplied(int count, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (historyLock) {
            while (applied.size() < count) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(historyLock, left);
            }
            return true;
        }
    }

    /**
     * Waits until no request is being handled (all delayed writes have landed or been rejected).
     *
     * @return whether that happened within {@code timeout}
     */
    public boolean awaitQuiet(Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (historyLock) {
            while (inFlight.get() > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(historyLock, Math.min(left, TimeUnit.MILLISECONDS.toNanos(20)));
            }
            return true;
        }
    }

    /**
     * Empties the store and the records and turns every switch off (conditions honoured, no delays, bodies
     * kept). The ETag counter keeps counting, so an ETag is never reused. Requests in flight
     * during a reset may still land afterwards.
     */
    public void reset() {
        ignoreConditions = false;
        discardBodies = false;
        delayWrites = Duration.ZERO;
        delayAfterApply = Duration.ZERO;
        synchronized (historyLock) {
            store.clear();
            applied.clear();
            received.clear();
            applySeq = 0;
        }
    }

    /** Stops the server at once; delayed writes still pending are abandoned (never applied). */
    @Override
    public void close() {
        server.stop(0);
        executor.shutdownNow();
    }

    // ---------------------------------------------------------------- handling

    private void handle(HttpExchange ex) {
        inFlight.incrementAndGet();
        try (ex) {
            String method = ex.getRequestMethod().toUpperCase(Locale.ROOT);
            String path = ex.getRequestURI().getRawPath();
            Map<String, List<String>> headers = lowerCased(ex.getRequestHeaders());
            synchronized (historyLock) {
                received.add(new ReceivedRequest(method, path, ex.getRequestURI().getRawQuery(), headers,
                        System.nanoTime()));
            }
            switch (method) {
                case "GET", "HEAD" -> read(ex, path, method.equals("HEAD"));
                case "PUT", "DELETE" -> write(ex, method, path, headers);
                default -> {
                    ex.getRequestBody().transferTo(OutputStream.nullOutputStream());
                    ex.getResponseHeaders().set("Allow", "GET, HEAD, PUT, DELETE");
                    send(ex, 405, null);
                }
            }
        } catch (IOException | InterruptedException e) {
            // the client went away, or the upstream is closing: nothing to answer
        } finally {
            inFlight.decrementAndGet();
            synchronized (historyLock) {
                historyLock.notifyAll();
            }
        }
    }

    private void read(HttpExchange ex, String path, boolean head) throws IOException {
        ex.getRequestBody().transferTo(OutputStream.nullOutputStream());
        Entry e = store.get(path);
        if (e == null) {
            send(ex, 404, null);
            return;
        }
        ex.getResponseHeaders().set("ETag", e.etag());
        if (e.body() == null) {
            ex.getResponseHeaders().set("X-Body-Bytes", Long.toString(e.bytes()));
            ex.getResponseHeaders().set("X-Body-Crc32c", Long.toHexString(e.crc32c()));
        }
        byte[] body = e.body() == null ? new byte[0] : e.body();
        if (head) {
            ex.sendResponseHeaders(200, -1);
        } else {
            send(ex, 200, body);
        }
    }

    private void write(HttpExchange ex, String method, String path, Map<String, List<String>> headers)
            throws IOException, InterruptedException {
        boolean discard = discardBodies;
        Duration before = delayWrites;
        Duration after = delayAfterApply;
        Entry incoming = method.equals("PUT") ? receive(ex.getRequestBody(), discard) : null;
        if (method.equals("DELETE")) {
            ex.getRequestBody().transferTo(OutputStream.nullOutputStream());
        }
        sleep(before);

        int status;
        String etag = null;
        ReentrantLock lock = locks.computeIfAbsent(path, k -> new ReentrantLock());
        lock.lockInterruptibly();
        try {
            Entry current = store.get(path);
            if (!ignoreConditions && !preconditionsHold(headers, current)) {
                status = 412;
            } else if (incoming != null) {
                etag = "\"v" + etagCounter.incrementAndGet() + "\"";
                store.put(path, new Entry(incoming.body(), etag, incoming.bytes(), incoming.crc32c()));
                record(path, method, incoming.body(), headers);
                status = current == null ? 201 : 204;
            } else if (current == null) {
                status = 404;
            } else {
                store.remove(path);
                record(path, method, null, headers);
                status = 204;
            }
        } finally {
            lock.unlock();
        }
        if (etag != null) {
            ex.getResponseHeaders().set("ETag", etag);
        }
        if (status == 201 || status == 204) {
            sleep(after);
        }
        send(ex, status, null);
    }

    private void record(String path, String method, byte[] body, Map<String, List<String>> headers) {
        synchronized (historyLock) {
            applied.add(new AppliedWrite(path, method, body, headers, ++applySeq, System.nanoTime()));
            historyLock.notifyAll();
        }
    }

    /** Reads a body, always checksumming it, keeping the bytes unless {@code discard}. */
    private static Entry receive(InputStream in, boolean discard) throws IOException {
        CRC32C digest = new CRC32C();
        ByteArrayOutputStream kept = discard ? null : new ByteArrayOutputStream();
        byte[] buf = new byte[64 * 1024];
        long total = 0;
        for (int n; (n = in.read(buf)) != -1; ) {
            digest.update(buf, 0, n);
            if (kept != null) {
                kept.write(buf, 0, n);
            }
            total += n;
        }
        return new Entry(kept == null ? null : kept.toByteArray(), null, total, digest.getValue());
    }

    /** RFC 9110 §13.1.1–13.1.2 for a state-changing method. */
    static boolean preconditionsHold(Map<String, List<String>> headers, String currentEtag) {
        List<String> ifMatch = tags(headers.get("if-match"));
        if (ifMatch != null) {
            if (currentEtag == null) {
                return false;
            }
            boolean match = ifMatch.stream()
                    .anyMatch(t -> t.equals("*") || (!t.startsWith("W/") && t.equals(currentEtag)));
            if (!match) {
                return false;
            }
        }
        List<String> ifNoneMatch = tags(headers.get("if-none-match"));
        if (ifNoneMatch != null && currentEtag != null) {
            String opaque = stripWeak(currentEtag);
            return ifNoneMatch.stream().noneMatch(t -> t.equals("*") || stripWeak(t).equals(opaque));
        }
        return true;
    }

    private static boolean preconditionsHold(Map<String, List<String>> headers, Entry current) {
        return preconditionsHold(headers, current == null ? null : current.etag());
    }

    private static String stripWeak(String tag) {
        return tag.startsWith("W/") ? tag.substring(2) : tag;
    }

    /** The entity tags of a (possibly repeated) list header, or null if the header is absent. */
    private static List<String> tags(List<String> values) {
        if (values == null) {
            return null;
        }
        List<String> out = new ArrayList<>();
        for (String v : values) {
            for (String part : v.split(",")) {
                String t = part.trim();
                if (!t.isEmpty()) {
                    out.add(t);
                }
            }
        }
        return out;
    }

    private static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        if (body == null || body.length == 0) {
            ex.sendResponseHeaders(status, -1);
        } else {
            ex.sendResponseHeaders(status, body.length);
            try (OutputStream out = ex.getResponseBody()) {
                out.write(body);
            }
        }
    }

    private static Map<String, List<String>> lowerCased(Map<String, List<String>> headers) {
        Map<String, List<String>> out = new TreeMap<>();
        headers.forEach((name, values) ->
                out.computeIfAbsent(name.toLowerCase(Locale.ROOT), k -> new ArrayList<>()).addAll(values));
        out.replaceAll((k, v) -> List.copyOf(v));
        return Collections.unmodifiableMap(out);
    }

    private static void sleep(Duration d) throws InterruptedException {
        if (!d.isZero()) {
            Thread.sleep(d);
        }
    }

    private static Duration requireNonNegative(Duration d) {
        if (d.isNegative()) {
            throw new IllegalArgumentException("negative delay: " + d);
        }
        return d;
    }

}
