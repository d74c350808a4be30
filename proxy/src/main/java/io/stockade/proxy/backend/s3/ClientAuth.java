package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Base64;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import javax.crypto.Mac;
import javax.crypto.spec.SecretKeySpec;

import io.stockade.policy.BackendConfig;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * Checks a client's SigV4 signature (Authorization header or presigned URL) against the access keys the policy
 * accepts. The body is not read here: a hex payload hash or signed chunks are checked while the body streams
 * ({@link PayloadReader}), with the {@link Verified} this returns.
 */
final class ClientAuth {
    static final DateTimeFormatter AMZ_DATE = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
            .withZone(ZoneOffset.UTC);
    /** How far a signed request's time may be from ours (S3 allows 15 minutes). */
    static final Duration MAX_SKEW = Duration.ofMinutes(15);
    /** The longest a presigned URL may be valid (S3: 7 days). */
    static final long MAX_EXPIRES = 604_800;

    private final Map<String, String> secrets;

    ClientAuth(List<BackendConfig.Credentials> clients) {
        this.secrets = clients.stream().collect(Collectors.toMap(BackendConfig.Credentials::accessKey,
                BackendConfig.Credentials::secretKey, (a, b) -> b));
    }

    /**
     * A checked signature, for the payload checks that follow.
     *
     * @param signedHeaders the lower-case names of the headers the signature covers
     */
    @SuppressWarnings("ArrayRecordComponent") // a carrier: never compared, hashed or printed
    record Verified(String accessKey, byte[] signingKey, String amzDate, String scope, String seedSignature,
                    String payloadHash, Set<String> signedHeaders) {
    }

    Verified verify(ServerRequest req, S3Request s3, Instant now) throws S3Refused {
        if (!s3.presigned() && s3.param("Signature").isPresent() && s3.param("AWSAccessKeyId").isPresent()) {
            throw sigV2("a presigned URL");
        }
        return s3.presigned() ? presigned(req, s3, now) : header(req, s3, now);
    }

    /** What S3 answers a SigV2 request in a region that takes SigV4 only, and what to do instead. */
    private static S3Refused sigV2(String what) {
        return new S3Refused(400, "InvalidRequest", "The authorization mechanism you have provided is not supported: "
                + what + " signed with Signature Version 2 (AWS CLI v1 and boto3 presign with it in some regions);"
                + " sign with " + SigV4.ALGORITHM + " instead (e.g. signature_version = s3v4 in ~/.aws/config, or"
                + " Config(signature_version='s3v4') in boto3)");
    }

    private Verified header(ServerRequest req, S3Request s3, Instant now) throws S3Refused {
        String authorization = req.headers().first(HeaderNames.AUTHORIZATION).orElse(null);
        if (authorization == null) {
            throw new S3Refused(403, "AccessDenied", "Anonymous access is refused: sign the request with SigV4");
        }
        if (authorization.startsWith("AWS ")) {
            throw sigV2("a request");
        }
        if (!authorization.startsWith(SigV4.ALGORITHM + " ")) {
            throw new S3Refused(400, "AuthorizationHeaderMalformed", "only " + SigV4.ALGORITHM + " is accepted");
        }
        Map<String, String> parts = new TreeMap<>();
        for (String part : authorization.substring(SigV4.ALGORITHM.length() + 1).split(",", -1)) {
            int eq = part.indexOf('=');
            if (eq > 0) {
                parts.put(part.substring(0, eq).trim(), part.substring(eq + 1).trim());
            }
        }
        String credential = parts.get("Credential");
        String signedHeaders = parts.get("SignedHeaders");
        String signature = parts.get("Signature");
        if (credential == null || signedHeaders == null || signature == null) {
            throw new S3Refused(400, "AuthorizationHeaderMalformed",
                    "the Authorization header needs Credential, SignedHeaders and Signature");
        }
        String amzDate = req.headers().first(HeaderNames.create("x-amz-date"))
                .or(() -> req.headers().first(HeaderNames.DATE)).orElse(null);
        String payload = req.headers().first(HeaderNames.create("x-amz-content-sha256")).orElse(null);
        if (payload == null) {
            throw new S3Refused(400, "InvalidRequest", "missing required header x-amz-content-sha256");
        }
        Instant signedAt = parseDate(amzDate);
        if (Duration.between(signedAt, now).abs().compareTo(MAX_SKEW) > 0) {
            throw new S3Refused(403, "RequestTimeTooSkewed",
                    "The difference between the request time and the current time is too large.");
        }
        return check(req, s3, credential, signedHeaders, signature,
                Objects.requireNonNull(amzDate, "parseDate refused a request without a date"), payload, s3.query());
    }

    private Verified presigned(ServerRequest req, S3Request s3, Instant now) throws S3Refused {
        if (!s3.param("X-Amz-Algorithm").orElse("").equals(SigV4.ALGORITHM)) {
            throw new S3Refused(400, "AuthorizationQueryParametersError", "X-Amz-Algorithm must be " + SigV4.ALGORITHM);
        }
        String credential = s3.param("X-Amz-Credential").orElse(null);
        String signedHeaders = s3.param("X-Amz-SignedHeaders").orElse(null);
        String signature = s3.param("X-Amz-Signature").orElse(null);
        String amzDate = s3.param("X-Amz-Date").orElse(null);
        String expires = s3.param("X-Amz-Expires").orElse(null);
        if (credential == null || signedHeaders == null || amzDate == null || expires == null) {
            throw new S3Refused(400, "AuthorizationQueryParametersError", "a presigned URL needs X-Amz-Credential,"
                    + " X-Amz-SignedHeaders, X-Amz-Date, X-Amz-Expires and X-Amz-Signature");
        }
        // What AWS S3 answers, case by case: a malformed or out-of-range X-Amz-Expires or X-Amz-Date is 400
        // AuthorizationQueryParametersError; an expired URL (X-Amz-Expires=0 included) and one signed for a time
        // still to come are 403 AccessDenied.
        long seconds;
        try {
            seconds = Long.parseLong(expires);
        } catch (NumberFormatException e) {
            throw new S3Refused(400, "AuthorizationQueryParametersError", "X-Amz-Expires should be a number");
        }
        if (seconds < 0) {
            throw new S3Refused(400, "AuthorizationQueryParametersError", "X-Amz-Expires must be non-negative");
        }
        if (seconds > MAX_EXPIRES) {
            throw new S3Refused(400, "AuthorizationQueryParametersError", "X-Amz-Expires must be less than a week (in"
                    + " seconds); that is, the given X-Amz-Expires must be less than " + MAX_EXPIRES + " seconds");
        }
        Instant signedAt;
        try {
            signedAt = AMZ_DATE.parse(amzDate, Instant::from);
        } catch (DateTimeParseException e) {
            throw new S3Refused(400, "AuthorizationQueryParametersError", "X-Amz-Date must be in the ISO8601 Long "
                    + "Format \"yyyyMMdd'T'HHmmss'Z'\"");
        }
        if (signedAt.isAfter(now.plus(MAX_SKEW))) {
            throw new S3Refused(403, "AccessDenied", "Request is not valid yet");
        }
        if (!now.isBefore(signedAt.plusSeconds(seconds))) {
            throw new S3Refused(403, "AccessDenied", "Request has expired");
        }
        List<Map.Entry<String, String>> query = s3.query().stream()
                .filter(e -> !e.getKey().equals("X-Amz-Signature")).toList();
        String payload = s3.param("X-Amz-Content-Sha256").orElse(SigV4.UNSIGNED_PAYLOAD);
        return check(req, s3, credential, signedHeaders, signature, amzDate, payload, query);
    }

    private Verified check(ServerRequest req, S3Request s3, String credential, String signedHeaders,
                           @Nullable String signature, String amzDate, String payload,
                           List<Map.Entry<String, String>> query)
            throws S3Refused {
        // limit 0 drops trailing empty strings: a trailing '/' is not a sixth part
        String[] scopeParts = credential.split("/", 0);
        if (scopeParts.length != 5 || !scopeParts[4].equals("aws4_request")) {
            throw new S3Refused(400, "AuthorizationHeaderMalformed",
                    "Credential must be ACCESSKEY/DATE/REGION/SERVICE/aws4_request");
        }
        String accessKey = scopeParts[0];
        String secret = secrets.get(accessKey);
        if (secret == null) {
            throw new S3Refused(403, "InvalidAccessKeyId",
                    "The AWS Access Key Id you provided does not exist in our records.");
        }
        if (!amzDate.startsWith(scopeParts[1])) {
            throw new S3Refused(400, "AuthorizationHeaderMalformed", "the credential date " + scopeParts[1]
                    + " is not the date of the request");
        }
        TreeMap<String, String> headers = new TreeMap<>();
        Map<String, String> all = headerMap(req);
        // limit 0 drops trailing empty strings: a trailing ';' names no header
        for (String name : signedHeaders.split(";", 0)) {
            String value = all.get(name);
            if (value == null) {
                throw new S3Refused(403, "SignatureDoesNotMatch", "signed header '" + name + "' is missing");
            }
            headers.put(name, value);
        }
        if (!headers.containsKey("host")) {
            throw new S3Refused(403, "SignatureDoesNotMatch", "the host header must be signed");
        }
        String scope = String.join("/", scopeParts[1], scopeParts[2], scopeParts[3], scopeParts[4]);
        String canonical = SigV4.canonicalRequest(s3.method(), s3.decodedPath(), query, headers, payload);
        String stringToSign = SigV4.stringToSign(amzDate, scope, canonical);
        byte[] key = SigV4.signingKey(secret, scopeParts[1], scopeParts[2], scopeParts[3]);
        if (!SigV4.same(SigV4.signature(key, stringToSign), signature)) {
            throw new S3Refused(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the"
                    + " signature you provided. Check your key and signing method.");
        }
        return new Verified(accessKey, key, amzDate, scope,
                Objects.requireNonNull(signature, "SigV4.same matched it, so it is there"), payload,
                Set.copyOf(headers.keySet()));
    }

    /**
     * Checks a browser form's signature over its policy document (S3's POST Object): SigV4 ({@code x-amz-algorithm},
     * {@code x-amz-credential}, {@code x-amz-date}, {@code x-amz-signature}: the hex HMAC-SHA256 of the base64
     * policy under the signing key) or SigV2 ({@code AWSAccessKeyId}, {@code signature}: the base64 HMAC-SHA1 of
     * the base64 policy under the secret). Unlike a SigV2 request, whose canonical form the proxy does not
     * rebuild, a SigV2 form signature covers exactly what a SigV4 one does: the policy text.
     *
     * @param field the form's fields by lower-case name
     */
    void verifyForm(Function<String, String> field, String policy, Instant now) throws S3Refused {
        String v4 = field.apply("x-amz-signature");
        if (v4 != null) {
            String algorithm = field.apply("x-amz-algorithm");
            String credential = field.apply("x-amz-credential");
            String amzDate = field.apply("x-amz-date");
            if (!SigV4.ALGORITHM.equals(algorithm)) {
                throw new S3Refused(400, "InvalidArgument", "Bucket POST must contain a field named "
                        + "'x-amz-algorithm' with the value " + SigV4.ALGORITHM);
            }
            if (credential == null || amzDate == null) {
                throw new S3Refused(400, "InvalidArgument", "Bucket POST must contain the fields 'x-amz-credential'"
                        + " and 'x-amz-date'");
            }
            // limit 0 drops trailing empty strings: a trailing '/' is not a sixth part
            String[] scope = credential.split("/", 0);
            if (scope.length != 5 || !scope[4].equals("aws4_request")) {
                throw new S3Refused(400, "InvalidArgument", "x-amz-credential must be "
                        + "ACCESSKEY/DATE/REGION/SERVICE/aws4_request");
            }
            String secret = secrets.get(scope[0]);
            if (secret == null) {
                throw new S3Refused(403, "InvalidAccessKeyId",
                        "The AWS Access Key Id you provided does not exist in our records.");
            }
            if (!amzDate.startsWith(scope[1])) {
                throw new S3Refused(400, "InvalidArgument", "the credential date " + scope[1] + " is not the date"
                        + " of x-amz-date");
            }
            try {
                AMZ_DATE.parse(amzDate, Instant::from);
            } catch (DateTimeParseException e) {
                throw new S3Refused(400, "InvalidArgument", "x-amz-date '" + amzDate + "' is not yyyyMMddTHHmmssZ");
            }
            byte[] key = SigV4.signingKey(secret, scope[1], scope[2], scope[3]);
            if (!SigV4.same(SigV4.signature(key, policy), v4.trim().toLowerCase(Locale.ROOT))) {
                throw new S3Refused(403, "SignatureDoesNotMatch", "The request signature we calculated does not "
                        + "match the signature you provided. Check your key and signing method.");
            }
            return;
        }
        String accessKey = field.apply("awsaccesskeyid");
        String v2 = field.apply("signature");
        if (accessKey == null || v2 == null) {
            throw new S3Refused(400, "InvalidArgument", "Bucket POST must contain a field named 'x-amz-signature' "
                    + "(SigV4: with x-amz-algorithm, x-amz-credential and x-amz-date) or the fields "
                    + "'AWSAccessKeyId' and 'signature' (SigV2)");
        }
        String secret = secrets.get(accessKey);
        if (secret == null) {
            throw new S3Refused(403, "InvalidAccessKeyId",
                    "The AWS Access Key Id you provided does not exist in our records.");
        }
        String expected;
        try {
            Mac mac = Mac.getInstance("HmacSHA1");
            mac.init(new SecretKeySpec(secret.getBytes(StandardCharsets.UTF_8),
                    "HmacSHA1"));
            expected = Base64.getEncoder().encodeToString(mac.doFinal(policy.getBytes(
                    StandardCharsets.UTF_8)));
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException("the JDK has no HmacSHA1", e);
        }
        if (!SigV4.same(expected, v2.trim())) {
            throw new S3Refused(403, "SignatureDoesNotMatch", "The request signature we calculated does not match the"
                    + " signature you provided. Check your key and signing method.");
        }
    }

    private static Map<String, String> headerMap(ServerRequest req) {
        Map<String, String> all = new TreeMap<>();
        for (Header header : req.headers()) {
            all.merge(header.name().toLowerCase(Locale.ROOT), String.join(",", header.allValues()),
                    (a, b) -> a + "," + b);
        }
        return all;
    }

    private static Instant parseDate(@Nullable String amzDate) throws S3Refused {
        if (amzDate == null) {
            throw new S3Refused(403, "AccessDenied", "the request has no x-amz-date");
        }
        try {
            return AMZ_DATE.parse(amzDate, Instant::from);
        } catch (DateTimeParseException e) {
            throw new S3Refused(403, "AccessDenied", "x-amz-date '" + amzDate + "' is not yyyyMMddTHHmmssZ");
        }
    }

    static Function<Instant, String> formatter() {
        return AMZ_DATE::format;
    }
}
