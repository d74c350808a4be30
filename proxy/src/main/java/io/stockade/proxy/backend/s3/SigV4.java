package io.stockade.proxy.backend.s3;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.SortedMap;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import org.jspecify.annotations.Nullable;

/**
 * AWS Signature Version 4, the parts S3 needs: canonical requests, signing keys and signatures. The same code
 * checks what clients send (headers and presigned URLs) and signs what the proxy sends upstream, so the two can
 * never disagree about encoding.
 */
final class SigV4 {
    static final String ALGORITHM = "AWS4-HMAC-SHA256";
    static final String UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD";
    static final String EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    private static final HexFormat HEX = HexFormat.of();

    private SigV4() {
    }

    /**
     * A canonical request.
     *
     * @param method        the HTTP method
     * @param decodedPath   the path, percent-decoded (encoded here once, '/' kept, as S3 wants)
     * @param query         decoded query parameters, in any order (values may be empty, never null)
     * @param headers       the signed headers: lower-case name to value(s), already joined with ','
     * @param payloadHash   hex SHA-256 of the body, or one of the UNSIGNED/STREAMING markers
     */
    static String canonicalRequest(String method, String decodedPath, List<Map.Entry<String, String>> query,
                                   SortedMap<String, String> headers, String payloadHash) {
        StringBuilder b = new StringBuilder(256);
        b.append(method).append('\n').append(encode(decodedPath, false)).append('\n')
                .append(canonicalQuery(query)).append('\n');
        headers.forEach((name, value) -> b.append(name).append(':').append(trim(value)).append('\n'));
        b.append('\n').append(String.join(";", headers.keySet())).append('\n').append(payloadHash);
        return b.toString();
    }

    /**
     * The query as SigV4 wants it: each name and value encoded, sorted by encoded name (code point order), then by
     * encoded value. Not by the {@code name=value} strings: {@code select-type=2} sorts after {@code select=} by name
     * ({@code select} is a prefix of it), before it as a string ('-' is below '=').
     */
    static String canonicalQuery(List<Map.Entry<String, String>> query) {
        List<Map.Entry<String, String>> pairs = new ArrayList<>(query.size());
        for (Map.Entry<String, String> e : query) {
            pairs.add(Map.entry(encode(e.getKey(), true), encode(e.getValue(), true)));
        }
        pairs.sort(Map.Entry.<String, String>comparingByKey().thenComparing(Map.Entry.comparingByValue()));
        List<String> joined = new ArrayList<>(pairs.size());
        for (Map.Entry<String, String> e : pairs) {
            joined.add(e.getKey() + "=" + e.getValue());
        }
        return String.join("&", joined);
    }

    static String stringToSign(String amzDate, String scope, String canonicalRequest) {
        return ALGORITHM + "\n" + amzDate + "\n" + scope + "\n" + sha256Hex(canonicalRequest);
    }

    /** The signing key for a date (yyyyMMdd), region and service. */
    static byte[] signingKey(String secret, String date, String region, String service) {
        byte[] k = hmac(("AWS4" + secret).getBytes(StandardCharsets.UTF_8), date);
        k = hmac(k, region);
        k = hmac(k, service);
        return hmac(k, "aws4_request");
    }

    static String signature(byte[] signingKey, String stringToSign) {
        return HEX.formatHex(hmac(signingKey, stringToSign));
    }

    static byte[] hmac(byte[] key, String data) {
        try {
            Mac mac = Mac.getInstance("HmacSHA256");
            mac.init(new SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(data.getBytes(StandardCharsets.UTF_8));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    static String sha256Hex(String text) {
        return HEX.formatHex(sha256().digest(text.getBytes(StandardCharsets.UTF_8)));
    }

    static String hex(byte[] bytes) {
        return HEX.formatHex(bytes);
    }

    static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }

    /**
     * URI-encodes as SigV4 does: unreserved characters (A-Z a-z 0-9 - _ . ~) stay, every other byte becomes
     * %XX in upper case; '/' stays unless {@code slash} is true.
     */
    static String encode(String text, boolean slash) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        StringBuilder b = new StringBuilder(bytes.length + 16);
        for (byte x : bytes) {
            int c = x & 0xff;
            if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
                    || c == '.' || c == '~' || (c == '/' && !slash)) {
                b.append((char) c);
            } else {
                b.append('%').append(Character.toUpperCase(Character.forDigit(c >> 4, 16)))
                        .append(Character.toUpperCase(Character.forDigit(c & 0xf, 16)));
            }
        }
        return b.toString();
    }

    /**
     * Percent-decodes a URI component ('+' stays a plus; S3 clients encode a space as %20).
     *
     * @throws IllegalArgumentException on a malformed escape
     */
    static String decode(String text) {
        if (text.indexOf('%') < 0) {
            return text;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(text.length());
        for (int i = 0; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '%') {
                if (i + 2 >= text.length()) {
                    throw new IllegalArgumentException("'%' must be followed by two hex digits");
                }
                int hi = Character.digit(text.charAt(i + 1), 16);
                int lo = Character.digit(text.charAt(i + 2), 16);
                if (hi < 0 || lo < 0) {
                    throw new IllegalArgumentException("bad percent escape in '" + text + "'");
                }
                out.write(hi << 4 | lo);
                i += 2;
            } else if (c < 0x80) {
                out.write(c);
            } else {
                byte[] utf8 = String.valueOf(c).getBytes(StandardCharsets.UTF_8);
                out.write(utf8, 0, utf8.length);
            }
        }
        return out.toString(StandardCharsets.UTF_8);
    }

    /** Header value as SigV4 canonicalizes it: trimmed, inner runs of spaces collapsed. */
    private static String trim(String value) {
        return value.trim().replaceAll(" +", " ");
    }

    /** Constant-time comparison of two signatures. */
    static boolean same(@Nullable String a, @Nullable String b) {
        return a != null && b != null
                && MessageDigest.isEqual(a.getBytes(StandardCharsets.US_ASCII), b.getBytes(StandardCharsets.US_ASCII));
    }
}
