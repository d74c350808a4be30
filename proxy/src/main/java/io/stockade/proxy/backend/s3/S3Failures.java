package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Objects;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.upstream.UpstreamClient;
import io.stockade.proxy.upstream.UpstreamFailure;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.webserver.CloseConnectionException;
import org.jspecify.annotations.Nullable;

/**
 * What a failed call to the store comes to ({@link #failure}: a refused body, an unreachable upstream, an unknown
 * outcome), and the S3 errors the backend decides itself ({@link #answer}).
 */
final class S3Failures {
    private static final Logger LOG = Logger.getLogger(S3Failures.class.getName());

    private final Duration timeout;

    /** @param timeout the upstream's timeout, named in the message of a call that ran out of it */
    S3Failures(Duration timeout) {
        this.timeout = timeout;
    }

    /** What a failed upstream call comes to: a refused body, an unreachable upstream, or an unknown outcome. */
    WriteResult failure(Exchange exchange, RuntimeException e, boolean mayHaveReached) {
        if (e instanceof CloseConnectionException closing) {
            // A relayed answer broke off after its head was committed (UpstreamResponse.relayBody): no S3 error can
            // replace it, the client connection is closed (the catch sites take every RuntimeException).
            throw closing;
        }
        BodyBounds.BodyRefused refused = BodyBounds.BodyRefused.in(e);
        if (refused != null) {
            // The body went over a bound of the policy mid-stream: the upstream request was left short of its
            // Content-Length, so nothing landed. The pipeline answers the refusal (as S3 XML, through refuse).
            return new WriteResult.Answered(refused.problem().status());
        }
        PayloadReader.Rejected rejected = cause(e, PayloadReader.Rejected.class);
        if (rejected != null) {
            return answer(exchange, rejected.status, rejected.code, rejected.getMessage());
        }
        if (exchange.response().isSent()) {
            // The answer broke off midway: close the client connection so it cannot take a truncated answer for
            // a whole one.
            throw UpstreamResponse.brokeOff(e);
        }
        if (cause(e, UpstreamClient.AbandonedBody.class) != null) {
            // The client's body could not be read to its end: the upstream request was abandoned unfinished.
            return answer(exchange, 400, "IncompleteBody", "the request body could not be read to its end; "
                    + "nothing was written");
        }
        UpstreamFailure failed = cause(e, UpstreamFailure.class);
        boolean notSent = !mayHaveReached || (failed != null && !failed.requestSent());
        String reason = failed != null && failed.timedOut()
                ? "upstream " + failed.upstream() + " did not answer within " + timeout.toMillis() + " ms"
                : failed != null && !failed.requestSent() ? failed.getMessage() + "; nothing was sent"
                : failed != null ? Objects.requireNonNull(failed.getMessage(), "an UpstreamFailure has its message")
                : "the upstream failed: " + root(e);
        // The pipeline logs the result in one line; the stack only here, at FINE.
        LOG.log(Level.FINE, reason, e);
        if (notSent) {
            return new WriteResult.Unavailable(reason);
        }
        return new WriteResult.Unknown(reason);
    }


    /** The {@code <Code>} of an S3 error answer, or empty when it has none (read up to 64 KiB). */
    static String errorCode(UpstreamResponse response) {
        try {
            String xml = new String(response.readAll(64 * 1024), StandardCharsets.UTF_8);
            int start = xml.indexOf("<Code>");
            int end = xml.indexOf("</Code>");
            return start >= 0 && end > start ? xml.substring(start + "<Code>".length(), end) : "";
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }

    /**
     * An S3 error the backend decided: nothing is sent here; the pipeline answers it through
     * {@link S3Refusals#refuse}.
     */
    static WriteResult answer(Exchange exchange, int status, String code, String message) {
        return new WriteResult.Refused(S3Problems.of(status, code, message, null));
    }

    static <T extends Throwable> @Nullable T cause(Throwable e, Class<T> type) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (type.isInstance(t)) {
                return type.cast(t);
            }
        }
        return null;
    }

    static String root(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null) {
            t = t.getCause();
        }
        return t.getClass().getSimpleName() + (t.getMessage() == null ? "" : ": " + t.getMessage());
    }
}
