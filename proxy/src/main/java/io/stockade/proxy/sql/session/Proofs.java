package io.stockade.proxy.sql.session;

import java.nio.charset.StandardCharsets;
import java.security.InvalidKeyException;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.HexFormat;
import java.util.function.LongSupplier;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.jspecify.annotations.Nullable;

/**
 * What the listener sets {@code stockade.fencing_token} to once it verified a token: the token and a proof only the
 * listener and the database's fence role can make, {@code <token>;<binding>:<hex HMAC-SHA256(key,
 * "<token>;<binding>")>} (the check is {@code token_of} in {@code fence-functions.sql}). A session's token is bound
 * to its server session ({@code s:<pid>:<backend start, µs>}); a transaction's ({@code SET LOCAL}) to an expiry
 * ({@code t:<epoch ms>}) the transaction must have started before, so it also holds behind a transaction pooler,
 * where the server session is not known.
 */
public final class Proofs {
    /** How long a SET LOCAL proof is good for, counted from when the listener made it. */
    public static final Duration LOCAL_WINDOW = Duration.ofSeconds(30);
    private final SecretKeySpec key;
    private final LongSupplier millis;

    /** @param key the HMAC key (SHA-256 of the secret file's first line, as the installer stores it) */
    public Proofs(byte[] key, LongSupplier millis) {
        this.key = new SecretKeySpec(key, "HmacSHA256");
        this.millis = millis;
    }

    /**
     * A session's token, for the server session {@code session} ({@code <pid>:<start µs>}); null when the session
     * query answered none (the proof then names no server session, and the database refuses it).
     */
    public String session(long token, @Nullable String session) {
        return signed(token + ";s:" + session);
    }

    /** A transaction's token. */
    public String local(long token) {
        return signed(token + ";t:" + (millis.getAsLong() + LOCAL_WINDOW.toMillis()));
    }

    private String signed(String text) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(key);
            return text + ":" + HexFormat.of().formatHex(mac.doFinal(text.getBytes(
                    StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException | InvalidKeyException e) {
            throw new IllegalStateException("HmacSHA256 is missing from this JVM", e);
        }
    }
}
