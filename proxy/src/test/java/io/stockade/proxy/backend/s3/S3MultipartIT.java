package io.stockade.proxy.backend.s3;

import java.util.List;
import java.util.Map;
import java.util.Random;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.backend.s3.S3Matrix.Fence;
import io.stockade.proxy.backend.s3.S3Matrix.Setup;
import io.stockade.proxy.backend.s3.S3Matrix.Store;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedMultipartUpload;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.MultipartUpload;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.Part;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static io.stockade.proxy.backend.s3.S3Matrix.bytes;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Multipart uploads through both classes of the S3 backend (atomic: the token in the object's metadata;
 * serialized: {@code conditional-writes: false}, the token in the proxy's journal), against s3proxy over its three
 * stores. Every step after CreateMultipartUpload names its upload by an ID the proxy handed out: a writer that
 * lists another holder's upload cannot put a part into it, a store's own ID (on s3proxy's local stores the name of
 * a blob of the bucket) names nothing, and an upload completes only with the token it was created with. After
 * each refusal the object is read straight from s3proxy (bytes and {@code x-amz-meta-fencing-token}).
 */
class S3MultipartIT {
    private static final String BUCKET = "mpu";
    private static final int FIVE_MIB = 5 * 1024 * 1024;
    private static final String STORES_AND_CLASSES = "io.stockade.proxy.backend.s3.S3Matrix#storesAndClasses";

    private static S3Matrix matrix;
    /** An atomic proxy in front of the transient store whose policy lets writes without a token through. */
    private static ProxyFixture allowing;

    @BeforeAll
    static void start() throws Exception {
        matrix = S3Matrix.start("stockade-s3-mpu", BUCKET);
        allowing = matrix.setup(Store.TRANSIENT).fixture().anotherProxy(matrix.dir().resolve("journal-allowing"),
                Map.of("MISSING_TOKEN", "allow"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (allowing != null) {
            allowing.close();
        }
        if (matrix != null) {
            matrix.close();
        }
    }

    private static String create(S3Client client, String key, long token) {
        return client.createMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(S3Fixture.token(token))).uploadId();
    }

    /** UploadPart without a token (as the AWS CLI sends its parts): its ETag. */
    private static String part(S3Client client, String key, String upload, int number, byte[] bytes) {
        return client.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(number),
                RequestBody.fromBytes(bytes)).eTag();
    }

    private static void complete(S3Client client, String key, String upload, long token, List<CompletedPart> parts) {
        client.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                .multipartUpload(CompletedMultipartUpload.builder().parts(parts).build())
                .overrideConfiguration(S3Fixture.token(token)));
    }

    private static CompletedPart completed(int number, String etag) {
        return CompletedPart.builder().partNumber(number).eTag(etag).build();
    }

    /** The uploads of a key, as a listing names them (through the proxy, or straight from s3proxy). */
    private static List<String> listed(S3Client client, String key) {
        return client.listMultipartUploads(b -> b.bucket(BUCKET).prefix(key)).uploads().stream()
                .filter(u -> u.key().equals(key)).map(MultipartUpload::uploadId).toList();
    }

    private static void assertRefused(S3Exception e, int status, String code) {
        assertEquals(status, e.statusCode(), e.getMessage());
        assertEquals(code, e.awsErrorDetails().errorCode(), e.getMessage());
    }

    /**
     * The report: a zombie took the new holder's upload ID from ListMultipartUploads and uploaded a part into it;
     * when the holder, resuming, completed the parts its upload held, the zombie's bytes landed under the holder's
     * token. Now the listing names the upload by an ID that takes no part, the store's own ID names nothing, and
     * the object read straight from s3proxy after the holder completes holds the holder's bytes only.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void aZombieCannotPutAPartIntoAnotherHoldersUpload(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        S3Client client = setup.client(fence);
        String key = "inject/" + fence;
        setup.put(fence, key, 9, "written by 9");
        byte[] holders = new byte[FIVE_MIB];
        new Random(17).nextBytes(holders);
        String upload = create(client, key, 10);
        part(client, key, upload, 1, holders);

        // the zombie (token 9) lists the bucket's uploads through the proxy and takes the holder's
        List<String> seen = listed(client, key);
        assertEquals(1, seen.size(), seen.toString());
        String listedId = seen.getFirst();
        byte[] zombies = bytes("the zombie's bytes");
        assertRefused(assertThrows(S3Exception.class, () -> part(client, key, listedId, 2, zombies)),
                400, "InvalidRequest");
        assertRefused(assertThrows(S3Exception.class, () -> client.uploadPart(b -> b.bucket(BUCKET).key(key)
                .uploadId(listedId).partNumber(2).overrideConfiguration(S3Fixture.token(9)),
                RequestBody.fromBytes(zombies))), 400, "InvalidRequest");
        setup.put(fence, "inject/source-" + fence, 1, "the zombie's copied bytes");
        assertRefused(assertThrows(S3Exception.class, () -> client.uploadPartCopy(b -> b.sourceBucket(BUCKET)
                .sourceKey("inject/source-" + fence).destinationBucket(BUCKET).destinationKey(key)
                .uploadId(listedId).partNumber(3))), 400, "InvalidRequest");
        // nor the store's own ID, read from the store's listing
        String bare = listed(setup.direct(), key).getFirst();
        assertRefused(assertThrows(S3Exception.class, () -> part(client, key, bare, 2, zombies)),
                404, "NoSuchUpload");
        assertRefused(assertThrows(S3Exception.class, () -> complete(client, key, bare, 9,
                List.of(completed(1, "x")))), 404, "NoSuchUpload");
        assertEquals(List.of(1), setup.direct().listParts(b -> b.bucket(BUCKET).key(key).uploadId(bare)).parts()
                .stream().map(Part::partNumber).toList(), "the store holds the holder's part only");

        // the holder resumes: it completes the parts its upload holds
        List<CompletedPart> parts = client.listParts(b -> b.bucket(BUCKET).key(key).uploadId(upload)).parts()
                .stream().map(p -> completed(p.partNumber(), p.eTag())).toList();
        complete(client, key, upload, 10, parts);
        setup.assertStillFenced(fence, key, holders, 10);
    }

    /**
     * On s3proxy's local stores an upload ID names a blob of the bucket (the upload's metadata), and an
     * AbortMultipartUpload removes the blob its ID names: {@code DELETE /b/any?uploadId=<key>} deleted the object
     * {@code key} without a token, and a zombie's older token was then accepted. On the serialized class a part
     * and a Complete naming an object as their upload deleted it too. The proxy forwards only upload IDs it handed
     * out: such a request names no upload (404), and the object is as it was.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void anUploadIdNamesAnUploadNeverAnObject(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        S3Client client = setup.client(fence);
        String victim = "victim/" + fence;
        byte[] body = bytes("fenced by 20");
        setup.put(fence, victim, 20, "fenced by 20");
        String other = "victim-other/" + fence;

        assertRefused(assertThrows(S3Exception.class, () -> client.abortMultipartUpload(b -> b.bucket(BUCKET)
                .key(other).uploadId(victim))), 404, "NoSuchUpload");
        setup.assertStored(victim, body, 20);
        assertRefused(assertThrows(S3Exception.class, () -> part(client, other, victim, 1, bytes("part"))),
                404, "NoSuchUpload");
        assertRefused(assertThrows(S3Exception.class, () -> complete(client, other, victim, 30,
                List.of(completed(1, "\"" + "0".repeat(32) + "\"")))), 404, "NoSuchUpload");
        assertRefused(assertThrows(S3Exception.class, () -> client.listParts(b -> b.bucket(BUCKET).key(other)
                .uploadId(victim))), 404, "NoSuchUpload");
        assertThrows(NoSuchKeyException.class, () -> setup.direct().headObject(b -> b.bucket(BUCKET).key(other)));
        setup.assertStillFenced(fence, victim, body, 20);
    }

    /**
     * A stale holder resumes its own old upload after a newer holder wrote the object: every step is fenced on the
     * object with the upload's token, so its part is refused (412, since the one-decider issue: it was relayed), its
     * Complete too (412), and a Complete of that upload with the newer token is malformed (400): the completed
     * object would hold the creation's metadata, token 9, under a fence of 10. Before, the serialized class let the
     * latter through (s3proxy read straight: the object said 9).
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void anOldUploadCompletesOnlyWithItsOwnTokenAndNotAfterANewerWrite(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        S3Client client = setup.client(fence);
        String key = "resume/" + fence;
        setup.put(fence, key, 9, "written by 9");
        String upload = create(client, key, 9);
        String first = part(client, key, upload, 1, bytes("the zombie's part"));
        setup.put(fence, key, 10, "written by 10");
        // the zombie's parts are refused now: its upload's token is stale on the object
        assertRefused(assertThrows(S3Exception.class, () -> part(client, key, upload, 1,
                bytes("the zombie's part, again"))), 412, "PreconditionFailed");
        List<CompletedPart> parts = List.of(completed(1, first));

        assertRefused(assertThrows(S3Exception.class, () -> complete(client, key, upload, 9, parts)),
                412, "PreconditionFailed");
        S3Exception newer = assertThrows(S3Exception.class, () -> complete(client, key, upload, 10, parts));
        assertRefused(newer, 400, "InvalidFencingToken");
        assertTrue(newer.getMessage().contains("created with fencing token 9"), newer.getMessage());
        setup.assertStillFenced(fence, key, bytes("written by 10"), 10);
        assertFalse(first.isEmpty());
        // nor may the zombie abort it; the new holder cleans it up, with its own token, through a listed ID
        assertRefused(assertThrows(S3Exception.class, () -> client.abortMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(upload))), 412, "PreconditionFailed");
        String listedId = listed(client, key).getFirst();
        client.abortMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(listedId)
                .overrideConfiguration(S3Fixture.token(10)));
        assertEquals(List.of(), listed(setup.direct(), key));
    }

    /**
     * Honest flows: an upload with its token completes (parts with the upload's token or none, an UploadPartCopy,
     * ListParts); a part carrying another token is refused before it is stored; a listing through the proxy names
     * an upload by an ID that lists its parts and aborts it (how clients clean up), and completes nothing.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void anHonestUploadCompletesAndAListedOneCanBeCleanedUp(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        S3Client client = setup.client(fence);
        String key = "honest/" + fence;
        String upload = create(client, key, 5);
        assertTrue(upload.contains("~stk5~"), upload);
        byte[] first = new byte[FIVE_MIB];
        new Random(5).nextBytes(first);
        String etag1 = client.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(1)
                .overrideConfiguration(S3Fixture.token(5)), RequestBody.fromBytes(first)).eTag();
        S3Exception other = assertThrows(S3Exception.class, () -> client.uploadPart(b -> b.bucket(BUCKET).key(key)
                .uploadId(upload).partNumber(2).overrideConfiguration(S3Fixture.token(6)),
                RequestBody.fromString("another token's part")));
        assertRefused(other, 400, "InvalidFencingToken");
        assertTrue(other.getMessage().contains("created with fencing token 5"), other.getMessage());
        setup.put(fence, "honest/source-" + fence, 1, "copied tail");
        String etag2 = client.uploadPartCopy(b -> b.sourceBucket(BUCKET).sourceKey("honest/source-" + fence)
                .destinationBucket(BUCKET).destinationKey(key).uploadId(upload).partNumber(2)).copyPartResult().eTag();
        assertEquals(List.of(1, 2), client.listParts(b -> b.bucket(BUCKET).key(key).uploadId(upload)).parts()
                .stream().map(Part::partNumber).toList());
        complete(client, key, upload, 5, List.of(completed(1, etag1), completed(2, etag2)));
        byte[] whole = new byte[FIVE_MIB + "copied tail".length()];
        System.arraycopy(first, 0, whole, 0, FIVE_MIB);
        System.arraycopy(bytes("copied tail"), 0, whole, FIVE_MIB, "copied tail".length());
        setup.assertStored(key, whole, 5);

        // an upload left behind, found by a listing and cleaned up through the proxy
        String left = create(client, key, 5);
        part(client, key, left, 1, bytes("left behind"));
        String listedId = listed(client, key).getFirst();
        assertTrue(listedId.contains("~stl~"), listedId);
        assertEquals(List.of(1), client.listParts(b -> b.bucket(BUCKET).key(key).uploadId(listedId)).parts()
                .stream().map(Part::partNumber).toList());
        assertRefused(assertThrows(S3Exception.class, () -> complete(client, key, listedId, 5,
                List.of(completed(1, "x")))), 400, "InvalidRequest");
        String moved = listedId.replace("~stl~", "~stk5~");
        assertRefused(assertThrows(S3Exception.class, () -> complete(client, key, moved, 5,
                List.of(completed(1, "x")))), 404, "NoSuchUpload");
        // a listed ID names no token: the abort carries the holder's (without one it is refused, 400)
        assertRefused(assertThrows(S3Exception.class, () -> client.abortMultipartUpload(b -> b.bucket(BUCKET)
                .key(key).uploadId(listedId))), 400, "MissingFencingToken");
        client.abortMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(listedId)
                .overrideConfiguration(S3Fixture.token(5)));
        assertEquals(List.of(), listed(setup.direct(), key));
        setup.assertStored(key, whole, 5);
    }

    /** An upload ID is bound to its object: another key's upload ID names nothing there. */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void anUploadIdIsBoundToItsObject(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "bound/" + fence;
        String upload = create(setup.client(fence), key + "-a", 3);
        Http.Response r = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key + "-b").query("partNumber", "1")
                .query("uploadId", upload).body("moved part").send(setup.port(fence));
        assertEquals(404, r.status(), r.toString());
        assertTrue(r.body().contains("<Code>NoSuchUpload</Code>"), r.body());
        setup.client(fence).abortMultipartUpload(b -> b.bucket(BUCKET).key(key + "-a").uploadId(upload));
    }

    /** A policy that lets writes without a token through (missing: allow) still completes its uploads. */
    @Test
    void anUploadWithoutATokenCompletesUnderMissingAllow() {
        Setup setup = matrix.setup(Store.TRANSIENT);
        try (S3Client client = S3Fixture.client(allowing.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            String key = "allowed/no-token";
            String upload = client.createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
            // S3 round four, item 2: a listing names it by the very ID its creator got (it names no token)
            assertEquals(List.of(upload), listed(client, key));
            String etag = part(client, key, upload, 1, bytes("no token"));
            // such an ID cannot tell whose upload it names: a part with a token is refused, nothing stored
            assertRefused(assertThrows(S3Exception.class, () -> client.uploadPart(b -> b.bucket(BUCKET).key(key)
                    .uploadId(upload).partNumber(2).overrideConfiguration(S3Fixture.token(9)),
                    RequestBody.fromBytes(bytes("a token's part")))), 400, "InvalidRequest");
            assertEquals(List.of(1), setup.direct().listParts(b -> b.bucket(BUCKET).key(key)
                    .uploadId(listed(setup.direct(), key).getFirst())).parts().stream().map(Part::partNumber)
                    .toList());
            client.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                    .multipartUpload(CompletedMultipartUpload.builder().parts(completed(1, etag)).build()));
            assertArrayEquals(bytes("no token"), setup.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key(key))
                    .asByteArray());
            // with a token, such an upload cannot be completed: its object would carry none
            String again = client.createMultipartUpload(b -> b.bucket(BUCKET).key(key)).uploadId();
            String etag2 = part(client, key, again, 1, bytes("no token, then 4"));
            assertRefused(assertThrows(S3Exception.class, () -> complete(client, key, again, 4,
                    List.of(completed(1, etag2)))), 400, "InvalidRequest");
            assertArrayEquals(bytes("no token"), setup.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key(key))
                    .asByteArray());
        }
    }
}
