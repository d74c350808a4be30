package io.stockade.conformance.writer;

import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.jspecify.annotations.Nullable;

/**
 * AWS Signature Version 4 for one S3 request with its whole payload in hand (a signed {@code x-amz-content-sha256},
 * no chunking), so a writer can PUT to an S3 endpoint — the proxy's S3 backend with {@code auth: sigv4}, or the
 * bucket itself for the paired control — while staying one request on one connection ({@link RawHttp}). The
 * fencing header is signed too: nobody on the path can change the token without breaking the signature.
 *
 * @param accessKey the access key id
 * @param secretKey the secret key
 * @param region    the region signed for (s3proxy and MinIO accept {@code us-east-1})
 */
public record SigV4(String accessKey, String secretKey, String region) {

    /** The environment variable writers read their credentials from (never the command line: {@code ps} shows it). */
    public static final String ENV = "STOCKADE_CONFORMANCE_SIGV4";

    private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'", Locale.ROOT);

    /** Never shows the secret. */
    @Override
    public String toString() {
        return "SigV4[" + accessKey + ", " + region + "]";
    }

    /** {@code accessKey:region:secretKey} (the secret last: it may hold any character). */
    public String spec() {
        return accessKey + ":" + region + ":" + secretKey;
    }

    /** The inverse of {@link #spec()}; null for null or empty. */
    public static @Nullable SigV4 parse(@Nullable String spec) {
        if (spec == null || spec.isEmpty()) {
            return null;
        }
        String[] p = spec.split(":", 3);
        if (p.length != 3) {
            throw new IllegalArgumentException("a SigV4 spec is accessKey:region:secretKey");
        }
        return new SigV4(p[0], p[2], p[1]);
    }

    /**
     * The headers to add to a request of {@code method} on {@code uri} carrying {@code payload} and
     * {@code headers} (which are signed as well): {@code x-amz-date}, {@code x-amz-content-sha256},
     * {@code Authorization}. The {@code Host} signed is the one {@link RawHttp} sends.
     */
    public Map<String, String> sign(String method, URI uri, byte[] payload, Map<String, String> headers,
                                    ZonedDateTime now) {
        return sign(method, RawHttp.host(uri), uri, payload, headers, now);
    }

    /** As {@link #sign(String, URI, byte[], Map, ZonedDateTime)}, with the {@code Host} value given. */
    Map<String, String> sign(String method, String host, URI uri, byte[] payload, Map<String, String> headers,
                             ZonedDateTime now) {
        String stamp = now.withZoneSameInstant(ZoneOffset.UTC).format(STAMP);
        String day = stamp.substring(0, 8);
        String payloadHash = hex(sha256(payload));
        TreeMap<String, String> canonical = new TreeMap<>();
        if (headers != null) {
            headers.forEach((k, v) -> canonical.put(k.toLowerCase(Locale.ROOT), v.trim()));
        }
        canonical.put("host", host);
        canonical.put("x-amz-content-sha256", payloadHash);
        canonical.put("x-amz-date", stamp);
        StringBuilder ch = new StringBuilder();
        canonical.forEach((k, v) -> ch.append(k).append(':').append(v).append('\n'));
        String signed = String.join(";", canonical.keySet());
        String path = uri.getRawPath() == null || uri.getRawPath().isEmpty() ? "/" : uri.getRawPath();
        String request = method + "\n" + canonicalPath(path) + "\n" + canonicalQuery(uri.getRawQuery()) + "\n"
                + ch + "\n" + signed + "\n" + payloadHash;
        String scope = day + "/" + region + "/s3/aws4_request";
        String toSign = "AWS4-HMAC-SHA256\n" + stamp + "\n" + scope + "\n"
                + hex(sha256(request.getBytes(StandardCharsets.UTF_8)));
        byte[] key = hmac(("AWS4" + secretKey).getBytes(StandardCharsets.UTF_8), day);
        key = hmac(key, region);
        key = hmac(key, "s3");
        key = hmac(key, "aws4_request");
        String signature = hex(hmac(key, toSign));
        Map<String, String> out = new LinkedHashMap<>();
        out.put("x-amz-date", stamp);
        out.put("x-amz-content-sha256", payloadHash);
        out.put("Authorization", "AWS4-HMAC-SHA256 Credential=" + accessKey + "/" + scope + ", SignedHeaders="
                + signed + ", Signature=" + signature);
        return out;
    }

    /** S3 signs the path as sent (each segment URI-encoded once); re-encode only what is not already safe. */
    private static String canonicalPath(String rawPath) {
        StringBuilder b = new StringBuilder();
        for (byte c : rawPath.getBytes(StandardCharsets.UTF_8)) {
            int u = c & 0xff;
            if ((u >= 'A' && u <= 'Z') || (u >= 'a' && u <= 'z') || (u >= '0' && u <= '9') || u == '-' || u == '_'
                    || u == '.' || u == '~' || u == '/' || u == '%') {
                b.append((char) u);
            } else {
                b.append('%').append(String.format("%02X", u));
            }
        }
        return b.toString();
    }

    private static String canonicalQuery(String raw) {
        if (raw == null || raw.isEmpty()) {
            return "";
        }
        TreeMap<String, String> q = new TreeMap<>();
        // limit 0 drops trailing empty strings: a trailing '&' adds no empty parameter
        for (String kv : raw.split("&", 0)) {
            int eq = kv.indexOf('=');
            q.put(eq < 0 ? kv : kv.substring(0, eq), eq < 0 ? "" : kv.substring(eq + 1));
        }
        StringBuilder b = new StringBuilder();
        q.forEach((k, v) -> b.append(b.isEmpty() ? "" : "&").append(k).append('=').append(v));
        return b.toString();
    }

    private static byte[] sha256(byte[] data) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(data);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static byte[] hmac(byte[] key, String data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String hex(byte[] b) {
        return HexFormat.of().formatHex(b);
    }
}
