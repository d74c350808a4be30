package io.stockade.proxy.backend;

import java.time.Duration;
import java.util.List;

import io.stockade.policy.Route;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.token.FencingToken;

import io.helidon.webserver.http.ServerRequest;

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
     * The fence scope of a request. The default is the policy's scope template filled from the path variables; a
     * backend that reads the resource from more than the path (S3's bucket in the Host header) derives it itself.
     */
    default String scope(Route route, ServerRequest request) {
        return route.scope();
    }

    /**
     * A first look at a request, before any fence question: a backend that authenticates its clients (S3's
     * SigV4) refuses a bad request here, so that a forged request can never move a high-water mark. The default
     * admits everything.
     *
     * @return false after the backend has answered the client itself
     */
    default boolean admit(Exchange exchange) {
        return true;
    }

    /**
     * Whether this request, of a method the policy fences, is a write that needs a token. The default is yes; a
     * backend whose protocol uses a fenced method for steps that change nothing visible (S3's UploadPart, which
     * is fenced when the upload is completed) answers no, and the request is forwarded unfenced.
     */
    default boolean fences(Exchange exchange) {
        return true;
    }

    /**
     * The token of a fenced request. The default reads the policy's token header ({@code Fencing-Token}). A backend
     * whose clients cannot add a header to every write may also read the token from another part of the request
     * that the policy allows (S3's user metadata {@code x-amz-meta-fencing-token}, which the AWS CLI can send), and
     * answers for it being as trustworthy as the header (signed, where the backend checks signatures).
     */
    default FencingToken.Parsed token(Exchange exchange) {
        String header = exchange.route().policy().fence().header();
        return FencingToken.parse(header, exchange.request().headers().all(
                io.helidon.http.HeaderNames.create(header), List::of));
    }

    /**
     * Whether this backend takes a request path that ends with {@code /} as naming another resource than the same
     * path without it. Most HTTP servers take {@code /a/} and {@code /a} for one resource (or redirect), so the
     * default is no, and the engine refuses such a path (400) before any fence question. S3, whose keys are exact
     * bytes ({@code folder/} is a key of its own), says yes.
     */
    default boolean takesTrailingSlash() {
        return false;
    }

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

    /**
     * Whether a request this backend sent, fenced or not, may still land at the storage: one that may have reached
     * it got no answer (a timeout, a reset, an interrupted read) since the backend opened. A clean stop
     * ({@code CleanShutdown}) requires none; only a backend with a {@link #settle()} needs to tell.
     */
    default boolean leftOutcomesUnknown() {
        return false;
    }

    /**
     * At start, in the background: one WARN line naming the storage when it cannot be reached now. The proxy
     * starts all the same (the storage may come up later); the default checks nothing.
     *
     * @param policy the name of the policy this backend serves, for the log line
     */
    default void checkAtStart(String policy) {
    }

    @Override
    void close();
}
