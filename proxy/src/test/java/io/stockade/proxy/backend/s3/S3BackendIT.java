package io.stockade.proxy.backend.s3;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.testing.RawHttp;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedMultipartUpload;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.ListObjectsV2Response;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;
import software.amazon.awssdk.services.s3.presigner.model.PresignedGetObjectRequest;
import software.amazon.awssdk.services.s3.presigner.model.PresignedPutObjectRequest;

import static io.stockade.proxy.S3Fixture.token;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The S3 backend driven by the real AWS SDK v2 with default settings (aws-chunked bodies with trailing
 * checksums, chunk signatures, {@code Expect: 100-continue}) through the proxy to an in-process s3proxy.
 * See {@link S3Fixture} for why one proxy replica is what these tests can prove against s3proxy.
 */
class S3BackendIT {
    private static final String BUCKET = "fenced";
    @TempDir
    static Path journal;
    private static S3Fixture fixture;
    private static S3Client s3;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal);
        s3 = fixture.client();
        fixture.direct().createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    static void stop() throws Exception {
        fixture.close();
    }

    private static void put(String key, long token, String body) {
        s3.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(token)), RequestBody.fromString(body));
    }

    private static String get(String key) {
        return s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String();
    }

    /** The object's user metadata, read straight from s3proxy. */
    private static java.util.Map<String, String> stored(String key) {
        return fixture.direct().headObject(b -> b.bucket(BUCKET).key(key)).metadata();
    }

    /**
     * S3 round four, item 1: the proxy's record of an object's token is not shown through the proxy (a tool that
     * copies what it read onto a new request would send it back as a token), and kept at the store under its own
     * name and the earlier one.
     */
    @Test
    void theProxysOwnMetadataIsNeverShownThroughTheProxy() {
        s3.putObject(b -> b.bucket(BUCKET).key("own.txt").metadata(java.util.Map.of("note", "kept"))
                .overrideConfiguration(token(5)), RequestBody.fromString("own"));
        HeadObjectResponse head = s3.headObject(b -> b.bucket(BUCKET).key("own.txt"));
        assertEquals(java.util.Map.of("note", "kept"), head.metadata());
        GetObjectResponse got = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("own.txt")).response();
        assertEquals(java.util.Map.of("note", "kept"), got.metadata());
        assertEquals(java.util.Map.of("note", "kept", "stockade-fence", "5", "fencing-token", "5"), stored("own.txt"));
    }

    /** The record copied back onto a request (read at the store): refused, saying so, and nothing written. */
    @Test
    void theProxysRecordCopiedOntoARequestIsRefusedAndNothingMoves() throws Exception {
        put("copied.txt", 6, "first");
        var answer = new S3Fixture.Raw("PUT", "/" + BUCKET + "/copied.txt").header("Fencing-Token", "7")
                .header("x-amz-meta-stockade-fence", "6").header("x-amz-meta-fencing-token", "6")
                .body("second").send(fixture.proxy.server().port());
        assertEquals(400, answer.status(), answer.body());
        assertTrue(answer.body().contains("x-amz-meta-stockade-fence is the fencing proxy"),
                answer.body());
        assertEquals("first", fixture.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key("copied.txt"))
                .asUtf8String());
        assertEquals("6", stored("copied.txt").get("stockade-fence"));
        assertEquals(412, assertThrows(S3Exception.class, () -> put("copied.txt", 5, "zombie")).statusCode());
    }

    /**
     * Objects written by earlier builds keep their token under x-amz-meta-fencing-token only: the proxy reads the
     * higher of both names, so no fence is lowered by the upgrade, and its next write records both.
     */
    @Test
    void anObjectAnEarlierBuildWroteKeepsItsFence() {
        S3Client direct = S3Fixture.clientWithRequiredChecksumsOnly(fixture.directUri(), S3Fixture.UPSTREAM_KEY,
                S3Fixture.UPSTREAM_SECRET);
        direct.putObject(b -> b.bucket(BUCKET).key("old.txt").metadata(java.util.Map.of("fencing-token", "9")),
                RequestBody.fromString("old"));
        assertEquals(412, assertThrows(S3Exception.class, () -> put("old.txt", 8, "zombie")).statusCode());
        assertEquals("old", fixture.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key("old.txt"))
                .asUtf8String());
        assertEquals(java.util.Map.of("fencing-token", "9"), stored("old.txt"));
        put("old.txt", 9, "holder");
        assertEquals(java.util.Map.of("fencing-token", "9", "stockade-fence", "9"), stored("old.txt"));
        // and the other way round (a later build that writes only the record): the higher of the two is the fence
        direct.putObject(b -> b.bucket(BUCKET).key("new.txt").metadata(java.util.Map.of("stockade-fence", "12",
                "fencing-token", "3")), RequestBody.fromString("new"));
        assertEquals(412, assertThrows(S3Exception.class, () -> put("new.txt", 11, "zombie")).statusCode());
        assertEquals("new", fixture.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key("new.txt"))
                .asUtf8String());
    }

    @Test
    void putGetHeadListDeleteWithTheDefaultSdk() {
        put("docs/a.txt", 1, "hello");
        assertEquals("hello", get("docs/a.txt"));
        HeadObjectResponse head = s3.headObject(b -> b.bucket(BUCKET).key("docs/a.txt"));
        assertEquals(5, head.contentLength());
        assertEquals("1", stored("docs/a.txt").get("fencing-token"));
        ResponseBytes<GetObjectResponse> range = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("docs/a.txt")
                .range("bytes=1-3"));
        assertEquals("ell", range.asUtf8String());
        ListObjectsV2Response list = s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("docs/"));
        assertTrue(list.contents().stream().map(S3Object::key).anyMatch("docs/a.txt"::equals));
        assertTrue(s3.listBuckets().buckets().stream().anyMatch(bucket -> bucket.name().equals(BUCKET)));
        s3.deleteObject(b -> b.bucket(BUCKET).key("docs/a.txt").overrideConfiguration(token(1)));
        assertThrows(NoSuchKeyException.class, () -> get("docs/a.txt"));
    }

    @Test
    void userMetadataAndContentTypeSurvive() {
        s3.putObject(b -> b.bucket(BUCKET).key("meta.json").contentType("application/json")
                        .metadata(java.util.Map.of("owner", "me")).overrideConfiguration(token(3)),
                RequestBody.fromString("{}"));
        HeadObjectResponse head = s3.headObject(b -> b.bucket(BUCKET).key("meta.json"));
        assertEquals("application/json", head.contentType());
        assertEquals("me", head.metadata().get("owner"));
    }

    /** S3 round three, item 5: "deflate, gzip" was stored as "deflate,gzip"; the store keeps what was sent. */
    @Test
    void aContentEncodingIsStoredAsTheClientWroteIt() {
        s3.putObject(b -> b.bucket(BUCKET).key("enc.bin").contentEncoding("deflate, gzip")
                .overrideConfiguration(token(3)), RequestBody.fromString("zz"));
        assertEquals("deflate, gzip", fixture.direct().headObject(b -> b.bucket(BUCKET).key("enc.bin"))
                .contentEncoding());
    }

    @Test
    void staleWriterGets412AndNothingChanges() {
        put("stale.txt", 10, "new holder");
        S3Exception e = assertThrows(S3Exception.class, () -> put("stale.txt", 9, "zombie"));
        assertEquals(412, e.statusCode());
        assertEquals("PreconditionFailed", e.awsErrorDetails().errorCode());
        assertTrue(e.awsErrorDetails().errorMessage().contains("9") && e.getMessage().contains("10"),
                e.getMessage());
        assertEquals("new holder", get("stale.txt"));
        put("stale.txt", 10, "same holder again");
        assertEquals("same holder again", get("stale.txt"));
    }

    @Test
    void missingAndMalformedTokensAreS3Errors() {
        S3Exception missing = assertThrows(S3Exception.class, () -> s3.putObject(b -> b.bucket(BUCKET).key("m"),
                RequestBody.fromString("x")));
        assertEquals(400, missing.statusCode());
        assertEquals("MissingFencingToken", missing.awsErrorDetails().errorCode());
        S3Exception malformed = assertThrows(S3Exception.class, () -> s3.putObject(b -> b.bucket(BUCKET).key("m")
                .overrideConfiguration(o -> o.putHeader("Fencing-Token", "-1")), RequestBody.fromString("x")));
        assertEquals(400, malformed.statusCode());
        assertEquals("InvalidFencingToken", malformed.awsErrorDetails().errorCode());
    }

    @Test
    void aDeleteLeavesATombstoneSoAZombieCannotRecreateTheObject() {
        put("gone.txt", 5, "v5");
        s3.deleteObject(b -> b.bucket(BUCKET).key("gone.txt").overrideConfiguration(token(7)));
        assertThrows(NoSuchKeyException.class, () -> get("gone.txt"));
        S3Exception head = assertThrows(S3Exception.class, () -> s3.headObject(b -> b.bucket(BUCKET).key("gone.txt")));
        assertEquals(404, head.statusCode());
        S3Exception zombie = assertThrows(S3Exception.class, () -> put("gone.txt", 6, "zombie"));
        assertEquals(412, zombie.statusCode());
        put("gone.txt", 8, "v8");
        assertEquals("v8", get("gone.txt"));
    }

    @Test
    void aLowerTokenAfterANewerHolderWroteIsRefusedWith412() throws Exception {
        // Sequential: token 20 writes, holder 21 writes, 20 again is refused. S3ZombieIT pauses a real writer.
        put("lease.txt", 20, "zombie's first write");
        put("lease.txt", 21, "new holder");
        S3Exception e = assertThrows(S3Exception.class, () -> put("lease.txt", 20, "zombie wakes up"));
        assertEquals(412, e.statusCode());
        assertEquals("new holder", get("lease.txt"));
    }

    @Test
    void largeBodiesStreamWithChunkSignaturesAndTrailingChecksums() {
        byte[] data = new byte[5 * 1024 * 1024 + 123];
        new Random(1).nextBytes(data);
        s3.putObject(b -> b.bucket(BUCKET).key("big.bin").overrideConfiguration(token(1)), RequestBody.fromBytes(data));
        assertArrayEquals(data, s3.getObjectAsBytes(b -> b.bucket(BUCKET).key("big.bin")).asByteArray());
    }

    @Test
    void copyIsFencedOnTheDestination() {
        put("src.txt", 1, "copied");
        s3.copyObject(b -> b.sourceBucket(BUCKET).sourceKey("src.txt").destinationBucket(BUCKET)
                .destinationKey("dst.txt").overrideConfiguration(token(4)));
        assertEquals("copied", get("dst.txt"));
        assertEquals("4", stored("dst.txt").get("fencing-token"));
        assertEquals("4", stored("dst.txt").get("stockade-fence"));
        S3Exception e = assertThrows(S3Exception.class, () -> s3.copyObject(b -> b.sourceBucket(BUCKET)
                .sourceKey("src.txt").destinationBucket(BUCKET).destinationKey("dst.txt")
                .overrideConfiguration(token(3))));
        assertEquals(412, e.statusCode());
    }

    @Test
    void multipartUploadIsFencedAtComplete() {
        String key = "multi.bin";
        byte[] part1 = new byte[5 * 1024 * 1024];
        new Random(2).nextBytes(part1);
        byte[] part2 = "tail".getBytes(StandardCharsets.UTF_8);
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(30)))
                .uploadId();
        List<CompletedPart> parts = new ArrayList<>();
        int n = 1;
        for (byte[] part : List.of(part1, part2)) {
            int number = n++;
            String etag = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(number),
                    RequestBody.fromBytes(part)).eTag();
            parts.add(CompletedPart.builder().partNumber(number).eTag(etag).build());
        }
        assertEquals(2, s3.listParts(b -> b.bucket(BUCKET).key(key).uploadId(upload)).parts().size());
        s3.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                .multipartUpload(CompletedMultipartUpload.builder().parts(parts).build())
                .overrideConfiguration(token(30)));
        byte[] got = s3.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray();
        assertEquals(part1.length + part2.length, got.length);
        assertEquals("30", stored(key).get("stockade-fence"));
        assertEquals("30", stored(key).get("fencing-token"));
    }

    @Test
    void anUploadPartCopyFromADeletedObjectIsNoSuchKeyNotItsTombstonesBytes() {
        put("part-src", 1, "live bytes");
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key("part-dst")
                .overrideConfiguration(token(3))).uploadId();
        s3.uploadPartCopy(b -> b.sourceBucket(BUCKET).sourceKey("part-src").destinationBucket(BUCKET)
                .destinationKey("part-dst").uploadId(upload).partNumber(1));
        s3.deleteObject(b -> b.bucket(BUCKET).key("part-src").overrideConfiguration(token(2)));

        S3Exception gone = assertThrows(S3Exception.class, () -> s3.uploadPartCopy(b -> b.sourceBucket(BUCKET)
                .sourceKey("part-src").destinationBucket(BUCKET).destinationKey("part-dst").uploadId(upload)
                .partNumber(2)));
        assertEquals(404, gone.statusCode());
        assertEquals("NoSuchKey", gone.awsErrorDetails().errorCode());
        // the store holds the first part only: the tombstone's bytes were not copied as a part
        assertEquals(List.of(1), s3.listParts(b -> b.bucket(BUCKET).key("part-dst").uploadId(upload)).parts()
                .stream().map(part -> part.partNumber()).toList());
        s3.abortMultipartUpload(b -> b.bucket(BUCKET).key("part-dst").uploadId(upload));
    }

    @Test
    void aStaleCompleteIsRejectedAndNothingIsVisible() {
        String key = "stale-multi.bin";
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(40)))
                .uploadId();
        String etag = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(1),
                RequestBody.fromString("zombie data")).eTag();
        // Meanwhile a newer holder deletes the key (a tombstone with token 41).
        s3.deleteObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(41)));
        S3Exception e = assertThrows(S3Exception.class, () -> s3.completeMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(upload).multipartUpload(CompletedMultipartUpload.builder()
                        .parts(CompletedPart.builder().partNumber(1).eTag(etag).build()).build())
                .overrideConfiguration(token(40))));
        assertEquals(412, e.statusCode());
        assertThrows(NoSuchKeyException.class, () -> get(key));
        // the zombie cannot abort it either (every step is fenced); the holder cleans it up with its own token
        assertEquals(412, assertThrows(S3Exception.class, () -> s3.abortMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(upload))).statusCode());
        abortAsHolder(key, 41);
    }

    /** Aborts the uploads of {@code key} as its current holder: by the IDs a listing gives, with its token. */
    private void abortAsHolder(String key, long token) {
        for (var upload : s3.listMultipartUploads(b -> b.bucket(BUCKET).prefix(key)).uploads()) {
            s3.abortMultipartUpload(b -> b.bucket(BUCKET).key(upload.key()).uploadId(upload.uploadId())
                    .overrideConfiguration(token(token)));
        }
    }

    /**
     * S3 as real tools use it, defect 1: created with 9, 10 written, completed with 10: the completed object held the
     * creation's
     * metadata (token 9) and a zombie's 9 was then accepted. The upload ID now says which token created it, and a
     * Complete with another token is refused; the fence never goes down.
     */
    @Test
    void aMultipartUploadCannotLowerTheFence() {
        String key = "lowering.bin";
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(9)))
                .uploadId();
        String etag = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(1),
                RequestBody.fromString("created with 9")).eTag();
        put(key, 10, "written with 10");
        CompletedMultipartUpload parts = CompletedMultipartUpload.builder()
                .parts(CompletedPart.builder().partNumber(1).eTag(etag).build()).build();
        S3Exception other = assertThrows(S3Exception.class, () -> s3.completeMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(upload).multipartUpload(parts).overrideConfiguration(token(10))));
        assertEquals(400, other.statusCode());
        assertTrue(other.getMessage().contains("created with fencing token 9"), other.getMessage());
        S3Exception stale = assertThrows(S3Exception.class, () -> s3.completeMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(upload).multipartUpload(parts).overrideConfiguration(token(9))));
        assertEquals(412, stale.statusCode());
        assertEquals("written with 10", get(key));
        assertEquals("10", fixture.direct().headObject(b -> b.bucket(BUCKET).key(key)).metadata()
                .get("fencing-token"));
        S3Exception zombie = assertThrows(S3Exception.class, () -> put(key, 9, "zombie"));
        assertEquals(412, zombie.statusCode());
        assertEquals("written with 10", get(key));
        abortAsHolder(key, 10);
    }

    @Test
    void anAlteredOrForeignUploadIdCannotCompleteWithAToken() {
        String key = "altered.bin";
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key(key).overrideConfiguration(token(5)))
                .uploadId();
        assertTrue(upload.contains("~stk5~"), upload);
        String etag = s3.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(1),
                RequestBody.fromString("five")).eTag();
        CompletedMultipartUpload parts = CompletedMultipartUpload.builder()
                .parts(CompletedPart.builder().partNumber(1).eTag(etag).build()).build();
        String claimed = upload.replace("~stk5~", "~stk6~");
        S3Exception altered = assertThrows(S3Exception.class, () -> s3.completeMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(claimed).multipartUpload(parts).overrideConfiguration(token(6))));
        assertEquals(404, altered.statusCode());
        // an upload created straight at the store: its ID is none the proxy handed out, and names nothing through it
        String foreign = fixture.direct().createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
        S3Exception part = assertThrows(S3Exception.class, () -> s3.uploadPart(b -> b.bucket(BUCKET).key(key)
                .uploadId(foreign).partNumber(1), RequestBody.fromString("foreign")));
        assertEquals(404, part.statusCode());
        assertEquals("NoSuchUpload", part.awsErrorDetails().errorCode());
        S3Exception unknown = assertThrows(S3Exception.class, () -> s3.completeMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(foreign).multipartUpload(parts).overrideConfiguration(token(7))));
        assertEquals(404, unknown.statusCode());
        assertThrows(NoSuchKeyException.class, () -> get(key));
        s3.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload).multipartUpload(parts)
                .overrideConfiguration(token(5)));
        assertEquals("five", get(key));
        fixture.direct().abortMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(foreign));
    }

    @Test
    void deleteObjectsFencesEachKey() {
        put("many/1", 50, "1");
        put("many/2", 60, "2");
        DeleteObjectsResponse response = s3.deleteObjects(b -> b.bucket(BUCKET).overrideConfiguration(token(55))
                .delete(d -> d.objects(ObjectIdentifier.builder().key("many/1").build(),
                        ObjectIdentifier.builder().key("many/2").build())));
        assertEquals(List.of("many/1"), response.deleted().stream().map(d -> d.key()).toList());
        assertEquals(1, response.errors().size());
        assertEquals("PreconditionFailed", response.errors().get(0).code());
        assertThrows(NoSuchKeyException.class, () -> get("many/1"));
        assertEquals("2", get("many/2"));
    }

    @Test
    void presignedUrlsWork() throws Exception {
        put("presigned.txt", 1, "signed in the URL");
        try (var presigner = fixture.presigner()) {
            PresignedGetObjectRequest get = presigner.presignGetObject(b -> b.signatureDuration(Duration.ofMinutes(5))
                    .getObjectRequest(r -> r.bucket(BUCKET).key("presigned.txt")));
            HttpResponse<String> response = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(get.url().toURI()).GET().build(), HttpResponse.BodyHandlers.ofString());
            assertEquals(200, response.statusCode());
            assertEquals("signed in the URL", response.body());

            // The token is presigned with the URL: whoever holds it must send exactly that token (S3 as real tools use
            // it).
            PresignedPutObjectRequest put = presigner.presignPutObject(b -> b.signatureDuration(Duration.ofMinutes(5))
                    .putObjectRequest(r -> r.bucket(BUCKET).key("presigned-put.txt")
                            .overrideConfiguration(token(2))));
            assertTrue(put.signedHeaders().containsKey("fencing-token"), put.signedHeaders().toString());
            HttpResponse<String> putResponse = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(put.url().toURI()).header("Fencing-Token", "2")
                            .PUT(HttpRequest.BodyPublishers.ofString("put by URL")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, putResponse.statusCode(), putResponse.body());
            assertEquals("put by URL", get("presigned-put.txt"));
            HttpResponse<String> otherToken = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(put.url().toURI()).header("Fencing-Token", "3")
                            .PUT(HttpRequest.BodyPublishers.ofString("another token")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(403, otherToken.statusCode(), otherToken.body());
            // A URL presigned without the token: a token added by whoever holds it is refused.
            PresignedPutObjectRequest bare = presigner.presignPutObject(b -> b.signatureDuration(Duration.ofMinutes(5))
                    .putObjectRequest(r -> r.bucket(BUCKET).key("presigned-put.txt")));
            HttpResponse<String> picked = HttpClient.newHttpClient().send(
                    HttpRequest.newBuilder(bare.url().toURI()).header("Fencing-Token", "99")
                            .PUT(HttpRequest.BodyPublishers.ofString("token picked by the URL's holder")).build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(403, picked.statusCode(), picked.body());
            assertTrue(picked.body().contains("<Code>AccessDenied</Code>"), picked.body());
            assertTrue(picked.body().contains("X-Amz-SignedHeaders"), picked.body());
            assertEquals("put by URL", get("presigned-put.txt"));
            assertEquals("2", fixture.direct().headObject(b -> b.bucket(BUCKET).key("presigned-put.txt")).metadata()
                    .get("fencing-token"));

            URI tampered = URI.create(get.url().toString().replace("presigned.txt", "presigned-put.txt"));
            HttpResponse<String> bad = HttpClient.newHttpClient().send(HttpRequest.newBuilder(tampered).GET().build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(403, bad.statusCode());
            assertTrue(bad.body().contains("SignatureDoesNotMatch"), bad.body());
        }
    }

    /** S3 as real tools use it, defect 4: a token header added after signing is refused, the object untouched. */
    @Test
    void aTokenHeaderTheSignatureDoesNotCoverIsRefused() throws Exception {
        put("unsigned-token.txt", 20, "signed with 20");
        // A request signed over everything but the token, which is added on the wire as whoever holds a signed
        // request (or a proxy on the way) could: the AWS SDK itself signs every header it sends.
        String body = "zombie";
        java.time.Instant now = java.time.Instant.now();
        String amzDate = java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
                .withZone(java.time.ZoneOffset.UTC).format(now);
        String date = amzDate.substring(0, 8);
        String host = "127.0.0.1:" + fixture.proxy.server().port();
        String payload = "UNSIGNED-PAYLOAD";
        String canonical = "PUT\n/" + BUCKET + "/unsigned-token.txt\n\nhost:" + host + "\nx-amz-content-sha256:"
                + payload + "\nx-amz-date:" + amzDate + "\n\nhost;x-amz-content-sha256;x-amz-date\n" + payload;
        String scope = date + "/us-east-1/s3/aws4_request";
        String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex(sha256(canonical));
        byte[] key = hmac(hmac(hmac(hmac(("AWS4" + S3Fixture.APP_SECRET).getBytes(StandardCharsets.UTF_8), date),
                "us-east-1"), "s3"), "aws4_request");
        String signature = hex(hmac(key, toSign));
        io.stockade.testing.Http.Response r = RawHttp.send(fixture.proxy.server().port(), "PUT /" + BUCKET
                + "/unsigned-token.txt HTTP/1.1\r\nHost: " + host + "\r\nx-amz-date: " + amzDate
                + "\r\nx-amz-content-sha256: " + payload + "\r\nAuthorization: AWS4-HMAC-SHA256 Credential="
                + S3Fixture.APP_KEY + "/" + scope + ", SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature="
                + signature + "\r\nFencing-Token: 99\r\nContent-Length: " + body.length()
                + "\r\nConnection: close\r\n\r\n" + body);
        assertEquals(403, r.status(), r.body());
        assertTrue(r.body().contains("<Code>AccessDenied</Code>") && r.body().contains("SignedHeaders"), r.body());
        assertEquals("signed with 20", get("unsigned-token.txt"));
        assertEquals("20", fixture.direct().headObject(b -> b.bucket(BUCKET).key("unsigned-token.txt")).metadata()
                .get("fencing-token"));
        // the same request with the token signed is accepted: the refusal was about the signature alone
        String signedCanonical = "PUT\n/" + BUCKET + "/unsigned-token.txt\n\nfencing-token:99\nhost:" + host
                + "\nx-amz-content-sha256:" + payload + "\nx-amz-date:" + amzDate
                + "\n\nfencing-token;host;x-amz-content-sha256;x-amz-date\n" + payload;
        String signed = hex(hmac(key, "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n"
                + hex(sha256(signedCanonical))));
        io.stockade.testing.Http.Response ok = RawHttp.send(fixture.proxy.server().port(), "PUT /" + BUCKET
                + "/unsigned-token.txt HTTP/1.1\r\nHost: " + host + "\r\nx-amz-date: " + amzDate
                + "\r\nx-amz-content-sha256: " + payload + "\r\nAuthorization: AWS4-HMAC-SHA256 Credential="
                + S3Fixture.APP_KEY + "/" + scope + ", SignedHeaders=fencing-token;host;x-amz-content-sha256;"
                + "x-amz-date, Signature=" + signed + "\r\nFencing-Token: 99\r\nContent-Length: " + body.length()
                + "\r\nConnection: close\r\n\r\n" + body);
        assertEquals(200, ok.status(), ok.body());
        assertEquals("zombie", get("unsigned-token.txt"));
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

    /** S3 as real tools use it, defect 5: keys ending in '/' (folder markers) are keys of their own in S3. */
    @Test
    void folderMarkersAreKeysOfTheirOwnAndFenced() {
        put("folder/", 3, "");
        put("folder", 1, "a file beside the folder");
        assertEquals("", get("folder/"));
        assertEquals("a file beside the folder", get("folder"));
        assertEquals("3", fixture.direct().headObject(b -> b.bucket(BUCKET).key("folder/")).metadata()
                .get("fencing-token"));
        S3Exception stale = assertThrows(S3Exception.class, () -> put("folder/", 2, "zombie"));
        assertEquals(412, stale.statusCode());
        s3.deleteObject(b -> b.bucket(BUCKET).key("folder/").overrideConfiguration(token(4)));
        assertThrows(NoSuchKeyException.class, () -> get("folder/"));
        assertEquals("a file beside the folder", get("folder"));
        assertTrue(s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("folder")).contents().stream()
                .anyMatch(o -> o.key().equals("folder")));
    }

    /** S3 as real tools use it, defect 5: a path refusal is S3 XML for an s3 policy, so SDKs report the reason. */
    @Test
    void pathRefusalsAreS3Errors() throws Exception {
        for (String path : List.of("/" + BUCKET + "/a/../b", "/" + BUCKET + "/a/%2e%2e/b", "/" + BUCKET + "/a//b",
                "/" + BUCKET + "/a%00b", "/" + BUCKET + "/a;x")) {
            io.stockade.testing.Http.Response r = RawHttp.send(fixture.proxy.server().port(), "PUT " + path
                    + " HTTP/1.1\r\nHost: x\r\nFencing-Token: 9\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
            assertEquals(400, r.status(), path + ": " + r.body());
            assertTrue(r.body().startsWith("<?xml") && r.body().contains("<Code>InvalidURI</Code>"), path + ": "
                    + r.body());
        }
    }

    /** S3 as real tools use it, defect 6: SigV2 gets an answer that says what to do. */
    @Test
    void sigV2IsRefusedWithWhatToDoInstead() throws Exception {
        io.stockade.testing.Http.Response header = RawHttp.send(fixture.proxy.server().port(), "GET /" + BUCKET
                + "/x HTTP/1.1\r\nHost: x\r\nDate: Mon, 30 Nov 2026 10:00:00 GMT\r\nAuthorization: AWS "
                + S3Fixture.APP_KEY + ":c2lnbmF0dXJl\r\nConnection: close\r\n\r\n");
        assertEquals(400, header.status(), header.body());
        assertTrue(header.body().contains("<Code>InvalidRequest</Code>") && header.body().contains("s3v4"),
                header.body());
        io.stockade.testing.Http.Response url = RawHttp.send(fixture.proxy.server().port(), "GET /" + BUCKET
                + "/x?AWSAccessKeyId=" + S3Fixture.APP_KEY + "&Expires=1900000000&Signature=c2ln HTTP/1.1\r\n"
                + "Host: x\r\nConnection: close\r\n\r\n");
        assertEquals(400, url.status(), url.body());
        assertTrue(url.body().contains("Signature Version 2"), url.body());
        // S3 round three, item 3: a SigV2 presigned PUT or DELETE (boto3's default presign before s3v4) says the
        // same, not "names no S3 operation"; nothing reaches the store
        for (String method : new String[] {"PUT", "DELETE"}) {
            io.stockade.testing.Http.Response write = RawHttp.send(fixture.proxy.server().port(), method + " /"
                    + BUCKET + "/sigv2?AWSAccessKeyId=" + S3Fixture.APP_KEY + "&Expires=1900000000&Signature=c2ln"
                    + " HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nConnection: close\r\n\r\nx");
            assertEquals(400, write.status(), write.body());
            assertTrue(write.body().contains("<Code>InvalidRequest</Code>")
                    && write.body().contains("Signature Version 2"), write.body());
        }
        assertThrows(software.amazon.awssdk.services.s3.model.NoSuchKeyException.class,
                () -> fixture.direct().headObject(b -> b.bucket(BUCKET).key("sigv2")));
    }

    /**
     * S3 as real tools use it: the default refuses every unsigned request, and says what the policy could do about
     * reads.
     */
    @Test
    void unsignedRequestsAreRefusedByDefault() throws Exception {
        put("unsigned-default.txt", 1, "kept");
        io.stockade.testing.Http.Response read = RawHttp.send(fixture.proxy.server().port(), "GET /" + BUCKET
                + "/unsigned-default.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertEquals(403, read.status(), read.body());
        assertTrue(read.body().contains("<Code>AccessDenied</Code>") && read.body().contains("unsigned-reads"),
                read.body());
        io.stockade.testing.Http.Response missing = RawHttp.send(fixture.proxy.server().port(), "GET /"
                + BUCKET + "/no-such-key HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        assertEquals(403, missing.status(), missing.body());
        io.stockade.testing.Http.Response preflight = RawHttp.send(fixture.proxy.server().port(), "OPTIONS /"
                + BUCKET + "/unsigned-default.txt HTTP/1.1\r\nHost: x\r\nOrigin: https://example.org\r\n"
                + "Connection: close\r\n\r\n");
        assertEquals(403, preflight.status(), preflight.body());
    }

    @Test
    void wrongSignatureAndUnknownKeyAre403() {
        try (S3Client wrongSecret = S3Fixture.client(fixture.proxyUri(), S3Fixture.APP_KEY, "not-the-secret");
             S3Client unknown = S3Fixture.client(fixture.proxyUri(), "nobody", "x")) {
            S3Exception e = assertThrows(S3Exception.class, () -> wrongSecret.listBuckets());
            assertEquals(403, e.statusCode());
            assertEquals("SignatureDoesNotMatch", e.awsErrorDetails().errorCode());
            S3Exception put = assertThrows(S3Exception.class, () -> wrongSecret.putObject(b -> b.bucket(BUCKET)
                    .key("forged").overrideConfiguration(token(Long.MAX_VALUE)), RequestBody.fromString("x")));
            assertEquals(403, put.statusCode());
            S3Exception u = assertThrows(S3Exception.class, () -> unknown.listObjectsV2(b -> b.bucket(BUCKET)));
            assertEquals("InvalidAccessKeyId", u.awsErrorDetails().errorCode());
        }
        // The forged write moved no fence: token 1 still writes.
        put("forged", 1, "fine");
    }

    @Test
    void malformedXmlAndHugeKeysAre400() {
        S3Exception e = assertThrows(S3Exception.class, () -> s3.deleteObjects(b -> b.bucket(BUCKET)
                .overrideConfiguration(token(1).andThen(o -> { }))
                .delete(d -> d.objects(List.of()))));
        assertEquals(400, e.statusCode());
        assertEquals("MalformedXML", e.awsErrorDetails().errorCode());
        String huge = "k".repeat(1100);
        S3Exception key = assertThrows(S3Exception.class, () -> put(huge, 1, "x"));
        assertEquals(400, key.statusCode());
        assertEquals("KeyTooLongError", key.awsErrorDetails().errorCode());
        String upload = s3.createMultipartUpload(b -> b.bucket(BUCKET).key("bad-complete")
                .overrideConfiguration(token(1))).uploadId();
        S3Exception complete = assertThrows(S3Exception.class, () -> s3.completeMultipartUpload(b -> b.bucket(BUCKET)
                .key("bad-complete").uploadId(upload).overrideConfiguration(token(1))
                .multipartUpload(CompletedMultipartUpload.builder().build())));
        assertEquals(400, complete.statusCode());
        assertFalse(complete.awsErrorDetails().errorCode().isEmpty());
    }

    /**
     * S3 round three, item 4: one rule for keys in every operation. A key the proxy refuses in a path (a '\\', dot
     * segments) was refused to GET/PUT/DELETE yet deleted by DeleteObjects: now no operation deletes it.
     */
    @Test
    void deleteObjectsTakesNoKeyThePathCouldNotName() {
        put("victim", 1, "kept");
        // the plan names every key's scope: a key no DeleteObject could name refuses the whole request, first
        for (String key : List.of("x/../victim", "a\\b")) {
            S3Exception e = assertThrows(S3Exception.class, () -> s3.deleteObjects(b -> b.bucket(BUCKET)
                    .delete(d -> d.objects(o -> o.key("victim"), o -> o.key(key))).overrideConfiguration(token(5))));
            assertEquals(400, e.statusCode(), e.getMessage());
            assertEquals("InvalidArgument", e.awsErrorDetails().errorCode(), e.getMessage());
            assertTrue(e.getMessage().contains("DeleteObjects names the key '" + key + "'"), e.getMessage());
        }
        assertEquals("kept", fixture.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key("victim")).asUtf8String());
        assertEquals("1", fixture.direct().headObject(b -> b.bucket(BUCKET).key("victim")).metadata()
                .get("fencing-token"), "no fence moved");
    }
}
