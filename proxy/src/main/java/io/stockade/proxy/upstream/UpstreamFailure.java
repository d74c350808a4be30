package io.stockade.proxy.upstream;

import java.io.IOException;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * An upstream request that got no answer. Its message names the upstream ({@code upstream 127.0.0.1:9000: refused
 * the connection}) once the client that failed has said which it was, so an operator reading a problem detail or a
 * log line knows where to look.
 */
public class UpstreamFailure extends IOException {
    private final boolean requestSent;
    private final boolean timedOut;
    private volatile @Nullable String upstream;

    /**
     * @param requestSent whether any byte of the request may have reached the upstream (if not, the request cannot
     *                    land later: connecting or the TLS handshake failed)
     * @param timedOut    whether it failed by a timeout waiting for the upstream
     */
    public UpstreamFailure(String message, boolean requestSent, boolean timedOut, @Nullable Throwable cause) {
        super(message, cause);
        this.requestSent = requestSent;
        this.timedOut = timedOut;
    }

    /** Names the upstream that failed ({@code host:port}), unless it is named already. */
    UpstreamFailure at(String address) {
        if (upstream == null) {
            upstream = address;
        }
        return this;
    }

    /** The upstream that failed ({@code host:port}), or null when not known. */
    public @Nullable String upstream() {
        return upstream;
    }

    @Override
    public String getMessage() {
        String message = Objects.requireNonNull(super.getMessage(), "an upstream failure is made with its message");
        return upstream == null ? message : "upstream " + upstream + ": " + message;
    }

    /** Whether any byte of the request may have reached the upstream: the outcome of a write is then unknown. */
    public boolean requestSent() {
        return requestSent;
    }

    /** Whether the upstream did not answer in time. */
    public boolean timedOut() {
        return timedOut;
    }
}
