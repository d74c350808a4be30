package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.CompletedPart;
import software.amazon.awssdk.services.s3.model.Delete;
import software.amazon.awssdk.services.s3.model.DeleteObjectsResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectIdentifier;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A policy's configuration holds on every part of a request, whatever the mode: a write forwarded unfenced
 * (observe) leaves no token the policy's rules never judged (a multipart upload's record, an unsigned token), so a
 * switch to enforce starts from what enforce would have kept. One s3proxy; an enforcing atomic proxy in front of it,
 * an observing atomic one and an observing serialized one beside it. After each request the object's record is read
 * straight from s3proxy and the serialized proxy's store is read.
 */
class S3PolicyAcrossPartsIT {
    private static final String BUCKET = "parts";

    private static S3Fixture fixture;
    private static ProxyFixture observing;
    private static ProxyFixture observingSerialized;
    private static S3Client direct;
    private static S3Client enforced;
    private static S3Client observed;
    /** Two buckets, each with a policy and clients of its own, in front of the same store. */
    private static ProxyFixture twoBuckets;

    private static final String TWO_BUCKETS = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: bucket-a
                match: {path: "/bucket-a/{path...}"}
                scope: s3
                backend:
                  type: s3
                  endpoint: http://127.0.0.1:${S3PORT}
                  access-key: upstream-key
                  secret-key: upstream-secret
                  auth: sigv4
                  clients: [{access-key: app-key, secret-key: app-secret}]
              - name: bucket-b
                match: {path: "/bucket-b/{path...}"}
                scope: s3
                backend:
                  type: s3
                  endpoint: http://127.0.0.1:${S3PORT}
                  access-key: upstream-key
                  secret-key: upstream-secret
                  auth: sigv4
                  clients: [{access-key: b-key, secret-key: b-secret}]
            """;

    @BeforeAll
    static void start() throws Exception {
        Path dir = Files.createTempDirectory("stockade-s3-parts");
        fixture = S3Fixture.start(dir.resolve("journal"), Map.of("MAX_ADVANCE", "10"));
        observing = fixture.anotherProxy(dir.resolve("journal-observe"), Map.of("MAX_ADVANCE", "10",
                "FENCE_MODE", "observe"));
        Map<String, String> serialized = new HashMap<>(Map.of("MAX_ADVANCE", "10", "FENCE_MODE", "observe",
                "CONDITIONAL_WRITES", "false", "S3_TIMEOUT", "1s"));
        observingSerialized = fixture.anotherProxy(dir.resolve("journal-observe-serialized"), serialized);
        direct = S3Fixture.clientWithRequiredChecksumsOnly(fixture.directUri(), S3Fixture.UPSTREAM_KEY,
                S3Fixture.UPSTREAM_SECRET);
        direct.createBucket(b -> b.bucket(BUCKET));
        enforced = fixture.client();
        observed = S3Fixture.client(observing.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET);
        twoBuckets = ProxyFixture.start(dir.resolve("journal-two-buckets"), TWO_BUCKETS,
                Map.of("S3PORT", Integer.toString(fixture.s3proxy.getPort())));
    }

    @AfterAll
    static void stop() throws Exception {
        if (twoBuckets != null) {
            twoBuckets.close();
        }
        if (observingSerialized != null) {
            observingSerialized.close();
        }
        if (observing != null) {
            observing.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    /** The record of the highest token the atomic class keeps in the object, read straight from s3proxy. */
    private static String record(String key) {
        return direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("stockade-fence");
    }

    /**
     * Observe forwards a multipart upload as it forwards a PutObject: it leaves no token in the object. On main the
     * unfenced CreateMultipartUpload wrote the request's token into the upload's metadata, so the completed object
     * carried a token observe never judged (1000, beyond max-advance 10 over 5): the atomic class's fence jumped, and
     * the honest holder's next write through the enforcing proxy was refused.
     */
    @Test
    void anObservedMultipartUploadLeavesNoTokenInTheObject() {
        String key = "observed-mpu";
        enforced.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(S3Fixture.token(5)),
                RequestBody.fromString("holder-5"));
        assertEquals("5", record(key));

        String upload = observed.createMultipartUpload(b -> b.bucket(BUCKET).key(key)
                .overrideConfiguration(S3Fixture.token(1000))).uploadId();
        String etag = observed.uploadPart(b -> b.bucket(BUCKET).key(key).uploadId(upload).partNumber(1)
                .overrideConfiguration(S3Fixture.token(1000)), RequestBody.fromString("far")).eTag();
        observed.completeMultipartUpload(b -> b.bucket(BUCKET).key(key).uploadId(upload)
                .overrideConfiguration(S3Fixture.token(1000))
                .multipartUpload(m -> m.parts(CompletedPart.builder().partNumber(1).eTag(etag).build())));
        assertEquals("far", direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());
        // as after an observed PutObject (docs/s3.md: observe forwards writes as they are)
        assertNull(record(key), "an observed upload left a token in the object's record");

        enforced.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(S3Fixture.token(6)),
                RequestBody.fromString("holder-6"));
        assertEquals("6", record(key));
    }

    /**
     * {@code signed-token} holds in observe mode too: a token outside the request's signature (anyone holding the
     * signed request or a presigned URL can set it) is forwarded, counted as what enforce would refuse, and raises
     * nothing. On main, observe judged it like a signed one and raised the serialized proxy's fence to it.
     */
    @Test
    void anUnsignedTokenRaisesNothingInObserveMode() throws Exception {
        String key = "unsigned";
        Http.Response r = new S3Fixture.Raw("PUT", "/" + BUCKET + "/" + key)
                .unsignedHeader("Fencing-Token", "1000").body("forged")
                .send(observingSerialized.server().port());
        assertEquals(200, r.status(), r.body());
        assertEquals("forged", direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());
        assertEquals(Optional.empty(), observingSerialized.server().store().get("s3/" + BUCKET + "/" + key),
                "an unsigned token moved the fence");
    }

    /**
     * A zombie's DeleteObjects, refused key by key by the atomic class (a 200 whose entry for the key says
     * PreconditionFailed, as S3 answers), is counted as the stale write it is, as the serialized class counts it
     * (412): {@code stockade_stale_rejections_total} is what the StockadeStaleWriter alert reads. On main it was
     * counted {@code accepted}, the stale writer unseen.
     */
    @Test
    void aDeleteObjectsKeyRefusedAsStaleIsCountedStale() throws Exception {
        String key = "zombie-deletes";
        enforced.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(S3Fixture.token(10)),
                RequestBody.fromString("holder"));
        // only this test sends a stale token to the enforcing proxy
        double stale = fixture.proxy.server().metrics().count("s3", Outcome.STALE);
        DeleteObjectsResponse r = enforced.deleteObjects(d -> d.bucket(BUCKET).delete(Delete.builder()
                .objects(ObjectIdentifier.builder().key(key).build()).build())
                .overrideConfiguration(S3Fixture.token(4)));
        assertEquals(1, r.errors().size(), r.toString());
        assertEquals("PreconditionFailed", r.errors().getFirst().code(), r.toString());
        // one decision per request: counted stale, it is not counted accepted
        assertEquals(stale + 1, fixture.proxy.counted("s3", Outcome.STALE, stale + 1));
        assertEquals("holder", direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String());
        assertEquals("10", record(key));
    }

    /**
     * A copy reads its source with the proxy's credentials, so the source is a resource of the request too: a
     * client of bucket-a's policy may not copy (CopyObject, UploadPartCopy) an object of bucket-b, whose policy
     * takes other clients. On main the copy was made and bucket-b's object read back through bucket-a.
     */
    @Test
    void aCopyReadsOnlyWhatTheRequestsPolicyServes() {
        direct.createBucket(b -> b.bucket("bucket-a"));
        direct.createBucket(b -> b.bucket("bucket-b"));
        direct.putObject(b -> b.bucket("bucket-b").key("secret"), RequestBody.fromString("b's only"));
        direct.putObject(b -> b.bucket("bucket-a").key("own"), RequestBody.fromString("a's own"));
        S3Client a = S3Fixture.client(twoBuckets.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET);

        S3Exception copy = assertThrows(S3Exception.class, () -> a.copyObject(b -> b.sourceBucket("bucket-b")
                .sourceKey("secret").destinationBucket("bucket-a").destinationKey("stolen")
                .overrideConfiguration(S3Fixture.token(1))));
        assertEquals(403, copy.statusCode(), copy.getMessage());
        assertTrue(copy.getMessage().contains("bucket-b"), copy.getMessage());
        // nothing stored, and so no fence (the atomic class keeps it in the object)
        assertThrows(NoSuchKeyException.class, () -> direct.headObject(b -> b.bucket("bucket-a").key("stolen")));

        String upload = a.createMultipartUpload(b -> b.bucket("bucket-a").key("stolen-part")
                .overrideConfiguration(S3Fixture.token(1))).uploadId();
        assertEquals(403, assertThrows(S3Exception.class, () -> a.uploadPartCopy(b -> b.sourceBucket("bucket-b")
                .sourceKey("secret").destinationBucket("bucket-a").destinationKey("stolen-part").uploadId(upload)
                .partNumber(1))).statusCode());
        assertEquals(List.of(), a.listParts(b -> b.bucket("bucket-a").key("stolen-part").uploadId(upload)).parts());

        // a copy within the policy's own bucket is made
        a.copyObject(b -> b.sourceBucket("bucket-a").sourceKey("own").destinationBucket("bucket-a")
                .destinationKey("copied").overrideConfiguration(S3Fixture.token(2)));
        assertEquals("a's own", direct.getObjectAsBytes(b -> b.bucket("bucket-a").key("copied")).asUtf8String());
    }
}
