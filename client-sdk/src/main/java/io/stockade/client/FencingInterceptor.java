package io.stockade.client;

import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.http.SdkHttpRequest;

/**
 * An AWS SDK v2 {@link ExecutionInterceptor} that adds the lease's token as {@code Fencing-Token} to every request
 * and refuses to send (before the first attempt and before every retry) once the lease is lost or has less than the
 * budget left. Needs {@code software.amazon.awssdk:sdk-core} on the class path (any client brings it).
 *
 * <pre>{@code
 * S3Client s3 = S3Client.builder()
 *         .endpointOverride(URI.create("http://stockade:8080"))
 *         .overrideConfiguration(c -> c.addExecutionInterceptor(
 *                 FencingInterceptor.of(lease, Duration.ofSeconds(2))))
 *         .build();
 * }</pre>
 *
 * <p>The header is added in {@code modifyHttpRequest}, after the request is marshalled and before it is signed, so
 * SigV4 signs it like any other header.
 */
public final class FencingInterceptor implements ExecutionInterceptor {

    private final Lease lease;
    private final Duration budget;
    private final String header;
    private final @Nullable String scope;
    private final @Nullable TokenSigner signer;

    private FencingInterceptor(Lease lease, Duration budget, String header, @Nullable String scope,
                               @Nullable TokenSigner signer) {
        this.lease = lease;
        this.budget = budget;
        this.header = header;
        this.scope = scope;
        this.signer = signer;
    }

    /**
     * This interceptor, also signing each token (in the signer's {@link TokenSigner#header()},
     * {@value TokenSigner#HEADER} by default) for a policy with {@code fence.verify: {kind: hmac}}.
     *
     * @param scope  the fence scope the proxy renders (for an S3 policy: {@code <policy scope>/<bucket>/<key>},
     *               or the prefix with {@code fence-scope: prefix})
     * @param signer the signer with the shared key
     * @return an interceptor that signs
     * @throws IllegalArgumentException if the signer's header is this interceptor's token header
     */
    public FencingInterceptor signed(String scope, TokenSigner signer) {
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(signer, "signer");
        if (signer.header().equalsIgnoreCase(header)) {
            throw new IllegalArgumentException("the signature header must differ from the token header " + header);
        }
        return new FencingInterceptor(lease, budget, header, scope, signer);
    }

    /**
     * An interceptor adding {@code Fencing-Token}.
     *
     * @param lease  the lease whose token is attached
     * @param budget the validity that must remain when a request (or a retry) is sent
     * @return the interceptor
     * @throws IllegalArgumentException if {@code budget} is negative
     */
    public static FencingInterceptor of(Lease lease, Duration budget) {
        return of(lease, budget, FencedHttpClient.HEADER);
    }

    /**
     * An interceptor adding the token in {@code header}.
     *
     * @param lease  the lease whose token is attached
     * @param budget the validity that must remain when a request (or a retry) is sent
     * @param header the header name
     * @return the interceptor
     * @throws IllegalArgumentException if {@code budget} is negative or {@code header} is blank
     */
    public static FencingInterceptor of(Lease lease, Duration budget, String header) {
        Objects.requireNonNull(lease, "lease");
        if (budget.isNegative()) {
            throw new IllegalArgumentException("budget must not be negative: " + budget);
        }
        if (header == null || header.isBlank()) {
            throw new IllegalArgumentException("header must not be blank");
        }
        return new FencingInterceptor(lease, budget, header, null, null);
    }

    /**
     * Adds the token.
     *
     * @throws LeaseLostException if the lease is lost or past its point of no return
     */
    @Override
    public SdkHttpRequest modifyHttpRequest(Context.ModifyHttpRequest context, ExecutionAttributes attributes) {
        lease.checkpoint(budget);
        SdkHttpRequest.Builder b = context.httpRequest().toBuilder()
                .putHeader(header, Long.toString(lease.token()));
        if (signer != null) {
            b.putHeader(signer.header(), signer.sign(Objects.requireNonNull(scope), lease)); // set with the signer
        }
        return b.build();
    }

    /**
     * Checks the point of no return again right before each attempt goes on the wire (retries included).
     *
     * @throws LeaseLostException if the lease is lost or past its point of no return
     */
    @Override
    public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
        lease.checkpoint(budget);
    }
}
