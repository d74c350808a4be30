package io.stockade.proxy.backend;

import io.stockade.proxy.http.Problem;

import java.time.Duration;

/**
 * Where a policy's requests go. One implementation per backend type, each in its own package.
 * <p>
 * The engine ({@code io.stockade.proxy.pipeline.FencePipeline}) decides every fence question and calls
 * {@link #write} only for a write whose token it has admitted; everything else goes through {@link #forward}.
 * A backend never decides whether a token is stale on its own, except where it owns the atomic check
 * (see {@link FenceClass#ATOMIC}).
 */
public interface Backend extends AutoCloseable {

    /** The atomicity class this backend gives (see the guarantee matrix in the README). */
    FenceClass fenceClass();

    /**
     * Sends a request that is not fenced: a read, an unfenced method, an allowed tokenless write, or any
     * request of a policy in {@code observe} or {@code off} mode. The backend answers the client itself.
     */
    void forward(Exchange exchange);

    /**
     * Performs a fenced write whose token was admitted by the fence store.
     * <p>
     * For a {@link FenceClass#SERIALIZED} backend the engine holds the scope for the whole call and the fence is
     * already durable. For a {@link FenceClass#ATOMIC} backend the engine holds nothing: the backend makes the
     * write conditional on {@link Admission#previous()} and re-checks the store on a conflict.
     *
     * @return what happened; unless it is {@link WriteResult.Answered}, the engine answers the client
     */
    WriteResult write(Exchange exchange, Admission admission);

    /**
     * Sends a refusal the engine decided (stale, missing or malformed token, store unavailable, quarantine) in
     * the shape this backend's clients understand. The default is the RFC 9457 problem itself; a backend whose
     * clients expect another shape (S3's XML errors) overrides it, keeping the status and the meaning.
     */
    default void refuse(Exchange exchange, Problem problem) {
        problem.send(exchange.response());
    }

    /**
     * How long a write whose outcome is unknown may still take to land at the storage. The engine quarantines a
     * scope for this long after an unknown outcome, and keeps every serialized scope closed for this long after
     * start (a crash may have left writes in flight). Zero for a backend with no unknown outcomes.
     */
    default Duration settle() {
        return Duration.ZERO;
    }

    @Override
    void close();
}
