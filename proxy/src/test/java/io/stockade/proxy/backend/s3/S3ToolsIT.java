package io.stockade.proxy.backend.s3;

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
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import io.stockade.proxy.S3Fixture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CommonPrefix;
import software.amazon.awssdk.services.s3.model.EncodingType;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

import static io.stockade.proxy.S3Fixture.token;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * "S3 as real tools use it", with the AWS SDK v2 (the CLI and boto3 paths are in {@code S3CliIT}):
 * tombstones hidden from listings while they stay in the store as the fence, and removing a bucket that only
 * tombstones keep.
 */
class S3ToolsIT {
    private static final String BUCKET = "tools";
    @TempDir
    static Path journal;
    private static S3Fixture fixture;
    private static S3Client s3;
    private static S3Client direct;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal, Map.of("BUCKET_WRITES", "[delete]"));
        s3 = fixture.client();
        direct = fixture.direct();
        direct.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    static void stop() throws Exception {
        fixture.close();
    }

    private static void put(String bucket, String key, long token, String body) {
        s3.putObject(b -> b.bucket(bucket).key(key).overrideConfiguration(token(token)), RequestBody.fromString(body));
    }

    private static void delete(String bucket, String key, long token) {
        s3.deleteObject(b -> b.bucket(bucket).key(key).overrideConfiguration(token(token)));
    }

    /** The tombstone as the store holds it, read without the proxy. */
    private static void assertTombstone(String bucket, String key, long token) {
        HeadObjectResponse head = direct.headObject(b -> b.bucket(bucket).key(key));
        assertEquals("true", head.metadata().get("fencing-deleted"), key);
        assertEquals(Long.toString(token), head.metadata().get("fencing-token"), key);
        assertEquals(52, head.contentLength(), "a tombstone holds 52 bytes of its own (docs/s3.md)");
    }

    private static List<String> keys(List<S3Object> objects) {
        return objects.stream().map(S3Object::key).toList();
    }

    @Test
    void tombstonesAreHiddenFromListingsV1AndV2ButStayInTheStoreAsTheFence() {
        put(BUCKET, "l/live", 1, "live");
        put(BUCKET, "l/gone", 1, "soon deleted");
        put(BUCKET, "l/empty", 1, ""); // a real empty object: listed
        put(BUCKET, "l/folder/", 1, ""); // a folder marker: listed
        put(BUCKET, "l/same-size", 1, "x".repeat(52)); // a real object of a tombstone's size: listed
        delete(BUCKET, "l/gone", 2);

        List<String> expected = List.of("l/empty", "l/folder/", "l/live", "l/same-size");
        assertEquals(expected, keys(s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("l/")).contents()));
        assertEquals(4, s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("l/")).keyCount());
        assertEquals(expected, keys(s3.listObjects(b -> b.bucket(BUCKET).prefix("l/")).contents()));
        assertEquals(expected, keys(s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("l/").encodingType(EncodingType.URL))
                .contents()));

        // the store still holds the tombstone, and it still fences
        assertTrue(keys(direct.listObjectsV2(b -> b.bucket(BUCKET).prefix("l/")).contents()).contains("l/gone"));
        assertTombstone(BUCKET, "l/gone", 2);
        S3Exception zombie = assertThrows(S3Exception.class, () -> put(BUCKET, "l/gone", 1, "zombie"));
        assertEquals(412, zombie.statusCode());
        assertTombstone(BUCKET, "l/gone", 2);
    }

    @Test
    void keysThatNeedEncodingAreJudgedByTheirRealName() {
        String odd = "enc/a b+c&d%e";
        put(BUCKET, odd, 1, "x");
        put(BUCKET, "enc/kept", 1, "y");
        delete(BUCKET, odd, 1);
        assertEquals(List.of("enc/kept"), keys(s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("enc/")
                .encodingType(EncodingType.URL)).contents()));
        assertEquals(List.of("enc/kept"), keys(s3.listObjects(b -> b.bucket(BUCKET).prefix("enc/")
                .encodingType(EncodingType.URL)).contents()));
        assertTombstone(BUCKET, odd, 1);
    }

    @Test
    void pagesHoldingOnlyTombstonesDoNotEndAPaginatedListing() {
        for (int i = 0; i < 10; i++) {
            put(BUCKET, "p/" + i, 1, "v" + i);
        }
        for (int i = 2; i < 8; i++) {
            delete(BUCKET, "p/" + i, 1);
        }
        List<String> expected = List.of("p/0", "p/1", "p/8", "p/9");
        List<String> v2 = new ArrayList<>();
        s3.listObjectsV2Paginator(b -> b.bucket(BUCKET).prefix("p/").maxKeys(2)).contents()
                .forEach(o -> v2.add(o.key()));
        assertEquals(expected, v2);

        // ListObjects (v1) without a delimiter: the client takes NextMarker, else the last key it was shown
        List<String> v1 = new ArrayList<>();
        String marker = null;
        for (int page = 0; page < 20; page++) {
            String from = marker;
            ListObjectsResponse r = s3.listObjects(b -> b.bucket(BUCKET).prefix("p/").maxKeys(2).marker(from));
            r.contents().forEach(o -> v1.add(o.key()));
            if (!r.isTruncated()) {
                break;
            }
            marker = r.nextMarker() != null ? r.nextMarker() : r.contents().get(r.contents().size() - 1).key();
        }
        assertEquals(expected, v1);
    }

    @Test
    void aPrefixHoldingOnlyTombstonesIsNotListedAsACommonPrefix() {
        put(BUCKET, "d/x/1", 1, "x");
        put(BUCKET, "d/y/1", 1, "y");
        put(BUCKET, "d/y/2", 1, "y");
        put(BUCKET, "d/z/empty", 1, ""); // a real empty object: the prefix is live
        delete(BUCKET, "d/y/1", 2);
        delete(BUCKET, "d/y/2", 2);
        List<String> prefixes = s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("d/").delimiter("/")).commonPrefixes()
                .stream().map(CommonPrefix::prefix).toList();
        assertEquals(List.of("d/x/", "d/z/"), prefixes);
        List<String> v1 = s3.listObjects(b -> b.bucket(BUCKET).prefix("d/").delimiter("/")).commonPrefixes()
                .stream().map(CommonPrefix::prefix).toList();
        assertEquals(List.of("d/x/", "d/z/"), v1);
        assertEquals(2, s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("d/").delimiter("/")).keyCount());
    }

    @Test
    void aBucketThatOnlyTombstonesKeepIsNotRemovedAndTheAnswerSaysWhy() {
        direct.createBucket(b -> b.bucket("rb-tombstones"));
        put("rb-tombstones", "k1", 3, "one");
        put("rb-tombstones", "k2", 5, "two");
        delete("rb-tombstones", "k1", 4);
        delete("rb-tombstones", "k2", 6);
        assertTrue(s3.listObjectsV2(b -> b.bucket("rb-tombstones")).contents().isEmpty());
        S3Exception e = assertThrows(S3Exception.class, () -> s3.deleteBucket(b -> b.bucket("rb-tombstones")));
        assertEquals(409, e.statusCode());
        assertEquals("BucketNotEmpty", e.awsErrorDetails().errorCode());
        String message = e.awsErrorDetails().errorMessage();
        assertTrue(message.contains("2 tombstones") && message.contains("highest 6") && message.contains("rb --force"),
                message);
        // nothing was removed: the bucket and its fences are in the store
        assertTrue(direct.listBuckets().buckets().stream().anyMatch(b -> b.name().equals("rb-tombstones")));
        assertTombstone("rb-tombstones", "k1", 4);
        assertTombstone("rb-tombstones", "k2", 6);
        assertEquals(412, assertThrows(S3Exception.class, () -> put("rb-tombstones", "k2", 5, "zombie"))
                .statusCode());
    }

    @Test
    void aBucketWithObjectsGetsTheStoresAnswerAndAnEmptyOneIsRemoved() {
        direct.createBucket(b -> b.bucket("rb-live"));
        put("rb-live", "k", 1, "data");
        put("rb-live", "t", 1, "data");
        delete("rb-live", "t", 1);
        S3Exception e = assertThrows(S3Exception.class, () -> s3.deleteBucket(b -> b.bucket("rb-live")));
        assertEquals(409, e.statusCode());
        assertEquals("BucketNotEmpty", e.awsErrorDetails().errorCode());
        assertFalse(e.awsErrorDetails().errorMessage().contains("tombstone"), e.awsErrorDetails().errorMessage());

        direct.createBucket(b -> b.bucket("rb-empty"));
        s3.deleteBucket(b -> b.bucket("rb-empty"));
        assertFalse(direct.listBuckets().buckets().stream().anyMatch(b -> b.name().equals("rb-empty")));
    }

    // ---- conditional writes: the client's own If-Match / If-None-Match (S3 as real tools use it) ----

    private static S3Exception refused(Runnable write) {
        return assertThrows(S3Exception.class, write::run);
    }

    @Test
    void theClientsOwnPreconditionsAreJudgedAsS3JudgesThem() {
        String key = "cond/k";
        s3.putObject(b -> b.bucket(BUCKET).key(key).ifNoneMatch("*").overrideConfiguration(token(1)),
                RequestBody.fromString("created"));
        String etag = direct.headObject(b -> b.bucket(BUCKET).key(key)).eTag();
        S3Exception exists = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key).ifNoneMatch("*")
                .overrideConfiguration(token(1)), RequestBody.fromString("overwrite")));
        assertEquals(412, exists.statusCode());
        assertEquals("PreconditionFailed", exists.awsErrorDetails().errorCode());
        S3Exception otherEtag = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key).ifMatch("\"badetag\"")
                .overrideConfiguration(token(1)), RequestBody.fromString("overwrite")));
        assertEquals(412, otherEtag.statusCode());
        S3Exception noneMatchEtag = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key)
                .ifNoneMatch(etag.replace("\"", "")).overrideConfiguration(token(1)), RequestBody.fromString("x")));
        assertEquals(412, noneMatchEtag.statusCode());
        assertEquals("created", s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());

        s3.putObject(b -> b.bucket(BUCKET).key(key).ifMatch(etag).overrideConfiguration(token(2)),
                RequestBody.fromString("updated"));
        assertEquals("2", direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("fencing-token"));

        // a deleted key is no object to the client: If-Match is 404, If-None-Match: * creates it
        delete(BUCKET, key, 3);
        S3Exception gone = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key).ifMatch("*")
                .overrideConfiguration(token(3)), RequestBody.fromString("x")));
        assertEquals(404, gone.statusCode());
        assertEquals("NoSuchKey", gone.awsErrorDetails().errorCode());
        assertTombstone(BUCKET, key, 3);
        s3.putObject(b -> b.bucket(BUCKET).key(key).ifNoneMatch("*").overrideConfiguration(token(3)),
                RequestBody.fromString("recreated"));
        assertEquals("recreated", s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());

        // a stale token is refused before the client's conditions are looked at
        S3Exception stale = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key).ifMatch("*")
                .overrideConfiguration(token(1)), RequestBody.fromString("zombie")));
        assertEquals(412, stale.statusCode());
        assertTrue(stale.awsErrorDetails().errorMessage().contains("token 1"), stale.getMessage());
    }

    /** The conformance suite's case: If-Match and If-None-Match together on a 1 MiB PUT of an existing object. */
    @Test
    void ifMatchAndIfNoneMatchTogetherOnAnExistingObjectIs412() {
        String key = "cond/both";
        byte[] mib = new byte[1024 * 1024];
        s3.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(1)), RequestBody.fromBytes(mib));
        String etag = direct.headObject(b -> b.bucket(BUCKET).key(key)).eTag();
        S3Exception both = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key).ifMatch(etag).ifNoneMatch("*")
                .overrideConfiguration(token(1)), RequestBody.fromBytes(new byte[1024 * 1024])));
        assertEquals(412, both.statusCode(), both.getMessage());
        assertEquals("PreconditionFailed", both.awsErrorDetails().errorCode());
        assertEquals(etag, direct.headObject(b -> b.bucket(BUCKET).key(key)).eTag());
        // a larger body (streamed, not buffered) gets the same answer
        S3Exception big = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key).ifMatch(etag).ifNoneMatch("*")
                .overrideConfiguration(token(1)), RequestBody.fromBytes(new byte[3 * 1024 * 1024])));
        assertEquals(412, big.statusCode(), big.getMessage());
        assertEquals(etag, direct.headObject(b -> b.bucket(BUCKET).key(key)).eTag());
        // so is a stale token on a large body: refused before the body is asked for (Expect: 100-continue), so the
        // SDK reads the answer instead of meeting a closed connection mid-body
        s3.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(5)), RequestBody.fromBytes(mib));
        S3Exception stale = refused(() -> s3.putObject(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(token(4)), RequestBody.fromBytes(new byte[3 * 1024 * 1024])));
        assertEquals(412, stale.statusCode(), stale.getMessage());
        assertEquals("5", direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("fencing-token"));
    }

    @Test
    void aConditionalDeleteIsRefusedRatherThanRunUnconditionally() {
        put(BUCKET, "cond/del", 1, "kept");
        S3Exception e = refused(() -> s3.deleteObject(b -> b.bucket(BUCKET).key("cond/del").ifMatch("\"other\"")
                .overrideConfiguration(token(2))));
        assertEquals(501, e.statusCode());
        assertEquals("kept", s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("cond/del")).asUtf8String());
        assertEquals("1", direct.headObject(b -> b.bucket(BUCKET).key("cond/del")).metadata().get("fencing-token"));
    }

    // ---- presigned URL expiry: what AWS S3 answers ----

    /** A SigV4 presigned URL, signed correctly for any date and X-Amz-Expires (the SDK refuses odd ones). */
    private static URI presign(String method, String key, Instant signedAt, String expires) throws Exception {
        String amzDate = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'").withZone(ZoneOffset.UTC).format(signedAt);
        String date = amzDate.substring(0, 8);
        String scope = date + "/us-east-1/s3/aws4_request";
        String host = "127.0.0.1:" + fixture.proxy.server().port();
        TreeMap<String, String> query = new TreeMap<>(Map.of("X-Amz-Algorithm", "AWS4-HMAC-SHA256",
                "X-Amz-Credential", S3Fixture.APP_KEY + "/" + scope, "X-Amz-Date", amzDate, "X-Amz-Expires", expires,
                "X-Amz-SignedHeaders", "host"));
        StringBuilder q = new StringBuilder();
        query.forEach((k, v) -> q.append(q.isEmpty() ? "" : "&").append(k).append('=')
                .append(java.net.URLEncoder.encode(v, StandardCharsets.UTF_8)));
        String path = "/" + BUCKET + "/" + key;
        String canonical = method + "\n" + path + "\n" + q + "\nhost:" + host + "\n\nhost\nUNSIGNED-PAYLOAD";
        String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex(sha256(canonical));
        byte[] k = hmac(hmac(hmac(hmac(("AWS4" + S3Fixture.APP_SECRET).getBytes(StandardCharsets.UTF_8), date),
                "us-east-1"), "s3"), "aws4_request");
        return URI.create("http://" + host + path + "?" + q + "&X-Amz-Signature=" + hex(hmac(k, toSign)));
    }

    private static HttpResponse<String> send(String method, URI uri, String body) throws Exception {
        return HttpClient.newHttpClient().send(HttpRequest.newBuilder(uri).method(method, body == null
                ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body)).build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static void assertAnswer(HttpResponse<String> r, int status, String code, String message) {
        assertEquals(status, r.statusCode(), r.body());
        assertTrue(r.body().contains("<Code>" + code + "</Code>") && r.body().contains(message), r.body());
    }

    @Test
    void presignedUrlExpiryIsAnsweredAsAwsS3AnswersIt() throws Exception {
        put(BUCKET, "presigned/k", 1, "readable");
        Instant now = Instant.now();
        HttpResponse<String> valid = send("GET", presign("GET", "presigned/k", now, "100000"), null);
        assertEquals(200, valid.statusCode(), valid.body());
        assertEquals("readable", valid.body());
        assertAnswer(send("GET", presign("GET", "presigned/k", now, "0"), null), 403, "AccessDenied",
                "Request has expired");
        assertAnswer(send("GET", presign("GET", "presigned/k", now.minusSeconds(2000), "1000"), null), 403,
                "AccessDenied", "Request has expired");
        assertAnswer(send("GET", presign("GET", "presigned/k", now.plusSeconds(3600), "100"), null), 403,
                "AccessDenied", "Request is not valid yet");
        assertAnswer(send("GET", presign("GET", "presigned/k", now, "-7"), null), 400,
                "AuthorizationQueryParametersError", "X-Amz-Expires must be non-negative");
        assertAnswer(send("GET", presign("GET", "presigned/k", now, "609901"), null), 400,
                "AuthorizationQueryParametersError", "X-Amz-Expires must be less than a week");
        assertAnswer(send("GET", presign("GET", "presigned/k", now, "soon"), null), 400,
                "AuthorizationQueryParametersError", "X-Amz-Expires should be a number");
        // an expired presigned PUT writes nothing
        assertAnswer(send("PUT", presign("PUT", "presigned/k", now.minusSeconds(2000), "1000"), "late"), 403,
                "AccessDenied", "Request has expired");
        assertEquals("readable", direct.getObjectAsBytes(b -> b.bucket(BUCKET).key("presigned/k")).asUtf8String());
        assertEquals("1", direct.headObject(b -> b.bucket(BUCKET).key("presigned/k")).metadata()
                .get("fencing-token"));
    }

    private static byte[] sha256(String text) throws Exception {
        return java.security.MessageDigest.getInstance("SHA-256").digest(text.getBytes(StandardCharsets.UTF_8));
    }

    private static byte[] hmac(byte[] key, String text) throws Exception {
        javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
        mac.init(new javax.crypto.spec.SecretKeySpec(key, "HmacSHA256"));
        return mac.doFinal(text.getBytes(StandardCharsets.UTF_8));
    }

    private static String hex(byte[] bytes) {
        return java.util.HexFormat.of().formatHex(bytes);
    }
}
