package io.stockade.proxy.backend.s3;

import java.io.ByteArrayOutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static io.stockade.proxy.S3Fixture.token;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * S3 as real tools use it: browser-form uploads (S3's POST Object) through the proxy. The form's policy document is
 * signed
 * (SigV4, or SigV2 as older SDKs and Ceph's s3-tests sign it), its expiration and conditions are judged as S3
 * judges them, and the upload is fenced by the form field {@code x-amz-meta-fencing-token}, which the policy must
 * name like every field. Each refusal is checked against s3proxy read directly: nothing written, the object's
 * token where it was.
 */
class S3PostObjectIT {
    private static final String BUCKET = "forms";
    private static final DateTimeFormatter AMZ = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
            .withZone(ZoneOffset.UTC);
    @TempDir
    static Path journal;
    private static S3Fixture fixture;
    private static S3Client s3;
    private static S3Client direct;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal);
        s3 = fixture.client();
        direct = fixture.direct();
        direct.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    static void stop() throws Exception {
        fixture.close();
    }

    /** A form: its fields in order, then the file. */
    private static final class Form {
        final Map<String, String> fields = new LinkedHashMap<>();
        String fileName = "upload.txt";
        byte[] file = "form data".getBytes(StandardCharsets.UTF_8);

        Form field(String name, String value) {
            fields.put(name, value);
            return this;
        }

        Form without(String name) {
            fields.remove(name);
            return this;
        }

        HttpResponse<String> post() throws Exception {
            return post(Map.of());
        }

        HttpResponse<String> post(Map<String, String> headers) throws Exception {
            return post(fixture.proxyUri(), headers);
        }

        /** Posts the form to the proxy at {@code proxy}. */
        HttpResponse<String> post(URI proxy, Map<String, String> headers) throws Exception {
            String boundary = "----stockade" + Long.toHexString(new Random().nextLong());
            ByteArrayOutputStream body = new ByteArrayOutputStream();
            for (Map.Entry<String, String> f : fields.entrySet()) {
                body.write(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"" + f.getKey()
                        + "\"\r\n\r\n" + f.getValue() + "\r\n").getBytes(StandardCharsets.UTF_8));
            }
            body.write(("--" + boundary + "\r\nContent-Disposition: form-data; name=\"file\"; filename=\"" + fileName
                    + "\"\r\nContent-Type: application/octet-stream\r\n\r\n").getBytes(StandardCharsets.UTF_8));
            body.write(file);
            body.write(("\r\n--" + boundary + "--\r\n").getBytes(StandardCharsets.UTF_8));
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(proxy + "/" + BUCKET))
                    .header("Content-Type", "multipart/form-data; boundary=" + boundary)
                    .POST(HttpRequest.BodyPublishers.ofByteArray(body.toByteArray()));
            headers.forEach(request::header);
            return HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1)
                    .followRedirects(HttpClient.Redirect.NEVER).build()
                    .send(request.build(), HttpResponse.BodyHandlers.ofString());
        }
    }

    /**
     * A SigV4-signed form for {@code key} with token {@code token} (null: no token field), conditions naming every
     * field, plus {@code extraConditions}; the expiration {@code expiresIn} seconds from now.
     */
    private static Form signedForm(String key, Long token, long expiresIn, List<String> extraConditions,
                                   Map<String, String> extraFields) throws Exception {
        Instant now = Instant.now();
        String amzDate = AMZ.format(now);
        String credential = S3Fixture.APP_KEY + "/" + amzDate.substring(0, 8) + "/us-east-1/s3/aws4_request";
        Form form = new Form().field("key", key);
        form.fields.putAll(extraFields);
        if (token != null) {
            form.field("x-amz-meta-fencing-token", Long.toString(token));
        }
        form.field("x-amz-algorithm", "AWS4-HMAC-SHA256").field("x-amz-credential", credential)
                .field("x-amz-date", amzDate);
        List<String> conditions = new ArrayList<>();
        conditions.add("{\"bucket\": \"" + BUCKET + "\"}");
        for (Map.Entry<String, String> f : form.fields.entrySet()) {
            conditions.add("[\"eq\", \"$" + f.getKey() + "\", \"" + f.getValue() + "\"]");
        }
        conditions.addAll(extraConditions);
        String policy = "{\"expiration\": \"" + DateTimeFormatter.ISO_INSTANT.format(now.plusSeconds(expiresIn)
                .truncatedTo(java.time.temporal.ChronoUnit.SECONDS)) + "\", \"conditions\": ["
                + String.join(", ", conditions) + "]}";
        return sign(form, policy, amzDate);
    }

    private static Form sign(Form form, String policyJson, String amzDate) throws Exception {
        String policy = Base64.getEncoder().encodeToString(policyJson.getBytes(StandardCharsets.UTF_8));
        byte[] key = hmac(hmac(hmac(hmac(("AWS4" + S3Fixture.APP_SECRET).getBytes(StandardCharsets.UTF_8),
                amzDate.substring(0, 8)), "us-east-1"), "s3"), "aws4_request");
        return form.field("policy", policy).field("x-amz-signature", java.util.HexFormat.of().formatHex(hmac(key,
                policy)));
    }

    private static byte[] hmac(byte[] key, String text) throws Exception {
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
    }

    private static Form signedForm(String key, Long token) throws Exception {
        return signedForm(key, token, 600, List.of(), Map.of());
    }

    private static HeadObjectResponse stored(String key) {
        return direct.headObject(b -> b.bucket(BUCKET).key(key));
    }

    private static String storedBody(String key) {
        return direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String();
    }

    private static void assertS3Error(HttpResponse<String> r, int status, String code, String message) {
        assertEquals(status, r.statusCode(), r.body());
        assertTrue(r.body().contains("<Code>" + code + "</Code>") && r.body().contains(message), r.body());
    }

    private static void assertNothingStored(String key) {
        assertThrows(NoSuchKeyException.class, () -> stored(key));
    }

    @Test
    void aSignedFormWithItsTokenUploadsAndAStaleOneIsRefused() throws Exception {
        Form form = signedForm("up/a.txt", 7L, 600, List.of(), Map.of("Content-Type", "text/plain",
                "x-amz-meta-owner", "browser"));
        HttpResponse<String> ok = form.post();
        assertEquals(204, ok.statusCode(), ok.body());
        assertEquals("form data", storedBody("up/a.txt"));
        HeadObjectResponse head = stored("up/a.txt");
        assertEquals("7", head.metadata().get("fencing-token"));
        assertEquals("browser", head.metadata().get("owner"));
        assertEquals("text/plain", head.contentType());
        assertEquals(head.eTag(), ok.headers().firstValue("ETag").orElse(null));

        // a zombie's form with 6: refused, its file never read, nothing changed
        Form zombie = signedForm("up/a.txt", 6L);
        zombie.file = "zombie".getBytes(StandardCharsets.UTF_8);
        HttpResponse<String> refused = zombie.post();
        assertS3Error(refused, 412, "PreconditionFailed", "token 6");
        // the refusal names the object's scope, read from the form's key (it named the bucket's: hostile-load report)
        assertTrue(refused.body().contains("scope &apos;s3/" + BUCKET + "/up/a.txt&apos;"), refused.body());
        assertEquals("form data", storedBody("up/a.txt"));
        assertEquals("7", stored("up/a.txt").metadata().get("fencing-token"));

        // and the object keeps fencing writers of every other kind
        assertEquals(412, assertThrows(software.amazon.awssdk.services.s3.model.S3Exception.class,
                () -> s3.putObject(b -> b.bucket(BUCKET).key("up/a.txt").overrideConfiguration(token(6)),
                        RequestBody.fromString("x"))).statusCode());
    }

    /**
     * S3 round four, item 3: a form's SSE-KMS fields go to the store as the headers of the PUT the proxy writes the
     * upload with (taken by a store that takes them on a PUT: s3proxy with ignore-unknown-headers, AWS, MinIO); the
     * proxy's record of a token as a field (copied from an object) is refused, and nothing is stored.
     */
    @Test
    void aFormsEncryptionFieldsGoWithItsPutAndACopiedRecordIsRefused() throws Exception {
        HttpResponse<String> kms = signedForm("up/kms.txt", 40L, 600, List.of(), Map.of(
                "x-amz-server-side-encryption", "aws:kms", "x-amz-server-side-encryption-aws-kms-key-id", "key-1"))
                .post();
        assertEquals(204, kms.statusCode(), kms.body());
        assertEquals("form data", storedBody("up/kms.txt"));
        assertEquals("40", stored("up/kms.txt").metadata().get("stockade-fence"));

        HttpResponse<String> copied = signedForm("up/copied.txt", 42L, 600, List.of(), Map.of(
                "x-amz-meta-stockade-fence", "41")).post();
        assertS3Error(copied, 400, "InvalidArgument", "x-amz-meta-stockade-fence is the fencing proxy");
        assertNothingStored("up/copied.txt");
    }

    @Test
    void theTokenMustBeAFieldThePolicySigns() throws Exception {
        // the token field is in the form but no condition names it: whoever holds the form could change it
        Form unsigned = signedForm("up/b.txt", null);
        unsigned.fields.put("x-amz-meta-fencing-token", "9");
        assertS3Error(unsigned.post(), 403, "AccessDenied", "Extra input fields: x-amz-meta-fencing-token");
        // the policy names the field, the form carries another value
        Form altered = signedForm("up/b.txt", 9L);
        altered.fields.put("x-amz-meta-fencing-token", "10");
        assertS3Error(altered.post(), 403, "AccessDenied", "Policy Condition failed");
        // no token at all
        assertS3Error(signedForm("up/b.txt", null).post(), 400, "MissingFencingToken",
                "x-amz-meta-fencing-token");
        // the token header instead of the field: no signature covers a form's headers
        assertS3Error(signedForm("up/b.txt", null).post(Map.of("Fencing-Token", "9")), 403, "AccessDenied",
                "form field");
        assertNothingStored("up/b.txt");
    }

    @Test
    void signaturesPoliciesAndConditionsAreJudgedAsS3JudgesThem() throws Exception {
        Form tampered = signedForm("up/c.txt", 3L);
        tampered.fields.put("policy", Base64.getEncoder().encodeToString(("{\"expiration\": \"2099-01-01T00:00:00Z\","
                + " \"conditions\": [[\"starts-with\", \"$key\", \"\"]]}").getBytes(StandardCharsets.UTF_8)));
        assertS3Error(tampered.post(), 403, "SignatureDoesNotMatch", "signature");
        Form otherKey = signedForm("up/c.txt", 3L);
        otherKey.fields.put("x-amz-credential", otherKey.fields.get("x-amz-credential").replace(S3Fixture.APP_KEY,
                "nobody"));
        assertS3Error(otherKey.post(), 403, "InvalidAccessKeyId", "");
        assertS3Error(signedForm("up/c.txt", 3L, -10, List.of(), Map.of()).post(), 403, "AccessDenied",
                "Policy expired");
        assertS3Error(signedForm("up/c.txt", 3L, 600, List.of("[\"starts-with\", \"$x-amz-meta-foo\", \"bar\"]"),
                Map.of()).post(), 403, "AccessDenied", "Policy Condition failed");
        Form wrongBucket = signedForm("up/c.txt", 3L);
        String amzDate = wrongBucket.fields.get("x-amz-date");
        sign(wrongBucket, "{\"expiration\": \"2099-01-01T00:00:00Z\", \"conditions\": [{\"bucket\": \"other\"},"
                + " [\"starts-with\", \"$key\", \"\"], [\"starts-with\", \"$x-amz-meta-fencing-token\", \"\"],"
                + " {\"x-amz-algorithm\": \"AWS4-HMAC-SHA256\"}, [\"starts-with\", \"$x-amz-credential\", \"\"],"
                + " [\"starts-with\", \"$x-amz-date\", \"\"]]}", amzDate);
        assertS3Error(wrongBucket.post(), 403, "AccessDenied", "bucket");
        Form notJson = signedForm("up/c.txt", 3L);
        sign(notJson, "{\"expiration\": \"2099-01-01T00:00:00Z\", \"CONDITIONS\": []}", notJson.fields
                .get("x-amz-date"));
        assertS3Error(notJson.post(), 400, "InvalidPolicyDocument", "missing conditions");
        Form badDate = signedForm("up/c.txt", 3L);
        sign(badDate, "{\"expiration\": \"2099-1-1\", \"conditions\": []}", badDate.fields.get("x-amz-date"));
        assertS3Error(badDate.post(), 400, "InvalidPolicyDocument", "expiration");
        assertS3Error(signedForm("up/c.txt", 3L).without("key").post(), 400, "InvalidArgument", "field named");
        // an anonymous form: unsigned writes are never forwarded
        assertS3Error(new Form().field("key", "up/c.txt").field("x-amz-meta-fencing-token", "3").post(), 403,
                "AccessDenied", "Anonymous");
        assertNothingStored("up/c.txt");
    }

    @Test
    void theFilesSizeIsHeldToTheContentLengthRange() throws Exception {
        Form big = signedForm("up/d.bin", 4L, 600, List.of("[\"content-length-range\", 1, 1024]"), Map.of());
        big.file = new byte[1025];
        assertS3Error(big.post(), 400, "EntityTooLarge", "1024");
        Form empty = signedForm("up/d.bin", 4L, 600, List.of("[\"content-length-range\", 1, 1024]"), Map.of());
        empty.file = new byte[0];
        assertS3Error(empty.post(), 400, "EntityTooSmall", "");
        assertNothingStored("up/d.bin");
        // a file larger than the in-memory buffer goes through a temporary file, byte for byte
        byte[] data = new byte[3 * 1024 * 1024 + 5];
        new Random(5).nextBytes(data);
        Form large = signedForm("up/d.bin", 4L, 600, List.of("[\"content-length-range\", 1, 10485760]"), Map.of());
        large.file = data;
        assertEquals(204, large.post().statusCode());
        assertArrayEquals(data, direct.getObjectAsBytes(b -> b.bucket(BUCKET).key("up/d.bin")).asByteArray());
        assertEquals("4", stored("up/d.bin").metadata().get("fencing-token"));
    }

    @Test
    void successActionsFilenamesAndSigV2() throws Exception {
        // the policy names the key as sent; S3 judges it after ${filename} is filled in
        Form resigned = signedForm("up/named.txt", 5L, 600, List.of(), Map.of("success_action_status", "201"));
        resigned.fileName = "named.txt";
        resigned.fields.put("key", "up/${filename}");
        HttpResponse<String> r = resigned.post();
        assertEquals(201, r.statusCode(), r.body());
        assertTrue(r.body().contains("<Key>up/named.txt</Key>") && r.body().contains("<Bucket>" + BUCKET),
                r.body());
        assertEquals("5", stored("up/named.txt").metadata().get("fencing-token"));

        HttpResponse<String> redirected = signedForm("up/redirect.txt", 5L, 600, List.of(),
                Map.of("success_action_redirect", "https://example.org/done")).post();
        assertEquals(303, redirected.statusCode(), redirected.body());
        String location = redirected.headers().firstValue("Location").orElse("");
        assertTrue(location.startsWith("https://example.org/done?bucket=" + BUCKET + "&key=up%2Fredirect.txt&etag="),
                location);

        // SigV2: AWSAccessKeyId and the base64 HMAC-SHA1 of the policy
        String policy = Base64.getEncoder().encodeToString(("{\"expiration\": \"2099-01-01T00:00:00Z\", "
                + "\"conditions\": [{\"bucket\": \"" + BUCKET + "\"}, [\"starts-with\", \"$key\", \"up/\"], "
                + "{\"x-amz-meta-fencing-token\": \"5\"}]}").getBytes(StandardCharsets.UTF_8));
        javax.crypto.Mac sha1 = javax.crypto.Mac.getInstance("HmacSHA1");
        sha1.init(new javax.crypto.spec.SecretKeySpec(S3Fixture.APP_SECRET.getBytes(StandardCharsets.UTF_8),
                "HmacSHA1"));
        Form v2 = new Form().field("key", "up/v2.txt").field("AWSAccessKeyId", S3Fixture.APP_KEY)
                .field("x-amz-meta-fencing-token", "5").field("policy", policy)
                .field("signature", Base64.getEncoder().encodeToString(sha1.doFinal(policy.getBytes(
                        StandardCharsets.UTF_8))));
        HttpResponse<String> v2Response = v2.post();
        assertEquals(204, v2Response.statusCode(), v2Response.body());
        assertEquals("5", stored("up/v2.txt").metadata().get("fencing-token"));
        v2.fields.put("signature", Base64.getEncoder().encodeToString(new byte[20]));
        assertS3Error(v2.post(), 403, "SignatureDoesNotMatch", "");
    }

    @Test
    void keysThatAreAmbiguousInAPathAreRefused() throws Exception {
        for (String key : List.of("up/../escape.txt", "up//double.txt", "up/./dot.txt")) {
            assertS3Error(signedForm(key, 1L).post(), 400, "InvalidArgument", "ambiguous");
        }
        assertThrows(NoSuchKeyException.class, () -> stored("escape.txt"));
        assertS3Error(signedForm("k".repeat(1100), 1L).post(), 400, "KeyTooLongError", "too long");
    }

    /**
     * The serialized class cannot fence a form upload (its key is in the body, not the path): 501, refused before the
     * fence. Found by S3MeaningFuzzIT (with DeleteObjects): it was refused only by the write, after the token had
     * raised the key's scope.
     */
    @Test
    void theSerializedClassRefusesAFormUploadBeforeTheFence() throws Exception {
        try (ProxyFixture serialized = fixture.anotherProxy(java.nio.file.Files.createTempDirectory(
                "stockade-form-serialized").resolve("journal"), Map.of("CONDITIONAL_WRITES", "false",
                "S3_TIMEOUT", "200ms"))) {
            Thread.sleep(300); // past the time a serialized policy refuses writes after it starts
            HttpResponse<String> r = signedForm("up/serialized.txt", 9L).post(serialized.uri(""), Map.of());
            assertS3Error(r, 501, "NotImplemented", "browser-form upload");
            assertNothingStored("up/serialized.txt");
            assertEquals(java.util.Optional.empty(), serialized.server().store().get("s3/" + BUCKET
                    + "/up/serialized.txt"), "the key's scope has no fence");
        }
    }
}
