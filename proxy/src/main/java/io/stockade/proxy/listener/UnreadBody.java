package io.stockade.proxy.listener;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.helidon.http.HeaderNames;
import io.helidon.http.HeaderValues;
import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.Filter;
import io.helidon.webserver.http.FilterChain;
import io.helidon.webserver.http.RoutingRequest;
import io.helidon.webserver.http.RoutingResponse;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * No request body is ever read as a request: an answer sent before its request's body was read either drains the
 * body (at most {@value #DRAIN_BYTES} bytes, within the read timeout) and keeps the connection, or says
 * {@code Connection: close} and closes it. And a connection whose answer says {@code Connection: close} is really
 * closed.
 * <p>
 * <b>Why, in Helidon 4.5.</b> Two behaviours of its HTTP/1.1 connection ({@code Http1Connection}) let a body be
 * parsed as the next request:
 * <ul>
 *     <li>A request with {@code Expect: 100-continue} answered before its body was asked for (every refusal: 400,
 *     404, 409, 428...): sending the answer calls {@code Http1ServerRequestWithEntity.reset()}, which tells the
 *     connection that no body will come ({@code Http1Connection.reset()}: entity length 0), since no
 *     {@code 100 Continue} was sent. The client may send its body anyway (RFC 9110 10.1.1 allows it, and curl does
 *     after a second), and the connection then reads it as the next request, on a connection kept open: a stale
 *     writer's body {@code PUT /files/x ... Fencing-Token: 99} was written as a request of its own; behind a front
 *     proxy that reuses connections, a body that is only the start of a request took the next client's request
 *     (its token, its {@code Authorization}) as its own body.</li>
 *     <li>{@code Connection: close} on an answer (the request's own, or one the proxy sets after a broken body) is
 *     written but not acted on: the connection goes on reading requests, and skips draining the body because it
 *     believes it is closing.</li>
 * </ul>
 * This filter runs around every request. Before the answer's head is written ({@code beforeSend}) it looks at the
 * request's body: read to its end, nothing to do; a {@code 100-continue} body not asked for (the client may or
 * may not send it: which bytes come next is unknowable), a body another reader started and gave up (a bound, a
 * malformed chunk), or a body that is chunked or larger than {@value #DRAIN_BYTES} bytes: the answer gets
 * {@code Connection: close}; a small body of known length is drained after the answer; a body a backend started
 * and stopped reading (an early answer) is read on from where it stopped, within the policy's bounds. After the
 * answer, a connection whose answer says {@code Connection: close} is closed ({@link CloseConnectionException}), after
 * reading on (lingering) for at most {@value #LINGER_BYTES} bytes and {@link #LINGER} of a body that was coming
 * anyway, each read waiting at most {@link #LINGER_READ}: closing a socket with unread bytes sends a TCP reset, and
 * a client still writing its body (most do not read before they have sent it) then meets a broken pipe instead of
 * the answer. The bounds are a client's, not the proxy's, pace: a 2 MiB body sent over three seconds (a slow link,
 * a loaded machine) must still get its answer (EarlyAnswerIT); a client that stops sending is let go after one
 * read's wait.
 */
public final class UnreadBody implements Filter {
    private static final Logger LOG = Logger.getLogger(UnreadBody.class.getName());
    /** The largest unread body drained to keep its connection open. */
    public static final long DRAIN_BYTES = 64 * 1024;
    /** How much of a body is read and dropped before its connection is closed. */
    public static final long LINGER_BYTES = 64 * 1024 * 1024;
    /** How long a body is read and dropped before its connection is closed, at most. */
    public static final Duration LINGER = Duration.ofSeconds(10);
    /** How long one read of a body being dropped before the close waits for the client (or the read timeout). */
    public static final Duration LINGER_READ = Duration.ofSeconds(2);

    private final long readTimeoutNanos;

    /**
     * The body a backend started reading, on the request's thread (the routing runs the filter and the handler on
     * one virtual thread): after an early answer the listener reads on from where the backend stopped, so a client
     * still sending reads the answer instead of a TCP reset. A thread-local, not the request's context, which cost
     * ~5 µs a request to create (docs/benchmarks.md). A body read on another thread is not seen: closed at once.
     */
    private static final ThreadLocal<InputStream> STARTED = new ThreadLocal<>();

    /** Called by the backend's body reader with the stream it reads (within the policy's bounds). */
    public static void started(InputStream body) {
        STARTED.set(body);
    }

    /** @param readTimeout the listener's bound on one blocked read */
    public UnreadBody(Duration readTimeout) {
        this.readTimeoutNanos = Durations.nanos(readTimeout);
    }

    /** What to do about a body the answer was sent before. */
    private enum Plan {
        /** The body was read to its end (or there is none). */
        NONE,
        /** Drain it after the answer and keep the connection. */
        DRAIN,
        /** Close the connection after the answer, reading on a little first. */
        LINGER_AND_CLOSE,
        /** Close the connection after the answer without reading. */
        CLOSE
    }

    private static final class Decision {
        Plan plan = Plan.NONE;
        boolean decided;
        @Nullable InputStream body;
    }

    @Override
    public void filter(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        STARTED.remove();
        try {
            filterRequest(chain, req, res);
        } finally {
            STARTED.remove();
        }
    }

    private void filterRequest(FilterChain chain, RoutingRequest req, RoutingResponse res) {
        Decision decision = new Decision();
        boolean hasBody = hasBody(req);
        if (hasBody) {
            res.beforeSend(() -> {
                if (!decision.decided) {
                    decision.decided = true;
                    decide(req, decision);
                    if (decision.plan != Plan.NONE && decision.plan != Plan.DRAIN) {
                        res.header(HeaderValues.CONNECTION_CLOSE);
                    }
                }
            });
        }
        chain.proceed();

        boolean close = res.headers().containsToken(HeaderValues.CONNECTION_CLOSE);
        if (hasBody && !req.content().consumed()) {
            Plan plan = decision.decided ? decision.plan : Plan.CLOSE; // no answer head was written through us
            if (plan == Plan.DRAIN && !close) {
                if (!drain(decision.body, DRAIN_BYTES, readTimeoutNanos, readTimeoutNanos)) {
                    close = true; // the answer said keep-alive; closing now is allowed (RFC 9112 9.6)
                }
            } else if (plan == Plan.DRAIN || plan == Plan.LINGER_AND_CLOSE) {
                close = true;
                drain(decision.body, LINGER_BYTES, LINGER.toNanos(),
                        Math.min(readTimeoutNanos, LINGER_READ.toNanos()));
            } else if (plan != Plan.NONE) {
                close = true;
            }
        }
        if (close) {
            try {
                res.commit(); // a streamed answer the handler left open is finished first
            } catch (RuntimeException e) {
                LOG.log(Level.FINE, "could not finish the answer before closing", e);
            }
            // Helidon writes "Connection: close" but keeps reading requests: this ends the connection for real.
            throw new CloseConnectionException("answered with Connection: close");
        }
    }

    /** Called before the answer's head is written, while the request's body may still be unread. */
    private static void decide(ServerRequest req, Decision decision) {
        if (req.content().consumed()) {
            decision.plan = Plan.NONE;
            return;
        }
        if (req.headers().containsToken(HeaderValues.EXPECT_100) && !req.continueSent()) {
            // No 100 Continue was sent: the client may send the body or not. Nothing on this connection can be read
            // safely any more.
            decision.plan = Plan.CLOSE;
            return;
        }
        try {
            decision.body = req.content().inputStream();
        } catch (IllegalStateException e) {
            // A backend started reading the body and stopped (a bound, a malformed chunk, an early answer): how
            // much of it is left is not known here, so the connection closes; reading on a little first (from where
            // the backend stopped) lets a client still sending read the answer instead of a TCP reset.
            decision.body = STARTED.get();
            decision.plan = decision.body == null ? Plan.CLOSE : Plan.LINGER_AND_CLOSE;
            return;
        }
        OptionalLong length = contentLength(req);
        decision.plan = length.isPresent() && length.getAsLong() <= DRAIN_BYTES ? Plan.DRAIN : Plan.LINGER_AND_CLOSE;
    }

    /**
     * Reads and drops the body, at most {@code maxBytes} of it, for at most {@code nanos} in all and
     * {@code readNanos} a read (a blocked read is cut off by the body bounds' watchdog, which closes the socket).
     *
     * @return whether the body ended within the bounds
     */
    static boolean drain(@Nullable InputStream body, long maxBytes, long nanos, long readNanos) {
        if (body == null) {
            return false;
        }
        BodyBounds bounds = new BodyBounds(maxBytes, nanos, readNanos, System::nanoTime);
        byte[] buffer = new byte[8192];
        // not closed: closing Helidon's entity stream reads on, outside the bounds
        InputStream in = bounds.wrap(body);
        try {
            while (in.read(buffer) >= 0) {
                // dropped
            }
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.FINE, "stopped draining an unread request body", e);
            return false;
        }
    }

    private static boolean hasBody(ServerRequest req) {
        if (req.headers().contains(HeaderNames.TRANSFER_ENCODING)) {
            return true;
        }
        OptionalLong length = contentLength(req);
        return length.isPresent() && length.getAsLong() > 0;
    }

    private static OptionalLong contentLength(ServerRequest req) {
        if (req.headers().contains(HeaderNames.TRANSFER_ENCODING)) {
            return OptionalLong.empty();
        }
        try {
            return req.headers().contentLength();
        } catch (IllegalArgumentException e) {
            return OptionalLong.empty(); // Helidon refuses such a request before routing
        }
    }
}
