package io.stockade.proxy.backend.http;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.StorageAnswer;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.upstream.UpstreamClient;
import io.stockade.proxy.upstream.UpstreamFailure;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderNames;
import io.helidon.http.Method;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * One request of the http backend sent upstream and its answer relayed: the client's body streamed up (abandoned
 * unfinished when it fails), the answer's head read for what it says of an admitted write, then the answer
 * streamed down. What crosses in headers is {@link ForwardedHeaders}'; what became of the request is a
 * {@link Sent}, for the backend to answer.
 */
final class Relay {
    private static final Logger LOG = Logger.getLogger(Relay.class.getName());
    /** The largest copy buffer of a request body (a small body gets one of its declared length). */
    private static final int BODY_BUFFER = 64 * 1024;

    private final BackendConfig.Http config;
    private final UpstreamClient client;
    private final String host;
    /** The path of the upstream URL without a trailing slash (empty for none): every target starts with it. */
    private final String basePath;
    private final ForwardedHeaders headers;
    /** A request that may have reached the upstream got no answer: it may still land (forwards included). */
    private final AtomicBoolean outcomesUnknown = new AtomicBoolean();

    Relay(BackendConfig.Http config, UpstreamClient client, String host, String basePath) {
        this.config = config;
        this.client = client;
        this.host = host;
        this.basePath = basePath;
        this.headers = new ForwardedHeaders(config.url(), basePath);
    }

    /** Whether a request that may have reached the upstream got no answer (it may still land). */
    boolean leftOutcomesUnknown() {
        return outcomesUnknown.get();
    }

    /** What became of sending a request upstream. */
    sealed interface Sent {
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
         * {@code Content-Length}; the connection reset), so the upstream never saw a complete request. Whether it
         * kept what it got is the upstream's business: one that writes as it reads (rclone's WebDAV server) keeps
         * the partial body. So the outcome is known only when no byte of the request was sent.
         *
         * @param refused the bound that cut the body off, or null when the client's side failed
         * @param reached whether any byte of the request was sent to the upstream
         */
        record BodyFailed(BodyBounds.@Nullable BodyRefused refused, @Nullable Throwable cause, boolean reached)
                implements Sent {
        }

        /**
         * The upstream answered an admitted write with an error that does not say whether it applied it
         * ({@link StorageAnswer#UNKNOWN}); the answer was not relayed.
         */
        record StorageFailed(int status) implements Sent {
        }
    }

    /** The client's body could not be read: the upstream request is abandoned, never finished. */
    private static final class ClientBodyFailed extends IOException {
        ClientBodyFailed(Throwable cause) {
            super("reading the client's body failed", cause);
        }
    }

    /** The upstream refused the proxy's condition (412): nothing was relayed. */
    static final class PreconditionFailed extends RuntimeException {
        PreconditionFailed() {
            super(null, null, false, false);
        }
    }

    /**
     * Sends the request upstream and relays the answer.
     *
     * @param admission   the admitted token of a conditional write, else null
     * @param condition   null for a plain forward, else the version the write is conditional on
     * @param destination the upstream's URL of a COPY's or MOVE's destination (replacing the client's), else null
     * @param admitted    whether the request is a write the fence admitted: its answer is read for what it says of
     *                    the write ({@link StorageAnswer}) before it is relayed
     */
    Sent send(Exchange exchange, @Nullable Admission admission, @Nullable String condition,
            @Nullable String destination, boolean admitted) {
        ServerRequest req = exchange.request();
        ServerResponse res = exchange.response();
        UpstreamClient.Request upstream;
        try {
            upstream = client.request(req.prologue().method().text(), host,
                    HttpBackend.target(exchange).upstreamTarget(basePath));
            headers.toUpstream(req, upstream, condition, destination);
        } catch (IllegalArgumentException e) {
            // A recorded version that is not a header value, or a request target the proxy cannot send: nothing
            // left the proxy.
            return new Sent.Failed("the upstream request could not be built: " + e.getMessage(), false, false);
        }
        try (UpstreamResponse response = request(exchange, upstream)) {
            int status = response.status();
            if (condition != null && status == Status.PRECONDITION_FAILED_412.code()) {
                throw new PreconditionFailed();
            }
            if (admitted && StorageAnswer.of(status) == StorageAnswer.UNKNOWN) {
                return new Sent.StorageFailed(status);
            }
            if (condition != null && status / 100 == 2) {
                // a condition is sent only for an admitted write (HttpBackend.conditionalWrite): admission is set
                recordNewVersion(exchange, Objects.requireNonNull(admission), response);
            }
            relay(req, response, res);
            return new Sent.Relayed(status);
        } catch (UpstreamClient.AbandonedBody e) {
            return new Sent.BodyFailed(BodyBounds.BodyRefused.in(e), e.getCause(), e.requestSent());
        } catch (UpstreamFailure e) {
            if (e.requestSent()) {
                outcomesUnknown.set(true);
            }
            if (res.isSent()) {
                throw UpstreamResponse.brokeOff(e);
            }
            String reason = e.timedOut()
                    ? "upstream " + e.upstream() + " did not answer within " + config.timeout().toMillis() + " ms"
                    : e.requestSent() ? message(e) : message(e) + "; nothing was sent";
            return new Sent.Failed(reason, e.requestSent(), e.timedOut());
        } catch (IOException | UncheckedIOException e) {
            if (res.isSent()) {
                throw UpstreamResponse.brokeOff(e);
            }
            LOG.log(Level.WARNING, "relaying the upstream answer failed before it started", e);
            return new Sent.Failed("relaying the upstream's answer failed: " + e.getMessage(), true, false);
        }
    }

    /** Sends the request, with the client's body if it has one, and reads the answer's head. */
    private UpstreamResponse request(Exchange exchange, UpstreamClient.Request upstream) throws UpstreamFailure {
        ServerRequest req = exchange.request();
        boolean chunked = req.headers().contains(HeaderNames.TRANSFER_ENCODING);
        long length = chunked ? -1 : req.headers().contentLength().orElse(0);
        if (length == 0) {
            // No body; a PUT or POST still says so, as the client did.
            if (req.headers().contentLength().isPresent()) {
                upstream.header("Content-Length", "0");
            }
            return upstream.send(config.timeout());
        }
        return upstream.send(config.timeout(), length, out -> streamBody(exchange.body(), out, bufferSize(req)));
    }

    /** The failure's reason: UpstreamFailure is always made with one; the fallback is never seen. */
    private static String message(UpstreamFailure e) {
        return Objects.requireNonNullElse(e.getMessage(), "the upstream request failed");
    }

    /** After a successful conditional write: the new version is the base for the next writer of this token. */
    private static void recordNewVersion(Exchange exchange, Admission admission, UpstreamResponse response) {
        String version = Method.DELETE.equals(exchange.request().prologue().method())
                ? FenceState.ABSENT
                : response.first("ETag");
        try {
            admission.store().recordVersion(admission.scope(), admission.token(), version);
        } catch (StoreUnavailableException e) {
            // Not recording only costs the next writer a HEAD; the fence itself is already durable.
            LOG.log(Level.WARNING, "could not record the new version of " + admission.scope(), e);
        }
    }

    /** The copy buffer of a body: its declared length when that is smaller than the usual 64 KiB. */
    private static int bufferSize(ServerRequest req) {
        if (req.headers().contains(HeaderNames.TRANSFER_ENCODING)) {
            return BODY_BUFFER;
        }
        long declared = req.headers().contentLength().orElse(BODY_BUFFER);
        return (int) Math.max(1, Math.min(declared, BODY_BUFFER));
    }

    /**
     * Copies the client's body upstream. A failure to read the client's body is a {@link ClientBodyFailed}; the
     * upstream client then abandons the request unfinished (no last chunk, or fewer bytes than its
     * {@code Content-Length}), so the upstream never sees a complete, shorter request that it would apply.
     */
    private static void streamBody(InputStream in, OutputStream out, int bufferSize) throws IOException {
        byte[] buffer = new byte[bufferSize];
        while (true) {
            int n;
            try {
                n = in.read(buffer);
            } catch (IOException | RuntimeException e) {
                throw new ClientBodyFailed(e);
            }
            if (n < 0) {
                return;
            }
            out.write(buffer, 0, n);
        }
    }

    /**
     * Relays the answer. Its framing comes from the upstream client: an answer to HEAD, a 204 or a 304 has no body
     * whatever its headers say (RFC 9110 section 6.4.1), and its {@code Content-Length}, if any, is passed on as
     * the length of the representation.
     */
    private void relay(ServerRequest req, UpstreamResponse response, ServerResponse res) throws IOException {
        int code = response.status();
        res.status(Status.create(code, response.reason().isEmpty() ? String.valueOf(code) : response.reason()));
        headers.toClient(response, res);
        if (response.emptyBody()) {
            OptionalLong declared = response.contentLength();
            boolean noBodyByDefinition = code == 204 || code == 304 || Method.HEAD.equals(req.prologue().method());
            if (declared.isPresent() && code != 204) {
                res.header(HeaderNames.CONTENT_LENGTH, Long.toString(declared.getAsLong()));
            }
            if (noBodyByDefinition) {
                res.send();
            } else {
                res.contentLength(0);
                res.send();
            }
            return;
        }
        OptionalLong length = response.contentLength();
        if (length.isPresent() && response.first("Transfer-Encoding") == null) {
            res.contentLength(length.getAsLong());
        }
        // the upstream answered with a status, so a body that breaks off leaves the write's outcome known
        response.relayBody(res.outputStream());
    }
}
