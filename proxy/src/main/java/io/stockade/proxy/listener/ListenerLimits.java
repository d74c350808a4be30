package io.stockade.proxy.listener;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.logging.Logger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.policy.Policy;
import io.stockade.policy.ServerConfig;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.problem.Statuses;

import io.helidon.http.DirectHandler;
import io.helidon.http.HeaderNames;
import io.helidon.http.Headers;
import io.helidon.http.HttpPrologue;
import io.helidon.http.ServerResponseHeaders;
import io.helidon.http.Status;
import io.helidon.webserver.ConnectionContext;
import io.helidon.webserver.WebServerConfig;
import io.helidon.webserver.http.DirectHandlers;
import io.helidon.webserver.http1.Http1Config;
import io.helidon.webserver.http1.Http1ConnectionListener;
import org.jspecify.annotations.Nullable;

/**
 * What the HTTP listener enforces on every connection before any policy is known ({@code server.limits}): the
 * request line and header sizes, the largest body, how long headers and idle connections may take, how long one
 * read may block. Helidon enforces most of them itself; this class sets them, answers its refusals as RFC 9457
 * problems, and adds the one bound Helidon lacks: a deadline on the header block.
 * <p>
 * <b>Why a header deadline.</b> Helidon's socket read timeout bounds each read, and its idle check interrupts a
 * connection only while it reads a request line. A client that sends the request line and then one header byte
 * every few seconds would hold its connection for ever. {@link HeaderDeadline} notes a deadline when the request
 * line is in and interrupts the connection's (virtual) thread if the headers are not complete by then (checked
 * every tenth of the timeout, at most every 100 ms); interrupting a virtual thread blocked on a socket closes the
 * socket, so the client is cut off without an answer.
 */
public final class ListenerLimits {
    private static final Logger LOG = Logger.getLogger(ListenerLimits.class.getName());
    /** The message Helidon's header parser gives when the header block is over its bound (answered 400 by it). */
    static final String HEADER_SIZE_EXCEEDED = "Header size exceeded";
    /** The start of RequestFraming's refusals of a chunked body. */
    static final String MALFORMED_CHUNKED = RequestFraming.MALFORMED;
    /** How often idle connections are looked for, at most (Helidon's default is every two minutes). */
    static final Duration MAX_IDLE_PERIOD = Duration.ofSeconds(2);

    private ListenerLimits() {
    }

    /**
     * Applies {@code limits} to a web server's default listener.
     *
     * @return the header deadline's timer, to be closed with the server
     */
    public static AutoCloseable apply(WebServerConfig.Builder builder, ServerConfig.Limits limits) {
        HeaderDeadline deadline = new HeaderDeadline(limits.headerTimeout());
        ListenerLog log = new ListenerLog(System::nanoTime);
        Http1Config http1 = Http1Config.builder()
                .maxPrologueLength(limits.maxRequestLineBytes())
                .maxHeadersSize(limits.maxHeaderBytes())
                .addReceiveListener(deadline)
                .build();
        // One connection selector, ours (ClientConnections): with service discovery on, Helidon would add an HTTP/1.1
        // selector with its default limits next to it and pick between them by the first bytes.
        builder.protocolsDiscoverServices(false)
                .addConnectionSelector(ClientConnections.of(http1, log))
                .maxPayloadSize(limits.maxBodyBytes() == Policy.Limits.UNLIMITED ? -1 : limits.maxBodyBytes())
                .idleConnectionTimeout(limits.idleTimeout())
                .idleConnectionPeriod(idlePeriod(limits.idleTimeout()))
                // Helidon passes the parser's message to direct handlers only with includeEntity; its messages are
                // about the request's syntax, never about the server.
                .errorHandling(e -> e.includeEntity(true))
                .directHandlers(directHandlers(log));
        return deadline;
    }

    static Duration idlePeriod(Duration idleTimeout) {
        Duration quarter = idleTimeout.dividedBy(4);
        Duration period = quarter.compareTo(MAX_IDLE_PERIOD) > 0 ? MAX_IDLE_PERIOD : quarter;
        return period.isZero() ? Duration.ofMillis(1) : period;
    }

    /** Every refusal Helidon makes before routing, answered as a problem (and 431 for an oversized header block). */
    static DirectHandlers directHandlers(ListenerLog log) {
        DirectHandlers.Builder handlers = DirectHandlers.builder();
        for (DirectHandler.EventType type : DirectHandler.EventType.values()) {
            handlers.addHandler(type, (request, event, status, headers, message) ->
                    problem(log, request, event, status, headers, message));
        }
        return handlers.build();
    }

    private static DirectHandler.TransportResponse problem(ListenerLog log, DirectHandler.TransportRequest request,
                                                           DirectHandler.EventType type, Status status,
                                                           ServerResponseHeaders headers, String message) {
        Problem problem = problemFor(type == DirectHandler.EventType.INTERNAL_ERROR ? 500 : status.code(), message,
                request.protocolVersion());
        log.refused(problem.status() + problem.type(), () -> "the listener refused a request before routing: "
                + problem.status() + " " + problem.type().substring(Problem.TYPE_PREFIX.length())
                + (problem.status() == 505 ? " (" + problem.detail() + ")" : ""));
        DirectHandler.TransportResponse.Builder response = DirectHandler.TransportResponse.builder()
                .status(Statuses.of(problem.status()))
                .headers(headers)
                .header(HeaderNames.CONTENT_TYPE, "application/problem+json")
                .header(HeaderNames.DATE, HttpDate.now())
                .keepAlive(false)
                .entity(problem.toJson().getBytes(StandardCharsets.UTF_8));
        return response.build();
    }

    /** The problem for a refusal by the listener: status as Helidon chose it, but 431 for too many header bytes. */
    static Problem problemFor(int status, @Nullable String message) {
        return problemFor(status, message, "");
    }

    /**
     * The problem for a refusal by the listener.
     *
     * @param protocolVersion what Helidon's parser says of the request line's version: {@code HTTP/1.0} for an
     *                        HTTP/1.0 request, else for a version it does not take the whole request line and a
     *                        {@code /} (so {@code PRI * HTTP/2.0/} for an HTTP/2 preface after a first request)
     */
    static Problem problemFor(int status, @Nullable String message, String protocolVersion) {
        String detail = message == null || message.isBlank() ? "the request could not be read" : ownWords(message);
        if (status == 400 && HEADER_SIZE_EXCEEDED.equals(message)) {
            return Problem.of(ProblemType.HEADERS_TOO_LARGE, "the request's header lines are larger than the"
                    + " listener's max-header-bytes; nothing was "
                            + "forwarded");
        }
        if (status == 400 && message != null && message.startsWith(MALFORMED_CHUNKED)) {
            return Problem.of(ProblemType.MALFORMED_BODY, message + "; the request was refused before "
                    + "any policy saw it: nothing was forwarded and no fence was raised");
        }
        String version = otherVersion(protocolVersion);
        if (status == 505 || (status == 400 && version != null)) {
            return Problem.of(ProblemType.HTTP_VERSION_NOT_SUPPORTED, (version == null ? "this HTTP"
                    + " version" : "HTTP/" + version) + " is not supported: this server "
                            + "speaks HTTP/1.1 only; send the request as HTTP/1.1 (curl: --http1.1; nginx: "
                            + "proxy_http_version 1.1)").with("supported", "HTTP/1.1");
        }
        return switch (status) {
            // Before routing, Helidon answers 500 for request bytes its parser chokes on outside its own checks
            // (a method with a NUL byte: RequestParsingFuzzIT). Failures inside the pipeline never come here: the
            // routing's error handler answers those. So this is bad input, and bad input is never a 500.
            case 500 -> Problem.of(ProblemType.BAD_REQUEST, "the request could not be parsed");
            case 413 -> Problem.of(ProblemType.BODY_TOO_LARGE, detail
                    + " (the listener's max-body-bytes); nothing was forwarded");
            case 414 -> Problem.of(ProblemType.REQUEST_LINE_TOO_LONG, detail
                    + " (the listener's max-request-line-bytes); nothing was forwarded");
            case 400 -> Problem.of(ProblemType.BAD_REQUEST, detail);
            default -> Problem.of(ProblemType.BAD_REQUEST, detail + " (refused by the listener with " + status + " "
                    + Statuses.of(status).reasonPhrase() + ")");
        };
    }

    /** Helidon's parser names a header name or a method a "token": said so in words a client can act on. */
    private static final Pattern TOKEN =
            Pattern.compile("Token contains (\\S+) character at position (\\d+)");

    /** A message of Helidon's parser in the proxy's words, where its own are cryptic. */
    static String ownWords(String message) {
        Matcher m = TOKEN.matcher(message);
        if (m.find()) {
            return "a header name or the method has a " + m.group(1) + " character (at position " + m.group(2)
                    + " of it): header names and methods are tokens (RFC 9110 section 5.6.2); nothing was forwarded";
        }
        return message;
    }

    private static final Pattern VERSION =
            Pattern.compile("(?:^| )HTTP/([0-9](?:\\.[0-9])?)/?$");

    /** The version of a request line in another HTTP version than 1.1 (e.g. {@code 1.0}, {@code 2.0}), or null. */
    static @Nullable String otherVersion(@Nullable String protocolVersion) {
        if (protocolVersion == null) {
            return null;
        }
        Matcher m = VERSION.matcher(protocolVersion);
        return m.find() && !m.group(1).equals("1.1") ? m.group(1) : null;
    }

    /**
     * The deadline on a request's header block: each connection between its request line and the end of its
     * headers is noted with its deadline, and one sweeper thread, waking every {@link #sweepPeriod} (a tenth of the
     * timeout, between 10 and 100 ms), interrupts the reading thread of each one past its deadline. So a trickled
     * header block is cut off between the timeout and the timeout plus one period. No timer task per request: a
     * scheduled task per request (and its cancellation) woke a timer thread once per request, a context switch
     * the request path paid for (docs/benchmarks.md, "The header deadline").
     * <p>
     * The headers callback and the sweeper race through {@code done}: whichever sets it first decides, so the
     * sweeper interrupts a thread only while the request it was noted for is still reading headers.
     */
    static final class HeaderDeadline implements Http1ConnectionListener, AutoCloseable {
        private final long timeoutNanos;
        private final Duration sweepPeriod;
        /** The pending deadline of each connection reading headers now; removed by the headers or the sweeper. */
        private final ConcurrentHashMap<ConnectionContext, Pending> pending = new ConcurrentHashMap<>();
        private final Thread sweeper;
        private volatile boolean closed;

        private record Pending(Thread reader, long deadline, AtomicBoolean done) {
        }

        HeaderDeadline(Duration timeout) {
            this.timeoutNanos = Durations.nanos(timeout);
            this.sweepPeriod = sweepPeriod(timeout);
            this.sweeper = Thread.ofPlatform().daemon().name("stockade-header-deadline").unstarted(this::sweep);
            sweeper.start();
        }

        /** A tenth of the timeout, at least 10 ms and at most 100 ms. */
        static Duration sweepPeriod(Duration timeout) {
            Duration tenth = timeout.dividedBy(10);
            return tenth.compareTo(Duration.ofMillis(10)) < 0 ? Duration.ofMillis(10)
                    : tenth.compareTo(Duration.ofMillis(100)) > 0 ? Duration.ofMillis(100) : tenth;
        }

        @Override
        public void prologue(ConnectionContext ctx, HttpPrologue prologue) {
            Pending p = new Pending(Thread.currentThread(), System.nanoTime() + timeoutNanos, new AtomicBoolean());
            Pending earlier = pending.put(ctx, p);
            if (earlier != null) {
                earlier.done().set(true);
            }
        }

        @Override
        public void headers(ConnectionContext ctx, Headers headers) {
            Pending p = pending.remove(ctx);
            if (p != null && !p.done().compareAndSet(false, true)) {
                // The sweeper won the race and interrupted (or is about to interrupt) this thread: drop the request.
                throw new IllegalStateException("header-timeout passed");
            }
        }

        private void sweep() {
            while (!closed) {
                try {
                    Thread.sleep(sweepPeriod);
                } catch (InterruptedException e) {
                    return;
                }
                long now = System.nanoTime();
                for (var e : pending.entrySet()) {
                    Pending p = e.getValue();
                    if (now - p.deadline() >= 0 && pending.remove(e.getKey(), p)
                            && p.done().compareAndSet(false, true)) {
                        LOG.fine(() -> "header-timeout: closing a connection from "
                                + e.getKey().remotePeer().address());
                        p.reader().interrupt();
                    }
                }
            }
        }

        /** Connections still reading headers (tests check nothing is left behind). */
        int pending() {
            return pending.size();
        }

        @Override
        public void close() {
            closed = true;
            sweeper.interrupt();
        }
    }
}
