package io.stockade.proxy.backend.s3;

import java.util.Map;

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
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchBucketException;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.Permission;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The S3 backend's closed table, against s3proxy over its two stores (jclouds' {@code transient} map and its
 * {@code filesystem} store, objects as files) and through both classes of the backend (atomic: the token in the
 * object's metadata; serialized: {@code conditional-writes: false}, the token in the proxy's journal). Each
 * reproduction of the default-deny issue sends what a hostile client sent, checks the answer, reads the object
 * straight from s3proxy (bytes and {@code x-amz-meta-fencing-token}) and checks that a lower token is still
 * refused afterwards: a refusal moved nothing.
 */
class S3ClosedTableIT {
    private static final String BUCKET = "tbl";
    private static final String OTHER = "other";
    private static final String STORES_AND_CLASSES = "io.stockade.proxy.backend.s3.S3Matrix#storesAndClasses";

    private static S3Matrix matrix;
    /** A serialized proxy in front of the transient store whose policy opts into bucket writes and distinct keys. */
    private static ProxyFixture optedIn;

    @BeforeAll
    static void start() throws Exception {
        matrix = S3Matrix.start("stockade-s3-table", BUCKET, OTHER);
    }

    /** The proxy whose policy opts in, started by the first test that needs it. */
    private static synchronized ProxyFixture optedIn() throws Exception {
        if (optedIn == null) {
            optedIn = matrix.setup(Store.TRANSIENT).fixture().anotherProxy(matrix.dir().resolve("journal-opted-in"),
                    Map.of("CONDITIONAL_WRITES", "false", "S3_TIMEOUT", "2s", "BUCKET_WRITES",
                            "[create, delete, acl]", "DISTINCT_KEYS", "true"));
            try (S3Client client = S3Fixture.client(optedIn.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
                S3Matrix.awaitOpen(client, BUCKET);
            }
        }
        return optedIn;
    }

    @AfterAll
    static void stop() throws Exception {
        if (optedIn != null) {
            optedIn.close();
        }
        if (matrix != null) {
            matrix.close();
        }
    }

    /** The object as s3proxy holds it, for a message. */
    private static String stored(Setup setup, String key) {
        try {
            HeadObjectResponse head = setup.direct().headObject(b -> b.bucket(BUCKET).key(key));
            return "'" + setup.direct().getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String() + "', token "
                    + head.metadata().get("fencing-token") + ", ETag " + head.eTag();
        } catch (NoSuchKeyException e) {
            return "missing";
        }
    }

    private static void assertS3Error(Http.Response r, int status, String code) {
        assertEquals(status, r.status(), r.toString());
        assertTrue(r.body().contains("<Code>" + code + "</Code>"), r.body());
    }

    /**
     * Reproduction 1: {@code PUT ?retention} (or {@code ?legal-hold}) with a body and no token was forwarded as
     * "metadata"; s3proxy ignores the parameter and ran a PutObject, which replaced the fenced object and wiped its
     * token, so that token 1 was accepted next.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void anObjectSubResourceTheStoreIgnoresCannotReplaceAFencedObject(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        for (String sub : new String[] {"retention", "legal-hold", "restore"}) {
            String key = "sub/" + fence + "-" + sub;
            setup.put(fence, key, 100, "fenced by 100");
            Http.Response r = new S3Fixture.Raw(sub.equals("restore") ? "POST" : "PUT", "/" + BUCKET + "/" + key)
                    .query(sub, "").header("content-type", "application/xml")
                    .body("<x>replaced without a token</x>").send(setup.port(fence));
            assertS3Error(r, 501, "NotImplemented");
            assertTrue(r.body().contains(sub), r.body());
            setup.assertStillFenced(fence, key, "fenced by 100", 100);
        }
    }

    /**
     * Reproduction 1: {@code PUT ?acl} with {@code x-amz-copy-source} is a CopyObject to the store, which copied
     * another object's bytes and token over a fenced one. A copy source is taken by CopyObject and UploadPartCopy
     * only.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void aCopySourceOnAnythingButACopyIsRefused(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "acl-copy/" + fence;
        setup.put(fence, key + "-src", 1, "the source's bytes");
        setup.put(fence, key, 30, "fenced by 30");
        for (String sub : new String[] {"acl", "tagging"}) {
            Http.Response r = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).query(sub, "")
                    .header("x-amz-copy-source", "/" + BUCKET + "/" + key + "-src")
                    .header("Fencing-Token", "30").send(setup.port(fence));
            assertS3Error(r, 400, "InvalidArgument");
            assertTrue(r.body().contains("x-amz-copy-source"), r.body());
        }
        Http.Response tokenless = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).query("acl", "")
                .header("x-amz-copy-source", "/" + BUCKET + "/" + key + "-src").send(setup.port(fence));
        assertS3Error(tokenless, 400, "InvalidArgument");
        Http.Response delete = new S3Fixture.Raw("DELETE", "/" + BUCKET + "/" + key)
                .header("x-amz-copy-source", "/" + BUCKET + "/" + key + "-src")
                .header("Fencing-Token", "31").send(setup.port(fence));
        assertS3Error(delete, 400, "InvalidArgument");
        setup.assertStillFenced(fence, key, "fenced by 30", 30);
    }

    /**
     * Object ACL and tags: on the serialized class a fenced write of the key's scope (a stale token refused, the
     * holder's accepted); on the atomic class they cannot be made conditional on the token in the object's
     * metadata, so they are refused and the answer says to set them with the PutObject.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void objectAclWritesAreFencedOrRefused(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "acl/" + fence;
        setup.put(fence, key, 40, "fenced by 40");
        Http.Response stale = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).query("acl", "")
                .header("x-amz-acl", "public-read").header("Fencing-Token", "39").send(setup.port(fence));
        Http.Response tokenless = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).query("acl", "")
                .header("x-amz-acl", "public-read").send(setup.port(fence));
        if (fence == Fence.ATOMIC) {
            assertS3Error(stale, 501, "NotImplemented");
            assertTrue(stale.body().contains("x-amz-acl"), stale.body());
            assertS3Error(tokenless, 501, "NotImplemented");
        } else {
            assertS3Error(stale, 412, "PreconditionFailed");
            assertS3Error(tokenless, 400, "MissingFencingToken");
        }
        assertFalse(publicRead(setup, key), "the ACL was not changed");
        if (fence == Fence.SERIALIZED) {
            Http.Response holder = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).query("acl", "")
                    .header("x-amz-acl", "public-read").header("Fencing-Token", "40").send(setup.port(fence));
            assertEquals(200, holder.status(), holder.body());
            assertTrue(publicRead(setup, key), "the holder's ACL write went through");
        }
        setup.assertStillFenced(fence, key, "fenced by 40", 40);
    }

    private static boolean publicRead(Setup setup, String key) {
        return setup.direct().getObjectAcl(b -> b.bucket(BUCKET).key(key)).grants().stream()
                .anyMatch(g -> g.permission() == Permission.READ && g.grantee().uri() != null
                        && g.grantee().uri().endsWith("AllUsers"));
    }

    /**
     * Reproduction 2: over the filesystem store {@code k} and {@code k/} are one file; on the serialized class they
     * were two scopes, so a writer with token 1 on {@code k/} rewrote the metadata of {@code k} (fenced by 10) and
     * deleted it. Such keys are refused there unless the policy says the store keeps them apart.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Store.class)
    void aKeyTheStoreMayFoldIntoAnotherIsRefusedOnTheSerializedClass(Store store) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "fold/k";
        setup.put(Fence.SERIALIZED, key, 10, "fenced by 10");
        Http.Response marker = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key + "/").header("Fencing-Token", "1")
                .body("").send(setup.port(Fence.SERIALIZED));
        Http.Response delete = new S3Fixture.Raw("DELETE", "/" + BUCKET + "/" + key + "/").header("Fencing-Token", "1")
                .send(setup.port(Fence.SERIALIZED));
        String both = "PUT k/: " + marker.status() + ", DELETE k/: " + delete.status() + "; k in the store: "
                + stored(setup, key);
        assertEquals(400, marker.status(), both);
        assertEquals(400, delete.status(), both);
        assertS3Error(marker, 400, "InvalidArgument");
        assertTrue(marker.body().contains("distinct-keys"), both);
        assertS3Error(delete, 400, "InvalidArgument");
        setup.assertStillFenced(Fence.SERIALIZED, key, "fenced by 10", 10);
        // reading such a key is no write: forwarded
        Http.Response read = new S3Fixture.Raw("HEAD", "/" + BUCKET + "/" + key + "/")
                .send(setup.port(Fence.SERIALIZED));
        assertTrue(read.status() == 404 || read.status() == 200, read.toString());
    }

    /**
     * The atomic class keeps the token in the object itself, so a spelling the store folds onto {@code k} reads and
     * writes {@code k}'s token: a lower token through {@code k/} changes nothing of {@code k} (refused, or failed at
     * the store), on every store.
     */
    @ParameterizedTest(name = "{0}")
    @EnumSource(Store.class)
    void onTheAtomicClassAFoldedKeyMeetsTheTokenOfTheObjectItFoldsOnto(Store store) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "fold-atomic/k";
        setup.put(Fence.ATOMIC, key, 10, "fenced by 10");
        Http.Response marker = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key + "/").header("Fencing-Token", "1")
                .body("").send(setup.port(Fence.ATOMIC));
        Http.Response delete = new S3Fixture.Raw("DELETE", "/" + BUCKET + "/" + key + "/").header("Fencing-Token", "1")
                .send(setup.port(Fence.ATOMIC));
        String both = "PUT k/: " + marker.status() + ", DELETE k/: " + delete.status() + "; k in the store: "
                + stored(setup, key);
        assertEquals("'fenced by 10', token 10", stored(setup, key).replaceAll(", ETag.*", ""), both);
        setup.assertStillFenced(Fence.ATOMIC, key, "fenced by 10", 10);
    }

    /**
     * Reproduction 3: a presigned PUT that signs only the token took an unsigned {@code x-amz-copy-source} and copied
     * another bucket's object into the key. AWS refuses a request with an unsigned {@code x-amz-*} header (403
     * AccessDenied "There were headers present in the request which were not signed"); so does the proxy, for
     * presigned and header-signed requests alike.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void anUnsignedAmzHeaderIsRefused(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "presigned/" + fence;
        setup.put(fence, key, 50, "fenced by 50");
        setup.direct().putObject(b -> b.bucket(OTHER).key("ov50"), RequestBody.fromString("another bucket's bytes"));
        Http.Response presigned = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).header("Fencing-Token", "60")
                .presigned().unsignedHeader("x-amz-copy-source", "/" + OTHER + "/ov50").body("")
                .send(setup.port(fence));
        assertS3Error(presigned, 403, "AccessDenied");
        assertTrue(presigned.body().contains("x-amz-copy-source"), presigned.body());
        Http.Response signed = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).header("Fencing-Token", "60")
                .unsignedHeader("x-amz-meta-owner", "mallory").body("unsigned metadata").send(setup.port(fence));
        assertS3Error(signed, 403, "AccessDenied");
        assertTrue(signed.body().contains("x-amz-meta-owner"), signed.body());
        setup.assertStillFenced(fence, key, "fenced by 50", 50);
    }

    /** Bucket writes (CreateBucket, DeleteBucket, PUT/DELETE of a bucket's sub-resources) need the policy's opt-in. */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void bucketWritesAreRefusedUnlessThePolicyNamesThem(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String created = ("new-" + fence).toLowerCase(java.util.Locale.ROOT);
        Http.Response create = new S3Fixture.Raw("PUT", "/" + created).header("Fencing-Token", "5")
                .send(setup.port(fence));
        assertS3Error(create, 501, "NotImplemented");
        assertTrue(create.body().contains("bucket-writes"), create.body());
        assertThrows(NoSuchBucketException.class, () -> setup.direct().headBucket(b -> b.bucket(created)));

        Http.Response acl = new S3Fixture.Raw("PUT", "/" + BUCKET).query("acl", "").header("x-amz-acl", "public-read")
                .send(setup.port(fence));
        assertS3Error(acl, 501, "NotImplemented");
        assertFalse(setup.direct().getBucketAcl(b -> b.bucket(BUCKET)).grants().stream()
                .anyMatch(g -> g.grantee().uri() != null && g.grantee().uri().endsWith("AllUsers")));

        String empty = ("empty-" + fence).toLowerCase(java.util.Locale.ROOT);
        setup.direct().createBucket(b -> b.bucket(empty));
        Http.Response delete = new S3Fixture.Raw("DELETE", "/" + empty).send(setup.port(fence));
        assertS3Error(delete, 501, "NotImplemented");
        setup.direct().headBucket(b -> b.bucket(empty));

        for (String sub : new String[] {"lifecycle", "policy", "versioning", "cors", "tagging", "object-lock"}) {
            Http.Response r = new S3Fixture.Raw("PUT", "/" + BUCKET).query(sub, "").body("<x/>")
                    .send(setup.port(fence));
            assertS3Error(r, 501, "NotImplemented");
            Http.Response d = new S3Fixture.Raw("DELETE", "/" + BUCKET).query(sub, "").send(setup.port(fence));
            assertTrue(d.status() == 501 || d.status() == 405 || d.status() == 400, sub + ": " + d);
        }
    }

    /** The bucket writes a policy names are forwarded (unfenced); the others stay refused. */
    @Test
    void bucketWritesThePolicyNamesAreForwarded() throws Exception {
        Setup setup = matrix.setup(Store.TRANSIENT);
        int port = optedIn().server().port();
        Http.Response create = new S3Fixture.Raw("PUT", "/opted-in").send(port);
        assertEquals(200, create.status(), create.toString());
        setup.direct().headBucket(b -> b.bucket("opted-in"));
        Http.Response acl = new S3Fixture.Raw("PUT", "/opted-in").query("acl", "").header("x-amz-acl", "public-read")
                .send(port);
        assertEquals(200, acl.status(), acl.toString());
        assertTrue(setup.direct().getBucketAcl(b -> b.bucket("opted-in")).grants().stream()
                .anyMatch(g -> g.grantee().uri() != null && g.grantee().uri().endsWith("AllUsers")));
        Http.Response lifecycle = new S3Fixture.Raw("PUT", "/opted-in").query("lifecycle", "").body("<x/>").send(port);
        assertS3Error(lifecycle, 501, "NotImplemented");
        assertTrue(lifecycle.body().contains("bucket-writes: [lifecycle]"), lifecycle.body());
        Http.Response delete = new S3Fixture.Raw("DELETE", "/opted-in").send(port);
        assertEquals(204, delete.status(), delete.toString());
        assertThrows(NoSuchBucketException.class, () -> setup.direct().headBucket(b -> b.bucket("opted-in")));
    }

    /** With distinct-keys: true the serialized class fences k/ and k as the two objects the store keeps apart. */
    @Test
    void aPolicyForAStoreThatKeepsKeysApartWritesThemAsTwoScopes() throws Exception {
        Setup setup = matrix.setup(Store.TRANSIENT);
        int port = optedIn().server().port();
        try (S3Client client = S3Fixture.client(optedIn().uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            client.putObject(b -> b.bucket(BUCKET).key("apart/k").overrideConfiguration(S3Fixture.token(10)),
                    RequestBody.fromString("k by 10"));
            Http.Response marker = new S3Fixture.Raw("PUT", "/" + BUCKET + "/apart/k/").header("Fencing-Token", "1")
                    .body("").send(port);
            assertEquals(200, marker.status(), marker.toString());
            setup.assertStored("apart/k", "k by 10", 10);
            setup.assertStored("apart/k/", "", 1);
        }
    }

    /** An unknown query parameter is refused on a read too, an unknown method or header on any request. */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void unknownParametersAndMethodsAreRefused(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "unknown/" + fence;
        setup.put(fence, key, 70, "fenced by 70");
        assertS3Error(new S3Fixture.Raw("GET", "/" + BUCKET + "/" + key).query("foo", "1").send(setup.port(fence)),
                400, "InvalidArgument");
        assertS3Error(new S3Fixture.Raw("GET", "/" + BUCKET).query("foo", "").send(setup.port(fence)),
                400, "InvalidArgument");
        Http.Response patch = new S3Fixture.Raw("PATCH", "/" + BUCKET + "/" + key).header("Fencing-Token", "71")
                .body("a patch").send(setup.port(fence));
        assertS3Error(patch, 405, "MethodNotAllowed");
        // The listener takes every method upper-cased (Helidon), so a 'put' is a PUT to the proxy and is sent
        // upstream as the PUT the proxy read: signed as 'put', its signature does not hold.
        Http.Response lower = new S3Fixture.Raw("put", "/" + BUCKET + "/" + key).header("Fencing-Token", "71")
                .body("a lower-case put").send(setup.port(fence));
        assertS3Error(lower, 403, "SignatureDoesNotMatch");
        Http.Response header = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).header("Fencing-Token", "71")
                .header("x-amz-rename-source", "/" + BUCKET + "/elsewhere").body("renamed?").send(setup.port(fence));
        assertS3Error(header, 400, "InvalidArgument");
        assertTrue(header.body().contains("x-amz-rename-source"), header.body());
        setup.assertStillFenced(fence, key, "fenced by 70", 70);
    }

    /**
     * The JS SDK v3's {@code getSignedUrl} hoists {@code x-amz-*} headers into the query in lower case
     * ({@code x-amz-meta-*}, {@code x-amz-checksum-crc32}, {@code x-amz-sdk-checksum-algorithm}): known parameters of
     * PutObject, which the store is sent as the headers they are. A query {@code x-amz-meta-fencing-token} is not
     * the token without {@code token-from-metadata}: refused, never forwarded unread.
     */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void parametersAPresignerHoistsAreTheHeadersTheyStandFor(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "hoisted/" + fence;
        String body = "presigned by the JS SDK";
        java.util.zip.CRC32 crc = new java.util.zip.CRC32();
        crc.update(body.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        String crc32 = java.util.Base64.getEncoder().encodeToString(java.nio.ByteBuffer.allocate(4)
                .putInt((int) crc.getValue()).array());
        Http.Response r = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).presigned().query("x-id", "PutObject")
                .query("x-amz-sdk-checksum-algorithm", "CRC32").query("x-amz-checksum-crc32", crc32)
                .query("x-amz-meta-owner", "js").header("Fencing-Token", "7").body(body).send(setup.port(fence));
        assertEquals(200, r.status(), r.body());
        setup.assertStored(key, body, 7);
        assertEquals("js", setup.direct().headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("owner"));
        Http.Response token = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key).presigned()
                .query("x-amz-meta-fencing-token", "8").body("token in the query").send(setup.port(fence));
        assertS3Error(token, 400, "InvalidArgument");
        assertTrue(token.body().contains("token-from-metadata"), token.body());
        setup.assertStillFenced(fence, key, body, 7);
    }

    /** What the table forwards as reads: object sub-resource reads and bucket reads. */
    @ParameterizedTest(name = "{0}, {1}")
    @MethodSource(STORES_AND_CLASSES)
    void readsOfSubResourcesAreForwarded(Store store, Fence fence) throws Exception {
        Setup setup = matrix.setup(store);
        String key = "reads/" + fence;
        setup.put(fence, key, 3, "read me");
        Http.Response acl = new S3Fixture.Raw("GET", "/" + BUCKET + "/" + key).query("acl", "").send(setup.port(fence));
        assertEquals(200, acl.status(), acl.body());
        assertTrue(acl.body().contains("AccessControlPolicy"), acl.body());
        Http.Response headAcl = new S3Fixture.Raw("HEAD", "/" + BUCKET + "/" + key).query("acl", "")
                .send(setup.port(fence));
        assertEquals(200, headAcl.status(), headAcl.toString());
        Http.Response bucketAcl = new S3Fixture.Raw("GET", "/" + BUCKET).query("acl", "").send(setup.port(fence));
        assertEquals(200, bucketAcl.status(), bucketAcl.body());
        Http.Response location = new S3Fixture.Raw("GET", "/" + BUCKET).query("location", "").send(setup.port(fence));
        assertEquals(200, location.status(), location.body());
        assertEquals(1, setup.client(fence).listObjectsV2(b -> b.bucket(BUCKET).prefix(key)).keyCount());
        assertThrows(NoSuchKeyException.class, () -> setup.client(fence).getObject(b -> b.bucket(BUCKET)
                .key("reads/none")));
    }

    @Test
    void theSdkStillWritesThroughTheTable() {
        Setup setup = matrix.setup(Store.FILESYSTEM);
        for (Fence fence : Fence.values()) {
            String key = "sdk/" + fence;
            setup.put(fence, key, 2, "two");
            setup.assertStillFenced(fence, key, "two", 2);
        }
    }
}
