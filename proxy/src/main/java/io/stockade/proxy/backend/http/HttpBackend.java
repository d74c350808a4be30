package io.stockade.proxy.backend.http;

import io.helidon.common.socket.SocketOptions;
import io.helidon.http.Header;
import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.http.Method;
import io.helidon.http.Status;
import io.helidon.webclient.api.HttpClientResponse;
import io.helidon.webclient.api.WebClient;
import io.helidon.webclient.api.WebClientConfig;
import io.helidon.webclient.http1.Http1Client;
import io.helidon.webclient.http1.Http1ClientProtocolConfig;
import io.helidon.webclient.http1.Http1ClientRequest;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.BodyBounds;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.FenceClass;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.http.AbandonedConnection;
import io.stockade.proxy.http.UpstreamTls;
import io.stockade.proxy.http.Problem;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.ConnectException;
import java.net.NoRouteToHostException;
import java.net.SocketTimeoutException;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * A plain HTTP upstream, reached through a pooled keep-alive client. Bodies stream both ways.
 * <p>
 * Two classes, chosen by the policy's {@code conditional}:
 * <ul>
 *     <li>{@code none} &mdash; <em>serialized</em>: the engine holds the scope while {@link #write} forwards the
 *     request as it is. A failure after the request left is an unknown outcome.</li>
 *     <li>{@code if-match} &mdash; <em>atomic</em>: the write carries {@code If-Match} with the ETag recorded
 *     under the admitted token (or {@code If-None-Match: *} when the resource is known absent), so the upstream
 *     itself refuses a write based on a version some other write has replaced. When no ETag is recorded, one is
 *     read with HEAD and recorded first, by compare-and-set on the token, so a version can only be adopted by the
 *     scope's current highest token. A 412 is re-checked against the store: a higher token means stale (409);
 *     otherwise the resource changed under an equal token and the client is told to retry (409
 *     {@code upstream-conflict}); the body is streamed, so the proxy does not replay it.</li>
 * </ul>
 */
public final class HttpBackend implements Backend {
    private static final Logger LOG = Logger.getLogger(HttpBackend.class.getName());
    private static final HeaderName X_FORWARDED_FOR = HeaderNames.create("X-Forwarded-For");
    private static final HeaderName X_FORWARDED_HOST = HeaderNames.create("X-Forwarded-Host");
    private static final HeaderName X_FORWARDED_PROTO = HeaderNames.create("X-Forwarded-Proto");
    private static final HeaderName FORWARDED = HeaderNames.create("Forwarded");

    /** The largest copy buffer of a request body (a small body gets one of its declared length). */
    private static final int BODY_BUFFER = 64 * 1024;

    private final BackendConfig.Http config;
    /**
     * The web client's HTTP/1.1 protocol client, used directly: the generic {@code WebClient.method} builds a
     * protocol-neutral request, looks up which protocol serves the endpoint, then builds an HTTP/1.1 request from
     * it (copying every header) and copies the headers back after sending. Only HTTP/1.1 is on the class path, so
     * the lookup always ends here; going straight to it saves a request object and two header copies per request.
     * Built from the same {@link WebClient} configuration (base URI, TLS, socket options, connection cache).
     */
    private final Http1Client client;
    /** {@code scheme://authority/base-path} of the upstream, the part of every upstream URI that never changes. */
    private final String upstreamPrefix;

    private HttpBackend(BackendConfig.Http config, Http1Client client) {
        this.config = config;
        this.client = client;
        String path = config.url().getRawPath();
        String basePath = path == null || path.equals("/") ? "" : path.replaceAll("/+$", "");
        this.upstreamPrefix = config.url().getScheme() + "://" + config.url().getRawAuthority() + basePath;
    }

    /**
     * @throws IOException naming the file when a file of the policy's {@code tls} cannot be read or does not parse
     */
    public static HttpBackend open(BackendConfig.Http config) throws IOException {
        WebClientConfig.Builder builder = WebClient.builder();
        UpstreamTls.configure(builder, config.url(), config.tls(), "backend " + config.url() + " tls");
        WebClient client = builder
                .baseUri(config.url())
                .followRedirects(false)
                .shareConnectionCache(false)
                .connectionCacheSize(config.maxConnections())
                .sendExpectContinue(false)
                .socketOptions(SocketOptions.builder()
                        .connectTimeout(config.connectTimeout())
                        .readTimeout(config.timeout())
                        // Headers and body go out in separate writes: without TCP_NODELAY, Nagle's algorithm and
                        // the upstream's delayed ACK add ~40 ms to every request.
                        .tcpNoDelay(true)
                        .build())
                .build();
        // The request headers are not validated again on the way out: each one is a header of the client's request,
        // which the listener has already validated (Helidon's default, left on), or is built by the proxy from
        // such values and numbers. The one value from elsewhere, the If-Match version (read from the upstream's
        // answers, or imported by an operator), is validated in send(), as the client would have.
        return new HttpBackend(config, client.client(Http1Client.PROTOCOL,
                Http1ClientProtocolConfig.builder().validateRequestHeaders(false).build()));
    }

    @Override
    public FenceClass fenceClass() {
        return config.conditional() == BackendConfig.Conditional.IF_MATCH ? FenceClass.ATOMIC : FenceClass.SERIALIZED;
    }

    @Override
    public Duration settle() {
        // A conditional write that lands late cannot overwrite a newer one; only the serialized class needs it.
        return fenceClass() == FenceClass.SERIALIZED ? config.settle() : Duration.ZERO;
    }

    @Override
    public void forward(Exchange exchange) {
        Sent sent = send(exchange, null, null);
        if (sent instanceof Sent.Failed failed) {
            answerFailure(exchange, failed);
        } else if (sent instanceof Sent.BodyFailed failed) {
            bodyFailed(exchange, failed);
        }
    }

    @Override
    public WriteResult write(Exchange exchange, Admission admission) {
        if (fenceClass() == FenceClass.SERIALIZED) {
            Sent sent = send(exchange, null, null);
            return switch (sent) {
                case Sent.Relayed relayed -> new WriteResult.Answered(relayed.status());
                case Sent.BodyFailed failed -> bodyFailed(exchange, failed);
                case Sent.Failed failed when failed.reachedUpstream() -> new WriteResult.Unknown(failed.reason());
                case Sent.Failed failed -> answerFailure(exchange, failed);
            };
        }
        return conditionalWrite(exchange, admission);
    }

    private WriteResult conditionalWrite(Exchange exchange, Admission admission) {
        String version = admission.previous().version();
        try {
            if (version == null) {
                Optional<String> read = headVersion(exchange);
                if (read.isEmpty()) {
                    return answer(exchange, Problem.of(502, "upstream-unreachable", "Upstream unreachable",
                            "could not read the current version of the resource (HEAD) before the conditional write"));
                }
                version = read.get();
                if (!admission.store().recordVersion(admission.scope(), admission.token(), version)) {
                    return recheck(exchange, admission);
                }
            }
            Sent sent = send(exchange, admission, version);
            if (sent instanceof Sent.BodyFailed failed) {
                return bodyFailed(exchange, failed);
            }
            if (sent instanceof Sent.Failed failed) {
                // A conditional write that arrives late cannot do harm: its If-Match no longer matches once a
                // newer write has landed. Unknown, but no quarantine needed; the engine decides.
                return failed.reachedUpstream() ? new WriteResult.Unknown(failed.reason()) : answerFailure(exchange, failed);
            }
            // A 412 never gets here: send() throws PreconditionFailed for it, before relaying anything.
            return new WriteResult.Answered(((Sent.Relayed) sent).status());
        } catch (PreconditionFailed e) {
            return recheck(exchange, admission);
        } catch (StoreUnavailableException e) {
            return answer(exchange, Problem.of(503, "store-unavailable", "Fence store unavailable",
                    "the upstream version could not be recorded: " + e.getMessage()).with("scope", admission.scope()));
        }
    }

    /** The upstream refused our condition: someone else's write landed. Find out whether we are stale. */
    private WriteResult recheck(Exchange exchange, Admission admission) {
        try {
            Optional<FenceState> now = admission.store().get(admission.scope());
            if (now.isPresent() && now.get().token() > admission.token()) {
                return new WriteResult.Stale(now.get().token());
            }
            // Same token, concurrent writes of one holder, or a write outside the proxy: forget the version so
            // the next attempt reads it afresh.
            admission.store().recordVersion(admission.scope(), admission.token(), null);
            return answer(exchange, Problem.of(409, "upstream-conflict", "Upstream changed during the write",
                    "the resource changed between the fence check and the write (412 from the upstream) and no "
                            + "higher token is recorded; nothing was written by this request, retry it")
                    .with("scope", admission.scope()).with("token", admission.token()));
        } catch (StoreUnavailableException e) {
            return answer(exchange, Problem.of(503, "store-unavailable", "Fence store unavailable", e.getMessage())
                    .with("scope", admission.scope()));
        }
    }

    private Optional<String> headVersion(Exchange exchange) {
        try (HttpClientResponse response = client.method(Method.HEAD)
                .uri(upstreamUri(exchange.request()))
                .skipUriEncoding(true)
                .request()) {
            int status = response.status().code();
            if (status == 404 || status == 410) {
                return Optional.of(FenceState.ABSENT);
            }
            if (status / 100 == 2) {
                return Optional.of(response.headers().first(HeaderNames.ETAG).orElse(FenceState.ABSENT));
            }
            LOG.warning(() -> "HEAD " + exchange.request().path().rawPath() + " answered " + status);
            return Optional.empty();
        } catch (RuntimeException e) {
            LOG.log(Level.WARNING, "HEAD " + exchange.request().path().rawPath() + " failed", e);
            return Optional.empty();
        }
    }

    /** What became of sending a request upstream. */
    private sealed interface Sent {
        /** The upstream answered and the answer was relayed to the client. */
        record Relayed(int status) implements Sent {
        }

        /**
         * No answer.
         *
         * @param reachedUpstream whether the request may have reached the upstream (outcome unknown)
         * @param timedOut        whether it failed by a timeout
         */
        record Failed(String reason, boolean reachedUpstream, boolean timedOut) implements Sent {
        }

        /**
         * The client's body could not be read to its end (cut off by a bound, stalled, or the client went away).
         * The upstream request was abandoned before its end (no last chunk, or fewer bytes than its
         * {@code Content-Length}), so the upstream never saw a complete request: nothing was applied, the outcome
         * is known, and the scope needs no quarantine.
         *
         * @param refused the bound that cut the body off, or null when the client's side failed
         */
        record BodyFailed(BodyBounds.BodyRefused refused, Throwable cause) implements Sent {
        }
    }

    /** The client's body failed: the pipeline answers a bound's refusal; any other failure is a 400. */
    private static WriteResult bodyFailed(Exchange exchange, Sent.BodyFailed failed) {
        if (failed.refused() != null) {
            return new WriteResult.Answered(failed.refused().problem().status());
        }
        LOG.log(Level.FINE, "the client's body failed; the upstream request was abandoned", failed.cause());
        if (exchange.response().isSent()) {
            return new WriteResult.Answered(exchange.response().status().code());
        }
        try {
            return answer(exchange, Problem.of(400, "incomplete-body", "Incomplete body",
                    "the request body ended early or could not be read; the upstream request was abandoned before "
                            + "its end, nothing was written").header("Connection", "close"));
        } catch (RuntimeException e) {
            return new WriteResult.Answered(400); // the client is gone
        }
    }

    /** The client's body could not be read: the upstream request is abandoned, never finished. */
    private static final class ClientBodyFailed extends IOException {
        ClientBodyFailed(Throwable cause) {
            super("reading the client's body failed", cause);
        }
    }

    private static final class PreconditionFailed extends RuntimeException {
        PreconditionFailed() {
            super(null, null, false, false);
        }
    }

    /**
     * Sends the request upstream and relays the answer.
     *
     * @param admission the admitted token of a conditional write, else null
     * @param condition null for a plain forward, else the version the write is conditional on
     */
    private Sent send(Exchange exchange, Admission admission, String condition) {
        ServerRequest req = exchange.request();
        ServerResponse res = exchange.response();
        Method method = req.prologue().method();
        Http1ClientRequest upstream = client.method(method)
                .uri(upstreamUri(req))
                .skipUriEncoding(true)
                .readTimeout(config.timeout());
        copyRequestHeaders(req, upstream, condition);
        try (HttpClientResponse response = request(exchange, upstream, condition)) {
            int status = response.status().code();
            if (condition != null && status == Status.PRECONDITION_FAILED_412.code()) {
                throw new PreconditionFailed();
            }
            if (condition != null && status / 100 == 2) {
                recordNewVersion(exchange, admission, response);
            }
            relay(response, res);
            return new Sent.Relayed(status);
        } catch (PreconditionFailed e) {
            throw e;
        } catch (RuntimeException e) {
            ClientBodyFailed bodyFailed = causeOf(e, ClientBodyFailed.class);
            if (bodyFailed != null) {
                return new Sent.BodyFailed(BodyBounds.BodyRefused.in(bodyFailed), bodyFailed.getCause());
            }
            if (res.isSent()) {
                // The answer had started; the client sees a truncated response, nothing more can be said.
                LOG.log(Level.WARNING, "relaying the upstream answer failed midway", e);
                return new Sent.Relayed(res.status().code());
            }
            // A failed TLS handshake sent no byte of the request: the request goes out only over an established
            // session, so it cannot land later and needs no quarantine.
            boolean handshake = UpstreamTls.refusedInHandshake(e);
            boolean notSent = causedBy(e, ConnectException.class) || causedBy(e, UnknownHostException.class)
                    || causedBy(e, NoRouteToHostException.class) || handshake;
            boolean timedOut = !handshake && causedBy(e, SocketTimeoutException.class);
            String reason = timedOut ? "upstream timed out after " + config.timeout().toMillis() + " ms"
                    : handshake ? "TLS handshake with the upstream failed, nothing was sent: " + rootMessage(e)
                    : "upstream failed: " + rootMessage(e);
            return new Sent.Failed(reason, !notSent, timedOut);
        }
    }

    /**
     * Sends the request (with the client's body, if it has one) and reads the answer's head. The condition header
     * is validated first, as the client's header validation (switched off, see {@link #open}) would have before
     * writing anything: a version that is not a valid header value fails the send the same way.
     */
    private static HttpClientResponse request(Exchange exchange, Http1ClientRequest upstream, String condition) {
        if (condition != null) {
            upstream.headers().get(condition.equals(FenceState.ABSENT) ? HeaderNames.IF_NONE_MATCH
                    : HeaderNames.IF_MATCH).validate();
        }
        return hasBody(exchange.request())
                ? upstream.outputStream(out -> streamBody(exchange.body(), out, bufferSize(exchange.request())))
                : upstream.request();
    }

    /** After a successful conditional write: the new version is the base for the next writer of this token. */
    private static void recordNewVersion(Exchange exchange, Admission admission, HttpClientResponse response) {
        String version = exchange.request().prologue().method() == Method.DELETE
                ? FenceState.ABSENT
                : response.headers().first(HeaderNames.ETAG).orElse(null);
        try {
            admission.store().recordVersion(admission.scope(), admission.token(), version);
        } catch (StoreUnavailableException e) {
            // Not recording only costs the next writer a HEAD; the fence itself is already durable.
            LOG.log(Level.WARNING, "could not record the new version of " + admission.scope(), e);
        }
    }

    private WriteResult answerFailure(Exchange exchange, Sent.Failed failed) {
        int status = failed.timedOut() ? 504 : 502;
        return answer(exchange, Problem.of(status, failed.timedOut() ? "upstream-timeout" : "upstream-unreachable",
                failed.timedOut() ? "Upstream timed out" : "Upstream unreachable", failed.reason()));
    }

    private static WriteResult answer(Exchange exchange, Problem problem) {
        problem.send(exchange.response());
        return new WriteResult.Answered(problem.status());
    }

    private String upstreamUri(ServerRequest req) {
        String raw = req.query().rawValue();
        String path = req.path().rawPath();
        return raw == null || raw.isEmpty() ? upstreamPrefix + path : upstreamPrefix + path + "?" + raw;
    }

    private void copyRequestHeaders(ServerRequest req, Http1ClientRequest upstream, String condition) {
        Set<String> hop = HopByHop.of(req.headers());
        for (Header header : req.headers()) {
            if (HopByHop.skip(hop, header)) {
                continue;
            }
            if (condition != null && (header.headerName().equals(HeaderNames.IF_MATCH)
                    || header.headerName().equals(HeaderNames.IF_NONE_MATCH))) {
                continue; // the proxy's condition replaces the client's
            }
            upstream.header(header);
        }
        req.headers().contentLength().ifPresent(len -> upstream.header(HeaderNames.CONTENT_LENGTH, Long.toString(len)));
        if (condition != null) {
            if (condition.equals(FenceState.ABSENT)) {
                upstream.header(HeaderNames.IF_NONE_MATCH, "*");
            } else {
                upstream.header(HeaderNames.IF_MATCH, condition);
            }
        }
        String peer = req.remotePeer().host();
        String prior = req.headers().first(X_FORWARDED_FOR).orElse(null);
        upstream.header(X_FORWARDED_FOR, prior == null ? peer : prior + ", " + peer);
        String host = req.authority();
        String proto = req.isSecure() ? "https" : "http";
        if (host != null) {
            upstream.header(X_FORWARDED_HOST, host);
        }
        upstream.header(X_FORWARDED_PROTO, proto);
        String forwarded = "for=" + quoteForwarded(peer) + (host == null ? "" : ";host=" + quoteForwarded(host))
                + ";proto=" + proto;
        upstream.header(FORWARDED, req.headers().first(FORWARDED).map(f -> f + ", " + forwarded).orElse(forwarded));
    }

    private static String quoteForwarded(String value) {
        // IPv6 addresses and host:port need quoting (RFC 7239 section 6).
        if (value.contains(":")) {
            return "\"" + (value.indexOf(':') != value.lastIndexOf(':') && !value.startsWith("[")
                    ? "[" + value + "]" : value) + "\"";
        }
        return value;
    }

    /** The copy buffer of a body: its declared length when that is smaller than the usual 64 KiB. */
    private static int bufferSize(ServerRequest req) {
        if (req.headers().contains(HeaderNames.TRANSFER_ENCODING)) {
            return BODY_BUFFER;
        }
        long declared = req.headers().contentLength().orElse(BODY_BUFFER);
        return (int) Math.max(1, Math.min(declared, BODY_BUFFER));
    }

    private static boolean hasBody(ServerRequest req) {
        if (req.headers().contains(HeaderNames.TRANSFER_ENCODING)) {
            return true;
        }
        return req.headers().contentLength().orElse(0) > 0;
    }

    /**
     * Copies the client's body upstream, and closes the upstream stream (which sends the last chunk, or checks the
     * length) only when the whole body was read. When reading the client fails, the upstream stream is left
     * unfinished: closing it would send a last chunk and turn a cut-off body into a complete, shorter request that
     * the upstream would apply. Its connection is closed instead ({@link AbandonedConnection}), so the upstream sees
     * the request end without its end, and the socket is neither leaked nor pooled with half a request on it.
     */
    private static void streamBody(InputStream in, OutputStream out, int bufferSize) throws IOException {
        byte[] buffer = new byte[bufferSize];
        boolean finished = false;
        try {
            while (true) {
                int n;
                try {
                    n = in.read(buffer);
                } catch (IOException | RuntimeException e) {
                    throw new ClientBodyFailed(e);
                }
                if (n < 0) {
                    break;
                }
                out.write(buffer, 0, n);
            }
            out.close();
            finished = true;
        } finally {
            if (!finished) {
                // Any failure here (the client's body, or writing upstream) leaves the connection mid-request;
                // Helidon rethrows it without closing the connection.
                AbandonedConnection.close(out);
            }
        }
    }

    private static void relay(HttpClientResponse response, ServerResponse res) {
        res.status(response.status());
        Set<String> hop = HopByHop.of(response.headers());
        for (Header header : response.headers()) {
            if (!HopByHop.skip(hop, header)) {
                res.header(header);
            }
        }
        OptionalLong length = response.headers().contentLength();
        length.ifPresent(res::contentLength);
        // An answer with no body (204, or Content-Length: 0: the client gives it an empty stream) skips the copy
        // and its 16 KiB buffer; the streams are opened and closed all the same.
        boolean mayHaveBody = response.status().code() != Status.NO_CONTENT_204.code()
                && (length.isEmpty() || length.getAsLong() > 0);
        try (InputStream in = response.inputStream(); OutputStream out = res.outputStream()) {
            if (mayHaveBody) {
                in.transferTo(out);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static <T extends Throwable> T causeOf(Throwable e, Class<T> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }

    private static boolean causedBy(Throwable e, Class<? extends Throwable> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return true;
            }
        }
        return false;
    }

    private static String rootMessage(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }

    @Override
    public void close() {
        // WebClient holds no resources that need closing beyond its cached connections, closed with the JVM.
    }
}
