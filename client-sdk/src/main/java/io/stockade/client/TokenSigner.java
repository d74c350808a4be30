package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.Objects;
import java.util.regex.Pattern;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

/**
 * Signs fencing tokens for a Stockade policy with {@code fence.verify: {kind: hmac}}, for deployments where the
 * proxy cannot reach the lock service to check a token. The signature binds the scope, the token and an expiry,
 * with a key shared by the writers and the proxy:
 * <pre>
 *   Fencing-Token-Signature: v1; kid=&lt;key id&gt;; exp=&lt;unix seconds&gt;; sig=&lt;base64url, no padding&gt;
 *   sig = HMAC-SHA256(key, "stockade-fence-v1\n" + kid + "\n" + scope + "\n" + token + "\n" + exp)   (UTF-8)
 * </pre>
 * <b>The scope must be the one the proxy renders</b> from the request path with the policy's {@code scope}
 * template (e.g. {@code files/{path}} and {@code PUT /files/report.txt} give {@code files/report.txt}); the SDK
 * cannot know your policy, so you pass it. A signature for another scope is refused.
 *
 * <pre>{@code
 * TokenSigner signer = TokenSigner.hmacSha256("k1", System.getenv("STOCKADE_FENCE_KEY"));
 * HttpClient http = FencedHttpClient.of(HttpClient.newHttpClient(), lease, Duration.ofSeconds(2))
 *         .signed("files/report.txt", signer);
 * }</pre>
 * A policy whose {@code fence.verify.header} is not the default names its header here:
 * {@code TokenSigner.hmacSha256("k1", key).withHeader("X-Fence-Signature")}.
 * Thread-safe.
 */
public final class TokenSigner {
    /** The header Stockade reads the signature from by default. */
    public static final String HEADER = "Fencing-Token-Signature";
    private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    /** An HTTP header name (RFC 9110 token), as the proxy's policy loader accepts for {@code header}. */
    private static final Pattern HEADER_NAME = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Za-z-]+");
    private static final int MIN_KEY_LENGTH = 32;

    private final String keyId;
    private final SecretKeySpec key;
    private final String header;

    private TokenSigner(String keyId, SecretKeySpec key, String header) {
        this.keyId = keyId;
        this.key = key;
        this.header = header;
    }

    /**
     * A signer with one shared key.
     *
     * @param keyId the id the proxy knows the key by ({@code fence.verify.keys[].id})
     * @param key   the key text, as in the proxy's policy (its UTF-8 bytes are the key); at least 32 characters
     * @return the signer
     * @throws IllegalArgumentException if the id is not 1 to 64 of {@code A-Za-z0-9._-} or the key is too short
     */
    public static TokenSigner hmacSha256(String keyId, String key) {
        Objects.requireNonNull(keyId, "keyId");
        Objects.requireNonNull(key, "key");
        if (!KEY_ID.matcher(keyId).matches()) {
            throw new IllegalArgumentException("key id must be 1 to 64 of A-Za-z0-9._-: " + keyId);
        }
        if (key.length() < MIN_KEY_LENGTH) {
            throw new IllegalArgumentException("key must have at least " + MIN_KEY_LENGTH + " characters");
        }
        return new TokenSigner(keyId, new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"),
                HEADER);
    }

    /**
     * This signer, for a policy whose {@code fence.verify.header} names another header than {@value #HEADER}.
     *
     * @param header the header the proxy reads the signature from
     * @return a signer with the same key whose signature goes into {@code header}
     * @throws IllegalArgumentException if {@code header} is not an HTTP header name
     */
    public TokenSigner withHeader(String header) {
        Objects.requireNonNull(header, "header");
        if (!HEADER_NAME.matcher(header).matches()) {
            throw new IllegalArgumentException("not an HTTP header name: '" + header + "'");
        }
        return new TokenSigner(keyId, key, header);
    }

    /** The header the signature goes into: {@value #HEADER} unless {@link #withHeader} said otherwise. */
    public String header() {
        return header;
    }

    /**
     * The header value for one token.
     *
     * @param scope     the fence scope the proxy renders for the request
     * @param token     the lease's token
     * @param expiresAt when the signature stops being accepted (rounded up to whole seconds)
     * @return the value of the signature header ({@link #header()})
     */
    public String sign(String scope, long token, Instant expiresAt) {
        Objects.requireNonNull(scope, "scope");
        long exp = expiresAt.getEpochSecond() + (expiresAt.getNano() > 0 ? 1 : 0);
        String text = "stockade-fence-v1\n" + keyId + "\n" + scope + "\n" + token + "\n" + exp;
        byte[] sig;
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            sig = mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
        return "v1; kid=" + keyId + "; exp=" + exp + "; sig=" + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(sig);
    }

    /**
     * The header value for a lease's token, expiring when the lease would (now + its remaining validity), so a
     * replayed header stops working when the lease does.
     *
     * @param scope the fence scope the proxy renders for the request
     * @param lease the lease
     * @return the value of the signature header ({@link #header()})
     */
    public String sign(String scope, Lease lease) {
        Duration remaining = lease.remaining();
        return sign(scope, lease.token(), Instant.now().plus(remaining));
    }

    @Override
    public String toString() {
        return "TokenSigner[kid=" + keyId + ", header=" + header + "]";
    }
}
