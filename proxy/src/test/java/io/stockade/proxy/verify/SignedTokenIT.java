package io.stockade.proxy.verify;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.util.Base64;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.VerifiedFiles;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code fence.verify: {kind: hmac}} through a real proxy and the file backend: each way of forging a token is
 * refused (403) and does not raise the fence, which the honest write after it proves. Signatures are made here
 * from the documented format, independently of the proxy's code (the client SDK's {@code TokenSigner} is tested
 * against a real proxy in the SDK's {@code SignedTokenSdkIT}).
 */
class SignedTokenIT {
    static final String KEY = "0123456789abcdef0123456789abcdef-current";
    static final String OLD_KEY = "fedcba9876543210fedcba9876543210-previous";

    @TempDir
    Path dir;
    ProxyFixture proxy;
    Path root;

    @BeforeEach
    void start() throws Exception {
        root = dir.resolve("root");
        Path oldKeyFile = dir.resolve("k0.key");
        Files.writeString(oldKeyFile, OLD_KEY + "\n");
        proxy = VerifiedFiles.start(dir, """
                kind: hmac
                keys:
                  - {id: k1, key: "${FENCE_KEY}"}
                  - {id: k0, key-file: "${OLD_KEY_FILE}"}
                """, Map.of("FENCE_KEY", KEY, "OLD_KEY_FILE", oldKeyFile.toString()));
    }

    @AfterEach
    void stop() {
        if (proxy != null) {
            proxy.close();
        }
    }

    /** The documented signature: HMAC-SHA256 over "stockade-fence-v1\n" kid "\n" scope "\n" token "\n" exp. */
    static String sign(String kid, String key, String scope, long token, long exp) throws Exception {
        Mac mac = Mac.getInstance("HmacSHA256");
        mac.init(new SecretKeySpec(key.getBytes(StandardCharsets.UTF_8), "HmacSHA256"));
        byte[] sig = mac.doFinal(("stockade-fence-v1\n" + kid + "\n" + scope + "\n" + token + "\n" + exp)
                .getBytes(StandardCharsets.UTF_8));
        return "v1; kid=" + kid + "; exp=" + exp + "; sig=" + Base64.getUrlEncoder().withoutPadding()
                .encodeToString(sig);
    }

    static long inAMinute() {
        return Instant.now().getEpochSecond() + 60;
    }

    Http.Response put(String path, String body, long token, String signature) throws Exception {
        Map<String, String> headers = new HashMap<>();
        headers.put("Fencing-Token", Long.toString(token));
        if (signature != null) {
            headers.put("Fencing-Token-Signature", signature);
        }
        return Http.put(proxy.uri(path), body, headers);
    }

    /** A correctly signed write of {@code token} to {@code /files/<name>}. */
    Http.Response honest(String name, String body, long token) throws Exception {
        return put("/files/" + name, body, token, sign("k1", KEY, "files/" + name, token, inAMinute()));
    }

    Optional<String> stored(String name) throws Exception {
        Path file = root.resolve("files").resolve(name);
        return Files.exists(file) ? Optional.of(Files.readString(file)) : Optional.empty();
    }

    void assertRefusedAndFenceUntouched(Http.Response r, String name) throws Exception {
        assertEquals(403, r.status(), r.body());
        assertTrue(r.body().contains("urn:stockade:problem:unverified-token"), r.body());
        assertEquals(Optional.empty(), proxy.server().store().get("files/" + name).map(s -> s.token()),
                "a refused token must not raise the fence");
        // the honest holder (a low token) is not locked out
        assertEquals(201, honest(name, "honest", 3).status());
        assertEquals(Optional.of("honest"), stored(name));
    }

    @Test
    void signedTokensPass() throws Exception {
        assertEquals(201, honest("a", "v5", 5).status());
        assertEquals(Optional.of("v5"), stored("a"));
        assertTrue(honest("a", "v5b", 5).status() / 100 == 2, "the same holder keeps writing");
        assertEquals(Optional.of("v5b"), stored("a"));
    }

    @Test
    void anUnsignedInflatedTokenIsRefusedAndDoesNotRaiseTheFence() throws Exception {
        Http.Response r = put("/files/a", "evil", Long.MAX_VALUE, null);
        assertTrue(r.body().contains("no Fencing-Token-Signature header"), r.body());
        assertRefusedAndFenceUntouched(r, "a");
        assertEquals(1, proxy.counted("files", Outcome.UNVERIFIED, 1));
        assertEquals(1, proxy.server().metrics().verifications("files", "refused"));
    }

    @Test
    void aTokenSignedWithTheWrongKeyIsRefused() throws Exception {
        String forged = sign("k1", "an-attacker-guessed-this-key-0000000000", "files/a", Long.MAX_VALUE, inAMinute());
        assertRefusedAndFenceUntouched(put("/files/a", "evil", Long.MAX_VALUE, forged), "a");
    }

    @Test
    void aSignatureForAnotherScopeIsRefused() throws Exception {
        String forB = sign("k1", KEY, "files/b", 1000, inAMinute());
        assertRefusedAndFenceUntouched(put("/files/a", "evil", 1000, forB), "a");
    }

    @Test
    void aSignatureForAnotherTokenIsRefused() throws Exception {
        String for7 = sign("k1", KEY, "files/a", 7, inAMinute());
        assertRefusedAndFenceUntouched(put("/files/a", "evil", Long.MAX_VALUE, for7), "a");
    }

    @Test
    void anExpiredSignatureIsRefused() throws Exception {
        long anHourAgo = Instant.now().getEpochSecond() - 3600;
        Http.Response r = put("/files/a", "late", 1000, sign("k1", KEY, "files/a", 1000, anHourAgo));
        assertTrue(r.body().contains("expired"), r.body());
        assertRefusedAndFenceUntouched(r, "a");
    }

    @Test
    void anUnknownKeyIdOrAMangledHeaderIsRefused() throws Exception {
        assertRefusedAndFenceUntouched(put("/files/a", "evil", 1000,
                sign("k9", KEY, "files/a", 1000, inAMinute())), "a");
        String good = sign("k1", KEY, "files/b", 1000, inAMinute());
        for (String mangled : new String[]{good.replace("v1;", "v2;"), good + "; exp=1", good.replace("sig=", "sig=x"),
                "v1; kid=k1; exp=-1; sig=abc", "v1"}) {
            Http.Response r = put("/files/b", "evil", 1000, mangled);
            assertEquals(403, r.status(), mangled + " -> " + r.body());
        }
        assertEquals(Optional.empty(), stored("b"));
    }

    @Test
    void bothKeysOfARotationAreAccepted() throws Exception {
        long exp = inAMinute();
        assertEquals(201, put("/files/a", "k1", 5, sign("k1", KEY, "files/a", 5, exp)).status());
        assertEquals(Optional.of("k1"), stored("a"));
        // k0 comes from a key file
        assertTrue(put("/files/a", "k0", 6, sign("k0", OLD_KEY, "files/a", 6, exp)).status() / 100 == 2);
        assertEquals(Optional.of("k0"), stored("a"));
    }

    @Test
    void anUnsignedTokenEqualToTheHighestIsRefusedButAStaleOneIsStale() throws Exception {
        assertEquals(201, honest("a", "v5", 5).status());
        // the fence would admit an equal token: it is verified
        assertEquals(403, put("/files/a", "evil", 5, null).status());
        assertEquals(Optional.of("v5"), stored("a"));
        // a token below the highest is refused by the fence (409 stale), the verifier is not asked
        Http.Response stale = put("/files/a", "zombie", 4, null);
        assertEquals(409, stale.status(), stale.body());
        assertEquals(Optional.of("v5"), stored("a"));
    }
}
