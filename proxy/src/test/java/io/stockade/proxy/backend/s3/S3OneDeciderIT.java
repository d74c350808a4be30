package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One decider: the S3 plan alone says what is fenced, and S3 fences operations, not HTTP methods. Every step of a
 * multipart upload is a fenced write of its object (a zombie's upload, created before the new holder wrote, takes
 * no part, completes nothing and aborts nothing), and every key of a DeleteObjects is a scope of the write, judged
 * by the policy's {@code max-advance} and limits as a DeleteObject of it would be. Both classes, against s3proxy;
 * after each refusal the object is read straight from the store, and its fence (the object's metadata, or the
 * proxy's store) is checked not to have moved.
 */
class S3OneDeciderIT {
    private static final String BUCKET = "decider";
    private static final int FIVE_MIB = 5 * 1024 * 1024;

    enum Fence { ATOMIC, SERIALIZED }

    private static Path dir;
    private static S3Fixture fixture;
    private static ProxyFixture serialized;
    private static S3Client direct;
    private static S3Client atomicClient;
    private static S3Client serializedClient;

    @BeforeAll
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-s3-decider");
        Map<String, String> vars = Map.of("MAX_ADVANCE", "10", "MAX_SCOPE_BYTES", "120");
        fixture = S3Fixture.start(dir.resolve("journal-atomic"), vars);
        Map<String, String> serializedVars = new java.util.HashMap<>(vars);
        serializedVars.put("CONDITIONAL_WRITES", "false");
        serializedVars.put("S3_TIMEOUT", "1s");
        serialized = fixture.anotherProxy(dir.resolve("journal-serialized"), serializedVars);
        direct = S3Fixture.clientWithRequiredChecksumsOnly(fixture.directUri(), S3Fixture.UPSTREAM_KEY,
                S3Fixture.UPSTREAM_SECRET);
        direct.createBucket(b -> b.bucket(BUCKET));
        atomicClient = fixture.client();
        serializedClient = S3Fixture.client(serialized.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET);
        S3Matrix.awaitOpen(serializedClient, BUCKET); // its settle time after it starts
    }

    @AfterAll
    static void stop() throws Exception {
        if (serialized != null) {
            serialized.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    private static S3Client client(Fence fence) {
        return fence == Fence.ATOMIC ? atomicClient : serializedClient;
    }

    private static String key(Fence fence, String name) {
        return fence.name().toLowerCase(java.util.Locale.ROOT) + "/" + name;
    }

    private static void put(Fence fence, String key, long token, String body) {
        client(fence).putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(S3Fixture.token(token)),
                RequestBody.fromString(body));
    }

    /** The object's bytes, read straight from the store. */
    private static String stored(String key) {
        try {
            return direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String();
        } catch (NoSuchKeyException e) {
            return null;
        }
    }

    /** The object's fence: its metadata (atomic class), or the serialized proxy's store. */
    private static OptionalLong fence(Fence fence, String key) throws Exception {
        if (fence == Fence.ATOMIC) {
            String meta = direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("fencing-token");
            return meta == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(meta));
        }
        return serialized.server().store().get("s3/" + BUCKET + "/" + key)
                .map(s -> OptionalLong.of(s.token())).orElse(OptionalLong.empty());
    }

    private static int status(Runnable call) {
        return assertThrows(S3Exception.class, call::run).statusCode();
    }

    /**
     * A zombie created its upload with token 3 before the new holder wrote with 10: with its upload ID alone (the
     * AWS CLI sends no token with a part), its part, its completion and its abort are each refused as stale; its
     * new upload too. Nothing it sent reached the object, and no part reached its upload.
     */
    @ParameterizedTest
    @EnumSource(Fence.class)
    void aZombiesMultipartUploadIsFencedAtEveryStep(Fence fence) throws Exception {
        S3Client client = client(fence);
        String key = key(fence, "mpu");
        String upload = client.createMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(S3Fixture.token(3))).uploadId();
        put(fence, key, 10, "holder");

        assertEquals(412, status(() -> client.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                .partNumber(1), RequestBody.fromBytes(new byte[FIVE_MIB]))), "a part of a stale upload");
        assertEquals(412, status(() -> client.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                .partNumber(2).overrideConfiguration(S3Fixture.token(3)), RequestBody.fromString("x"))),
                "a part carrying the upload's stale token");
        assertEquals(412, status(() -> client.completeMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .uploadId(upload).multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1)
                        .eTag("\"x\"").build())))), "the completion of a stale upload");
        assertEquals(412, status(() -> client.abortMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .uploadId(upload))), "the abort of a stale upload");
        assertEquals(412, status(() -> client.createMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(S3Fixture.token(3)))), "a new upload with the stale token");

        assertEquals("holder", stored(key));
        assertEquals(OptionalLong.of(10), fence(fence, key));
        // the upload is still there (its abort was refused), with no part in it
        var listed = direct.listMultipartUploads(b -> b.bucket(BUCKET).prefix(key)).uploads();
        assertEquals(1, listed.size(), listed.toString());
        assertEquals(List.of(), direct.listParts(b -> b.bucket(BUCKET).key(key)
                .uploadId(listed.getFirst().uploadId())).parts());
        direct.abortMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(listed.getFirst().uploadId()));
    }

    /** The holder's own upload goes through every step with the token it was created with. */
    @ParameterizedTest
    @EnumSource(Fence.class)
    void theHoldersUploadCompletes(Fence fence) throws Exception {
        S3Client client = client(fence);
        String key = key(fence, "mpu-ok");
        put(fence, key, 7, "before");
        String upload = client.createMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(S3Fixture.token(8))).uploadId();
        String etag = client.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(1),
                RequestBody.fromString("holder-8")).eTag();
        client.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag(etag).build())));
        assertEquals("holder-8", stored(key));
        assertEquals(OptionalLong.of(8), fence(fence, key));
    }

    /**
     * {@code max-advance: 10} holds for each key of a DeleteObjects as for a DeleteObject: a token of 1000 over 5
     * deletes nothing and moves no fence, and the honest holder's 6 still writes.
     */
    @ParameterizedTest
    @EnumSource(Fence.class)
    void deleteObjectsHonoursMaxAdvanceOnEveryKey(Fence fence) throws Exception {
        S3Client client = client(fence);
        String key = key(fence, "far");
        put(fence, key, 5, "v5");
        assertEquals(422, status(() -> client.deleteObject(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(S3Fixture.token(1000)))));
        if (fence == Fence.ATOMIC) {
            // the atomic class judges each key on its own object: the key's entry says why it was not deleted
            DeleteObjectsResponse r = client.deleteObjects(b -> b.bucket(BUCKET).delete(Delete.builder()
                    .objects(ObjectIdentifier.builder().key(key).build()).build())
                    .overrideConfiguration(S3Fixture.token(1000)));
            assertEquals(List.of(), r.deleted());
            assertEquals(1, r.errors().size(), r.toString());
            assertEquals("TokenTooFar", r.errors().getFirst().code(), r.toString());
        } else {
            assertEquals(422, status(() -> client.deleteObjects(b -> b.bucket(BUCKET).delete(Delete.builder()
                    .objects(ObjectIdentifier.builder().key(key).build()).build())
                    .overrideConfiguration(S3Fixture.token(1000)))));
        }
        assertEquals("v5", stored(key));
        assertEquals(OptionalLong.of(5), fence(fence, key));
        put(fence, key, 6, "v6");
        assertEquals("v6", stored(key));
    }

    /**
     * Every key of a DeleteObjects is a scope of the write: a stale token deletes none of them, and the holder's
     * token deletes all of them, leaving each key's fence (a zombie cannot recreate one).
     */
    @ParameterizedTest
    @EnumSource(Fence.class)
    void deleteObjectsFencesEveryKey(Fence fence) throws Exception {
        S3Client client = client(fence);
        String a = key(fence, "a");
        String b = key(fence, "b");
        put(fence, a, 5, "a5");
        put(fence, b, 5, "b5");
        Delete both = Delete.builder().objects(ObjectIdentifier.builder().key(a).build(),
                ObjectIdentifier.builder().key(b).build()).build();
        if (fence == Fence.ATOMIC) {
            DeleteObjectsResponse r = client.deleteObjects(d -> d.bucket(BUCKET).delete(both)
                    .overrideConfiguration(S3Fixture.token(4)));
            assertEquals(2, r.errors().size(), r.toString());
            assertTrue(r.errors().stream().allMatch(e -> e.code().equals("PreconditionFailed")), r.toString());
        } else {
            assertEquals(412, status(() -> client.deleteObjects(d -> d.bucket(BUCKET).delete(both)
                    .overrideConfiguration(S3Fixture.token(4)))));
        }
        assertEquals("a5", stored(a));
        assertEquals("b5", stored(b));

        DeleteObjectsResponse done = client.deleteObjects(d -> d.bucket(BUCKET).delete(both)
                .overrideConfiguration(S3Fixture.token(6)));
        assertEquals(2, done.deleted().size(), done.toString());
        assertThrows(NoSuchKeyException.class, () -> client.getObject(g -> g.bucket(BUCKET).key(a)));
        assertEquals(OptionalLong.of(6), fence(fence, a));
        assertEquals(412, status(() -> put(fence, b, 5, "zombie")), "a deleted key keeps its token");
    }

    /** A key whose scope is longer than the policy's max-scope-bytes refuses the whole DeleteObjects (414). */
    @ParameterizedTest
    @EnumSource(Fence.class)
    void deleteObjectsLimitsEveryKeysScope(Fence fence) {
        S3Client client = client(fence);
        String shortKey = key(fence, "short");
        String longKey = key(fence, "x".repeat(150));
        put(fence, shortKey, 5, "kept");
        assertEquals(414, status(() -> client.deleteObjects(d -> d.bucket(BUCKET).delete(Delete.builder()
                .objects(ObjectIdentifier.builder().key(shortKey).build(),
                        ObjectIdentifier.builder().key(longKey).build()).build())
                .overrideConfiguration(S3Fixture.token(5)))));
        assertEquals("kept", stored(shortKey));
    }
}
