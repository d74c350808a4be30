package io.stockade.proxy.upstream;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.net.URI;
import java.net.UnknownHostException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Arrays;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocket;

import org.jspecify.annotations.Nullable;

/**
 * The proxy's HTTP/1.1 client for its upstreams (the http backend, the s3 backend's store).
 * <p>
 * Written for a proxy rather than for an application, so that what leaves is exactly what the backend built:
 * <ul>
 *     <li>the request target is sent byte for byte as given (no URI parsing, no normalising of dot-segments, no
 *     re-encoding, the query never joined to the path); {@link Request} refuses only bytes that cannot travel in
 *     a request line;</li>
 *     <li>the request head and the start of the body go out in one write; a body that cannot be read to its end
 *     never completes the upstream request (the connection is closed before its last chunk or its last declared
 *     byte), so a cut-off body is never applied as a shorter one;</li>
 *     <li>the answer's body is framed by RFC 9112 section 6.3: none after HEAD, 1xx, 204 and 304, then
 *     {@code Transfer-Encoding: chunked}, then {@code Content-Length}, else until the connection closes;</li>
 *     <li>keep-alive connections are pooled per host, most recently used first, at most {@code maxIdle} of them;
 *     before a request is written to one, a non-blocking read checks it: the upstream's close, or any byte no
 *     request asked for (bytes sent late, after an answer was read), and the connection is dropped, never read as
 *     the next answer. One system call per reuse; an earlier design skipped it for connections back in the pool
 *     for less than 50 ms, and there late bytes became the next request's answer; another parked each idle
 *     connection in a read on a virtual thread, which cost more CPU a request than the read it saved
 *     (docs/benchmarks.md). What arrives between the check and the request's write is the window left, as for a
 *     close right after the check;</li>
 *     <li>a connection given up on before its exchange ended (a timeout, a failed write, an abandoned body, an
 *     answer not read to its end) is <em>aborted</em>: closed with {@code SO_LINGER} 0, so the kernel discards
 *     what it still holds of the request and sends RST, instead of retransmitting it for as long as the network
 *     stays cut and delivering it after the proxy answered (a graceful close keeps unsent bytes for tens of
 *     seconds, a minute and more). A write blocked longer than the request's timeout (an upstream that stopped
 *     reading, a network that drops every segment once the send buffer is full) is aborted too, by
 *     {@link SendWatchdog}: the JDK bounds socket reads ({@code SO_TIMEOUT}), not writes.</li>
 * </ul>
 * What RST cannot recall: bytes the upstream's kernel already received (an application reads them after the
 * reset; Linux delivers queued bytes before {@code ECONNRESET}), segments still in flight in the network, and a
 * request the upstream application already read. The serialized class's {@code settle} covers those
 * (policies/README.md, "timeout and settle").
 * Failures are {@link UpstreamFailure}s that say whether any byte of the request may have reached the upstream,
 * which the backends need to tell "nothing was sent" (502) from "outcome unknown" (504).
 */
public final class UpstreamClient implements AutoCloseable {
    private final boolean tls;
    private final int port;
    /** Null only for a plain-http client. */
    private final @Nullable SSLContext sslContext;
    private final int connectTimeoutMillis;
    private final int maxIdle;
    private final Map<String, Pool> pools = new ConcurrentHashMap<>();
    private volatile boolean closed;

    private UpstreamClient(boolean tls, int port, @Nullable SSLContext sslContext, Duration connectTimeout,
                           int maxIdle) {
        this.tls = tls;
        this.port = port;
        this.sslContext = sslContext;
        this.connectTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, Math.max(1, connectTimeout.toMillis()));
        this.maxIdle = maxIdle;
    }

    /**
     * A client for the scheme and port of {@code url} (the host is given per request).
     *
     * @param sslContext whom to trust and which certificate to present over https, or null for the JDK's default
     * @param maxIdle    the most idle keep-alive connections kept per host
     */
    public static UpstreamClient create(URI url, @Nullable SSLContext sslContext, Duration connectTimeout,
                                        int maxIdle) {
        String scheme = url.getScheme().toLowerCase(Locale.ROOT);
        boolean tls = scheme.equals("https");
        if (!tls && !scheme.equals("http")) {
            throw new IllegalArgumentException("not an http or https URL: " + url);
        }
        int port = url.getPort() >= 0 ? url.getPort() : tls ? 443 : 80;
        try {
            return new UpstreamClient(tls, port, tls && sslContext == null ? SSLContext.getDefault() : sslContext,
                    connectTimeout, maxIdle);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("the JDK has no default TLS context", e);
        }
    }

    /** The value of a {@code Host} header for {@code host} on this client's port (the port left out when default). */
    public String authority(String host) {
        String name = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
        return port == (tls ? 443 : 80) ? name : name + ":" + port;
    }

    /**
     * Starts a request. Add headers to it, then {@link Request#send} it.
     *
     * @param host   the host to connect to (a name or an IP literal, with no port; IPv6 with or without brackets)
     * @param target the request target exactly as it is to be sent (origin form)
     * @throws IllegalArgumentException if the method or target holds a byte a request line cannot carry
     */
    public Request request(String method, String host, String target) {
        return new Request(this, method, host, target);
    }

    /** {@code host:port} of the upstream at {@code host} (IPv6 in brackets), as failures name it. */
    public String address(String host) {
        String name = host.indexOf(':') >= 0 && !host.startsWith("[") ? "[" + host + "]" : host;
        return name + ":" + port;
    }

    /**
     * A start-up check: opens a connection to {@code host} (with the TLS handshake over https) and keeps it in the
     * pool for the first request.
     *
     * @return why the upstream cannot be reached, naming it; empty when it can
     */
    public Optional<UpstreamFailure> probe(String host) {
        try {
            release(connection(host));
            return Optional.empty();
        } catch (UpstreamFailure e) {
            return Optional.of(e.at(address(host)));
        }
    }

    /** A pooled connection for {@code host}, or a new one. */
    Connection connection(String host) throws UpstreamFailure {
        if (closed) {
            throw new UpstreamFailure("the client is closed", false, false, null);
        }
        Pool pool = pools.computeIfAbsent(host, h -> new Pool());
        Connection idle;
        while ((idle = pool.poll()) != null) {
            if (idle.stillOpen()) {
                return idle;
            }
            idle.close();
        }
        return open(host);
    }

    void release(Connection connection) {
        if (closed || !pools.computeIfAbsent(connection.host, h -> new Pool()).offer(connection, maxIdle)) {
            connection.close();
        } else if (closed) {
            // close() ran between the check and the offer, and may have emptied the pools before it: nothing would
            // take the connection again (and the send watchdog would keep it for ever)
            pools.values().forEach(Pool::closeAll);
        }
    }

    private Connection open(String host) throws UpstreamFailure {
        String literal = host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
        SocketChannel channel = null;
        try {
            InetAddress address = InetAddress.getByName(literal);
            if (literal.matches("[0-9.]+") || literal.contains(":")) {
                // Keep the literal as the name: TLS then checks the certificate's IP entries, not a reverse lookup.
                address = InetAddress.getByAddress(literal, address.getAddress());
            }
            channel = SocketChannel.open();
            Socket socket = channel.socket();
            socket.setTcpNoDelay(true);
            socket.setKeepAlive(true);
            socket.connect(new InetSocketAddress(address, port), connectTimeoutMillis);
            if (!tls) {
                return new Connection(host, channel, socket);
            }
        } catch (UnknownHostException e) {
            closeQuietly(channel);
            throw new UpstreamFailure("unknown host " + literal, false, false, e);
        } catch (ConnectException e) {
            closeQuietly(channel);
            throw new UpstreamFailure("refused the connection", false, false, e);
        } catch (SocketTimeoutException e) {
            closeQuietly(channel);
            throw new UpstreamFailure("did not accept the connection within " + connectTimeoutMillis + " ms",
                    false, false, e);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new UpstreamFailure("connecting failed: " + e.getMessage(), false, false, e);
        }
        try {
            SSLSocket ssl = (SSLSocket) Objects.requireNonNull(sslContext, "create gives an https client one")
                    .getSocketFactory().createSocket(channel.socket(), literal, port,
                    true);
            SSLParameters params = ssl.getSSLParameters();
            params.setEndpointIdentificationAlgorithm("HTTPS");
            ssl.setSSLParameters(params);
            ssl.setSoTimeout(connectTimeoutMillis);
            ssl.startHandshake(); // before any byte of the request: a refusal here sent nothing
            return new Connection(host, channel, ssl);
        } catch (IOException e) {
            closeQuietly(channel);
            throw new UpstreamFailure("the TLS handshake failed: " + e.getMessage(), false, false, e);
        }
    }

    private static void closeQuietly(@Nullable SocketChannel channel) {
        if (channel != null) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // nothing to do
            }
        }
    }

    /** Idle connections currently pooled, over all hosts (tests). */
    public int idleConnections() {
        return pools.values().stream().mapToInt(Pool::size).sum();
    }

    @Override
    public void close() {
        closed = true;
        pools.values().forEach(Pool::closeAll);
    }

    /** Idle connections of one host, most recently used first. */
    private static final class Pool {
        private final ArrayDeque<Connection> idle = new ArrayDeque<>();

        synchronized Connection poll() {
            return idle.pollFirst();
        }

        synchronized boolean offer(Connection connection, int max) {
            if (idle.size() >= max) {
                return false;
            }
            idle.addFirst(connection);
            return true;
        }

        synchronized int size() {
            return idle.size();
        }

        void closeAll() {
            Connection c;
            while ((c = poll()) != null) {
                c.close();
            }
        }
    }

    /**
     * A request being built: the head is written into one buffer as headers are added.
     */
    public static final class Request {
        private final UpstreamClient client;
        private final String host;
        private final HeadBuffer head = new HeadBuffer();
        private final boolean headRequest;

        Request(UpstreamClient client, String method, String host, String target) {
            this.client = client;
            this.host = host;
            this.headRequest = method.equals("HEAD");
            checkToken(method, "method");
            for (int i = 0; i < target.length(); i++) {
                char c = target.charAt(i);
                if (c <= 0x20 || c >= 0x7f) {
                    throw new IllegalArgumentException("the request target has a byte a request line cannot carry"
                            + " (0x" + Integer.toHexString(c) + ") at position " + (i + 1));
                }
            }
            head.ascii(method).put(' ').ascii(target).ascii(" HTTP/1.1\r\nHost: ").ascii(client.authority(host))
                    .crlf();
        }

        /**
         * Adds a header. Names must be HTTP tokens; values may not hold CR, LF or NUL (the value of a header the
         * listener parsed never does; a value from elsewhere, such as a recorded ETag, is checked here too).
         *
         * @throws IllegalArgumentException naming the header when either is not sendable
         */
        public Request header(String name, String value) {
            checkToken(name, "header name");
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '\r' || c == '\n' || c == 0) {
                    throw new IllegalArgumentException("the value of header " + name + " holds a CR, LF or NUL");
                }
            }
            head.ascii(name).put(':').put(' ').latin1(value).crlf();
            return this;
        }

        /** Sends a request with no body (and no {@code Content-Length}, unless added as a header). */
        public UpstreamResponse send(Duration readTimeout) throws UpstreamFailure {
            return send(readTimeout, -2, null);
        }

        /**
         * Sends the request.
         *
         * @param length the body's length, {@code -1} for a chunked body of unknown length
         * @param body   writes the body; if it throws, the request is abandoned unfinished (the connection closed
         *               before the body's end) and its exception is rethrown as it is
         */
        public UpstreamResponse send(Duration readTimeout, long length, @Nullable Body body) throws UpstreamFailure {
            if (body != null && length >= 0) {
                head.ascii("Content-Length: ").ascii(Long.toString(length)).crlf();
            } else if (body != null) {
                head.ascii("Transfer-Encoding: chunked\r\n");
            }
            head.crlf();
            try {
                return exchange(readTimeout, length, body);
            } catch (UpstreamFailure e) {
                throw e.at(client.address(host));
            }
        }

        private UpstreamResponse exchange(Duration readTimeout, long length, @Nullable Body body)
                throws UpstreamFailure {
            Connection connection = client.connection(host);
            boolean done = false;
            try {
                connection.timeout(readTimeout);
                RequestOutput out = new RequestOutput(connection, head, length);
                try {
                    if (body != null) {
                        try {
                            body.writeTo(out);
                        } catch (UpstreamFailure e) {
                            throw e;
                        } catch (IOException | RuntimeException | Error e) {
                            if (out.failure != null) {
                                throw out.failure; // the write to the upstream failed, inside the body writer
                            }
                            throw new AbandonedBody(e, out.sent);
                        }
                    }
                    out.finish();
                } catch (UpstreamFailure e) {
                    if (e instanceof AbandonedBody) {
                        throw e;
                    }
                    // Sending failed: the upstream may have answered before the body's end and closed (RFC 9112
                    // lets it: a 404 for a missing bucket, a 412 for a failed condition). Its answer, if there is
                    // one, is the outcome; only without one is the outcome unknown.
                    UpstreamResponse early = earlyAnswer(client, connection, headRequest, readTimeout);
                    if (early == null) {
                        throw e;
                    }
                    done = true;
                    return early;
                }
                UpstreamResponse response = UpstreamResponse.read(client, connection, headRequest);
                done = true;
                return response;
            } finally {
                if (!done) {
                    connection.abort(); // nothing of an unfinished request may be delivered after the answer
                }
            }
        }
    }

    /** How long the proxy waits for an early answer after sending a request failed. */
    private static final Duration EARLY_ANSWER = Duration.ofSeconds(2);

    /**
     * The answer an upstream sent before the request's end, read after sending failed: a refusal (4xx or 5xx) is
     * taken as the outcome, on a connection never used again; anything else (no answer, a success before the body's
     * end) is not, and null is returned.
     */
    private static @Nullable UpstreamResponse earlyAnswer(UpstreamClient client, Connection connection,
                                                          boolean headRequest, Duration readTimeout) {
        try {
            connection.timeout(readTimeout.compareTo(EARLY_ANSWER) < 0 ? readTimeout : EARLY_ANSWER);
            UpstreamResponse early = UpstreamResponse.read(client, connection, headRequest);
            if (early.status() >= 400) {
                early.neverReuse();
                return early;
            }
            early.neverReuse();
            early.close();
        } catch (UpstreamFailure | RuntimeException e) {
            // no answer to read: the outcome stays unknown
        }
        return null;
    }

    /** Writes a request body. */
    @FunctionalInterface
    public interface Body {
        void writeTo(OutputStream out) throws IOException;
    }

    /**
     * The body writer failed for a reason of its own (the client's body could not be read, it went over a bound):
     * the upstream request was abandoned unfinished. The writer's exception is the cause.
     */
    public static final class AbandonedBody extends UpstreamFailure {
        /**
         * @param reached whether any byte of the request (its head, part of its body) was written to the upstream:
         *                an upstream that writes as it reads may have kept what it got ({@link #requestSent()})
         */
        AbandonedBody(Throwable cause, boolean reached) {
            super("the request body could not be read to its end; the upstream request was abandoned unfinished"
                    + (reached ? " after bytes of it had been sent" : " before any byte of it was sent"), reached,
                    false, cause);
        }
    }

    private static void checkToken(String token, String what) {
        if (token.isEmpty()) {
            throw new IllegalArgumentException("empty " + what);
        }
        for (int i = 0; i < token.length(); i++) {
            char c = token.charAt(i);
            if (c <= 0x20 || c >= 0x7f || "\"(),/:;<=>?@[\\]{}".indexOf(c) >= 0) {
                throw new IllegalArgumentException("the " + what + " '" + token + "' is not an HTTP token");
            }
        }
    }

    /** A growable byte buffer for the request head. */
    static final class HeadBuffer {
        byte[] bytes = new byte[512];
        int size;

        HeadBuffer put(char c) {
            ensure(1);
            bytes[size++] = (byte) c;
            return this;
        }

        HeadBuffer ascii(String s) {
            ensure(s.length());
            s.getBytes(0, s.length(), bytes, size);
            size += s.length();
            return this;
        }

        /** Header values are ISO-8859-1 on the wire, as the listener read them. */
        HeadBuffer latin1(String s) {
            ensure(s.length());
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                bytes[size++] = (byte) (c <= 0xff ? c : '?');
            }
            return this;
        }

        HeadBuffer crlf() {
            ensure(2);
            bytes[size++] = '\r';
            bytes[size++] = '\n';
            return this;
        }

        private void ensure(int more) {
            if (size + more > bytes.length) {
                bytes = Arrays.copyOf(bytes, Math.max(bytes.length * 2, size + more));
            }
        }
    }

    /**
     * The request's body stream: the head and the first bytes of the body leave in one write; a chunked body is
     * framed here. Write failures are {@link UpstreamFailure}s (the request may have reached the upstream).
     */
    private static final class RequestOutput extends OutputStream {
        private static final int BUFFER = 16 * 1024;
        private final Connection connection;
        private final long length;
        private byte[] buffer;
        private int size;
        private long written;
        @Nullable UpstreamFailure failure;
        /** Whether any byte of the request was written to the connection (it may have reached the upstream). */
        boolean sent;

        RequestOutput(Connection connection, HeadBuffer head, long length) {
            this.connection = connection;
            this.length = length;
            // room for the head and a declared body up to BUFFER (a 1 KiB PUT needs ~1.5 KiB, not 16)
            int room = length >= 0 ? (int) Math.min(BUFFER, head.size + length) : BUFFER;
            this.buffer = head.bytes.length >= room ? head.bytes : Arrays.copyOf(head.bytes, room);
            this.size = head.size;
        }

        @Override
        public void write(int b) throws IOException {
            write(new byte[] {(byte) b}, 0, 1);
        }

        @Override
        public void write(byte[] b, int off, int len) throws IOException {
            if (len == 0) {
                return;
            }
            if (length >= 0 && written + len > length) {
                throw new IOException("the body is longer than its declared length " + length);
            }
            written += len;
            if (length < 0) {
                byte[] chunkHead = (Integer.toHexString(len) + "\r\n").getBytes(StandardCharsets.US_ASCII);
                append(chunkHead, 0, chunkHead.length);
                append(b, off, len);
                append(CRLF, 0, 2);
            } else {
                append(b, off, len);
            }
        }

        private void append(byte[] b, int off, int len) throws UpstreamFailure {
            if (size + len <= buffer.length) {
                System.arraycopy(b, off, buffer, size, len);
                size += len;
                return;
            }
            flushBuffer();
            if (len >= buffer.length) {
                raw(b, off, len);
            } else {
                System.arraycopy(b, off, buffer, 0, len);
                size = len;
            }
        }

        private void flushBuffer() throws UpstreamFailure {
            if (size > 0) {
                raw(buffer, 0, size);
                size = 0;
            }
        }

        private void raw(byte[] b, int off, int len) throws UpstreamFailure {
            sent = true;
            connection.writeStarts();
            try {
                connection.out.write(b, off, len);
            } catch (IOException e) {
                failure = sendFailed(connection, e);
                throw failure;
            } finally {
                connection.writeEnds();
            }
        }

        private static UpstreamFailure sendFailed(Connection connection, IOException e) {
            if (connection.abortedByWatchdog) {
                return new UpstreamFailure("did not take the request within the timeout (a write blocked "
                        + connection.writeTimeoutNanos / 1_000_000 + " ms); the connection was reset", true, true, e);
            }
            return new UpstreamFailure("sending the request failed: " + e.getMessage(), true,
                    e instanceof SocketTimeoutException, e);
        }

        /** Ends the body (last chunk, or checks the declared length) and sends what is buffered. */
        void finish() throws UpstreamFailure {
            if (length >= 0 && written != length) {
                throw new AbandonedBody(new IOException("the body ended " + (length - written)
                        + " bytes short of its declared length " + length), sent);
            }
            if (length == -1) {
                append(LAST_CHUNK, 0, LAST_CHUNK.length);
            }
            flushBuffer();
            connection.writeStarts();
            try {
                connection.out.flush();
            } catch (IOException e) {
                throw sendFailed(connection, e);
            } finally {
                connection.writeEnds();
            }
        }

        private static final byte[] CRLF = {'\r', '\n'};
        private static final byte[] LAST_CHUNK = "0\r\n\r\n".getBytes(StandardCharsets.US_ASCII);
    }

    /** One keep-alive connection. */
    static final class Connection {
        final String host;
        private final SocketChannel channel;
        private final Socket socket;
        final OutputStream out;
        final InputStream in;
        /** Bytes read from the socket and not yet used: the next answer's start, or the body's. */
        final byte[] buffer = new byte[16 * 1024];
        /**
         * The liveness check's one byte, direct (a heap buffer would make the channel borrow and copy through a
         * temporary direct one on every check); made at the first check, so a connection used once (an upstream
         * that answers {@code Connection: close}) allocates none. Only the thread that took the connection from the
         * pool uses it.
         */
        private @Nullable ByteBuffer probe;
        int position;
        int limit;
        /** How long one write may block (the request's timeout); {@link SendWatchdog} aborts it past that. */
        volatile long writeTimeoutNanos = Long.MAX_VALUE;
        /** When the write in progress started ({@link System#nanoTime}), or {@link #NOT_WRITING}. */
        volatile long writeStartedAt = NOT_WRITING;
        /** The watchdog aborted this connection: a write blocked past the timeout. */
        volatile boolean abortedByWatchdog;
        static final long NOT_WRITING = Long.MIN_VALUE;

        Connection(String host, SocketChannel channel, Socket socket) throws IOException {
            this.host = host;
            this.channel = channel;
            this.socket = socket;
            this.out = socket.getOutputStream();
            this.in = socket.getInputStream();
            SendWatchdog.watch(this);
        }

        void timeout(Duration timeout) throws UpstreamFailure {
            writeTimeoutNanos = Math.max(1, timeout.toNanos());
            try {
                socket.setSoTimeout((int) Math.min(Integer.MAX_VALUE, Math.max(1, timeout.toMillis())));
            } catch (IOException e) {
                throw new UpstreamFailure("the connection is unusable: " + e.getMessage(), false, false, e);
            }
        }

        /**
         * Whether the idle connection is still open: a non-blocking read of the plain socket finds nothing to read.
         * End of stream (the upstream closed it) or any byte (which no idle connection may receive; for TLS, a
         * close_notify alert) means the connection cannot carry another request.
         */
        boolean stillOpen() {
            if (position != limit) {
                return false;
            }
            try {
                channel.configureBlocking(false);
                try {
                    ByteBuffer one = probe;
                    if (one == null) {
                        one = ByteBuffer.allocateDirect(1);
                        probe = one;
                    }
                    one.clear();
                    return channel.read(one) == 0;
                } finally {
                    channel.configureBlocking(true);
                }
            } catch (IOException | RuntimeException e) {
                return false;
            }
        }

        /** Fills the buffer from the socket; -1 at end of stream. */
        int fill() throws IOException {
            if (position == limit) {
                position = 0;
                limit = 0;
            }
            if (limit == buffer.length) {
                System.arraycopy(buffer, position, buffer, 0, limit - position);
                limit -= position;
                position = 0;
            }
            int n = in.read(buffer, limit, buffer.length - limit);
            if (n > 0) {
                limit += n;
            }
            return n;
        }

        void writeStarts() {
            writeStartedAt = System.nanoTime();
        }

        void writeEnds() {
            writeStartedAt = NOT_WRITING;
        }

        /** Whether a write has been blocked for longer than the request's timeout at {@code now}. */
        boolean writeOverdue(long now) {
            long started = writeStartedAt;
            return started != NOT_WRITING && now - started > writeTimeoutNanos;
        }

        /** A graceful close: what was sent is delivered, then FIN (a connection whose exchanges all ended). */
        void close() {
            SendWatchdog.unwatch(this);
            try {
                socket.close();
            } catch (IOException ignored) {
                // closing is all we wanted
            }
            closeQuietly(channel);
        }

        /**
         * An abortive close: {@code SO_LINGER} 0, so the kernel discards what it has not yet sent and answers RST;
         * nothing of the request leaves this host after it. Safe from another thread while a read or write blocks
         * on the connection (that call fails at once). Only the plain channel is closed: a TLS socket's close would
         * first write a close_notify alert, and could wait for a write in progress.
         */
        void abort() {
            SendWatchdog.unwatch(this);
            try {
                channel.setOption(StandardSocketOptions.SO_LINGER, 0);
            } catch (IOException | RuntimeException e) {
                // already closed: nothing is left to send
            }
            closeQuietly(channel);
        }
    }
}
