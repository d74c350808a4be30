package io.stockade.proxy.verify.hmac;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.Clock;
import java.util.Base64;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.io.SecretFiles;
import io.stockade.proxy.verify.TokenVerifier;

/**
 * Signed tokens: the request carries, beside the token, a signature only holders of a shared key can make:
 * <pre>
 *   Fencing-Token-Signature: v1; kid=&lt;key id&gt;; exp=&lt;unix seconds&gt;; sig=&lt;base64url(HMAC-SHA256)&gt;
 *   signed text (UTF-8):     "stockade-fence-v1\n" kid "\n" scope "\n" token "\n" exp
 * </pre>
 * The scope is the one the proxy renders for the request, so a signature for one scope does not admit a write to
 * another; the expiry bounds a replayed header. Signatures are compared in constant time. Several keys (by id) are
 * accepted at once, for rotation. The client SDK's {@code TokenSigner} makes these headers.
 * <p>
 * Why not cached: a check costs microseconds, and a remembered (scope, token) would admit an unsigned request
 * after a signed one.
 */
public final class HmacVerifier implements TokenVerifier {
    static final String VERSION = "v1";
    static final String DOMAIN = "stockade-fence-v1";
    private static final String ALGORITHM = "HmacSHA256";

    private final Map<String, SecretKeySpec> keys;
    private final String header;
    private final long skewSeconds;
    private final Clock clock;

    HmacVerifier(Map<String, byte[]> keys, String header, long skewSeconds, Clock clock) {
        Map<String, SecretKeySpec> specs = new LinkedHashMap<>();
        keys.forEach((id, key) -> specs.put(id, new SecretKeySpec(key, ALGORITHM)));
        this.keys = Map.copyOf(specs);
        this.header = header;
        this.skewSeconds = skewSeconds;
        this.clock = clock;
    }

    /**
     * Reads the keys (key files now).
     *
     * @throws IOException if a key file cannot be read or holds a key shorter than the minimum
     */
    public static HmacVerifier open(TokenVerification.Hmac config, Clock clock) throws IOException {
        Map<String, byte[]> keys = new HashMap<>();
        for (TokenVerification.SharedKey k : config.shared()) {
            String text;
            if (k.keyFile() != null) {
                text = SecretFiles.firstLine(k.keyFile());
                if (text.length() < TokenVerification.SharedKey.MIN_LENGTH) {
                    throw new IOException(k.keyFile() + ": key '" + k.id() + "' must have at least "
                            + TokenVerification.SharedKey.MIN_LENGTH + " characters on its first line");
                }
            } else {
                text = Objects.requireNonNull(k.key(), "key"); // SharedKey: exactly one of key and keyFile
            }
            keys.put(k.id(), text.getBytes(StandardCharsets.UTF_8));
        }
        return new HmacVerifier(keys, config.header(), config.clockSkew().toSeconds(), clock);
    }

    @Override
    public Verdict verify(Claim claim) {
        List<String> values = claim.headers().apply(header);
        if (values.isEmpty()) {
            return new Refused("no " + header + " header: this policy admits only signed tokens");
        }
        if (values.size() > 1) {
            return new Refused(values.size() + " " + header + " headers; send exactly one");
        }
        Map<String, String> params = new HashMap<>();
        String[] parts = values.get(0).split(";", -1);
        if (!parts[0].strip().equals(VERSION)) {
            return new Refused(header + " must start with '" + VERSION + ";'");
        }
        for (int i = 1; i < parts.length; i++) {
            String part = parts[i].strip();
            int eq = part.indexOf('=');
            if (eq <= 0 || params.putIfAbsent(part.substring(0, eq), part.substring(eq + 1)) != null) {
                return new Refused(header + " is not 'v1; kid=ID; exp=UNIX-SECONDS; sig=BASE64URL'");
            }
        }
        String kid = params.get("kid");
        String exp = params.get("exp");
        String sig = params.get("sig");
        if (params.size() != 3 || kid == null || exp == null || sig == null || !exp.matches("\\d{1,18}")) {
            return new Refused(header + " is not 'v1; kid=ID; exp=UNIX-SECONDS; sig=BASE64URL'");
        }
        SecretKeySpec key = keys.get(kid);
        if (key == null) {
            return new Refused("unknown key id '" + kid + "'");
        }
        byte[] given;
        try {
            given = Base64.getUrlDecoder().decode(sig);
        } catch (IllegalArgumentException e) {
            return new Refused("sig is not base64url");
        }
        byte[] expected = mac(key, kid, claim.scope(), claim.token(), exp);
        if (!MessageDigest.isEqual(expected, given)) {
            // Checked before the expiry, so an expired answer never tells a forger anything about a signature.
            return new Refused("signature does not match token " + claim.token() + " for scope '" + claim.scope()
                    + "' (wrong key, scope, token or expiry)");
        }
        long now = clock.instant().getEpochSecond();
        if (now > Long.parseLong(exp) + skewSeconds) {
            return new Refused("signature expired " + (now - Long.parseLong(exp)) + " s ago");
        }
        return new Genuine(false);
    }

    static byte[] mac(SecretKeySpec key, String kid, String scope, long token, String exp) {
        try {
            Mac mac = Mac.getInstance(ALGORITHM);
            mac.init(key);
            String text = DOMAIN + "\n" + kid + "\n" + scope + "\n" + token + "\n" + exp;
            return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("HmacSHA256 is part of every JDK", e);
        }
    }

    @Override
    public String kind() {
        return "hmac";
    }

    @Override
    public void close() {
    }
}
