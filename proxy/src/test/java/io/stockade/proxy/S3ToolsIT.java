package io.stockade.proxy;

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

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static io.stockade.proxy.S3BackendIT.token;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Issue 15, "S3 as real tools use it", with the AWS SDK v2 (the CLI and boto3 paths are in {@code S3CliIT}):
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
        fixture = S3Fixture.start(journal);
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
        assertEquals(0, head.contentLength());
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
        delete(BUCKET, "l/gone", 2);

        List<String> expected = List.of("l/empty", "l/folder/", "l/live");
        assertEquals(expected, keys(s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("l/")).contents()));
        assertEquals(3, s3.listObjectsV2(b -> b.bucket(BUCKET).prefix("l/")).keyCount());
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
}
