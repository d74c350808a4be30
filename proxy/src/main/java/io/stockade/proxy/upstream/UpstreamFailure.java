package io.stockade.proxy.upstream;

import java.io.IOException;

/**
 * An upstream request that got no answer.
 */
public class UpstreamFailure extends IOException {
    private final boolean requestSent;
    private final boolean timedOut;

    /**
     * @param requestSent whether any byte of the request may have reached the upstream (if not, the request cannot
     *                    land later: connecting or the TLS handshake failed)
     * @param timedOut    whether it failed by a timeout waiting for the upstream
     */
    public UpstreamFailure(String message, boolean requestSent, boolean timedOut, Throwable cause) {
        super(message, cause);
        this.requestSent = requestSent;
        this.timedOut = timedOut;
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
