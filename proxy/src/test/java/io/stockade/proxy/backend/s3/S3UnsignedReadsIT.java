package io.stockade.proxy.backend.s3;

import java.nio.file.Path;
import java.util.Map;

import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.testing.RawHttp;
import io.stockade.testing.Http;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.BucketCannedACL;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.ObjectCannedACL;

import static io.stockade.proxy.S3Fixture.token;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * S3 as real tools use it: unsigned requests with {@code unsigned-reads: forward}. An unsigned GET or HEAD goes to the
 * store
 * without the proxy's signature, so the store's ACLs answer it (a public object is served, a private one is 403,
 * what does not exist is 404); unsigned writes are refused by the proxy. s3proxy is read directly to check that
 * nothing was written.
 */
class S3UnsignedReadsIT {
    @TempDir
    static Path journal;
    private static S3Fixture fixture;
    private static S3Client s3;
    private static S3Client direct;
    private static int port;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal, Map.of("UNSIGNED_READS", "forward"));
        s3 = fixture.client();
        direct = fixture.direct();
        port = fixture.proxy.server().port();
        direct.createBucket(b -> b.bucket("public").acl(BucketCannedACL.PUBLIC_READ));
        direct.createBucket(b -> b.bucket("private"));
        s3.putObject(b -> b.bucket("public").key("open.txt").acl(ObjectCannedACL.PUBLIC_READ)
                .overrideConfiguration(token(1)), RequestBody.fromString("for everyone"));
        s3.putObject(b -> b.bucket("public").key("closed.txt").overrideConfiguration(token(1)),
                RequestBody.fromString("for the owner"));
        s3.putObject(b -> b.bucket("private").key("k").overrideConfiguration(token(1)),
                RequestBody.fromString("private"));
    }

    @AfterAll
    static void stop() throws Exception {
        fixture.close();
    }

    private static Http.Response unsigned(String method, String target, String extraHeaders, String body)
            throws Exception {
        return RawHttp.send(port, method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1:" + port + "\r\n"
                + extraHeaders + (body == null ? "" : "Content-Length: " + body.length() + "\r\n")
                + "Connection: close\r\n\r\n" + (body == null ? "" : body));
    }

    private static void assertS3Error(Http.Response r, int status, String code) {
        assertEquals(status, r.status(), r.body());
        assertTrue(r.body().contains("<Code>" + code + "</Code>"), r.body());
    }

    @Test
    void thePublicObjectIsServedAndTheStoreJudgesTheRest() throws Exception {
        Http.Response open = unsigned("GET", "/public/open.txt", "", null);
        assertEquals(200, open.status(), open.body());
        assertEquals("for everyone", open.body());
        assertEquals(200, unsigned("HEAD", "/public/open.txt", "", null).status());
        // not signed by the proxy: the store refuses what is not public, and says what does not exist
        assertS3Error(unsigned("GET", "/public/closed.txt", "", null), 403, "AccessDenied");
        assertS3Error(unsigned("GET", "/private/k", "", null), 403, "AccessDenied");
        assertS3Error(unsigned("GET", "/public/missing.txt", "", null), 404, "NoSuchKey");
        Http.Response noBucket = unsigned("GET", "/no-such-bucket/k", "", null);
        Http.Response noBucketStraight = RawHttp.send(fixture.s3proxy.getPort(), "GET /no-such-bucket/k HTTP/1.1\r\n"
                + "Host: x\r\nConnection: close\r\n\r\n");
        assertEquals(noBucketStraight.status(), noBucket.status(), noBucket.body());
        assertS3Error(noBucket, 404, "NoSuchBucket");
        Http.Response listing = unsigned("GET", "/public?list-type=2", "", null);
        assertEquals(200, listing.status(), listing.body());
        assertTrue(listing.body().contains("<Key>open.txt</Key>"), listing.body());
        assertS3Error(unsigned("GET", "/private?list-type=2", "", null), 403, "AccessDenied");
    }

    @Test
    void aDeletedPublicObjectIsMissingAndHiddenFromTheListing() throws Exception {
        s3.putObject(b -> b.bucket("public").key("soon-gone.txt").acl(ObjectCannedACL.PUBLIC_READ)
                .overrideConfiguration(token(1)), RequestBody.fromString("x"));
        s3.deleteObject(b -> b.bucket("public").key("soon-gone.txt").overrideConfiguration(token(2)));
        assertS3Error(unsigned("GET", "/public/soon-gone.txt", "", null), 404, "NoSuchKey");
        Http.Response listing = unsigned("GET", "/public?list-type=2", "", null);
        assertEquals(200, listing.status(), listing.body());
        assertFalse(listing.body().contains("soon-gone"), listing.body());
        assertEquals("true", direct.headObject(b -> b.bucket("public").key("soon-gone.txt")).metadata()
                .get("fencing-deleted"));
        // where an anonymous client may not list the bucket, S3 says 403 for a missing key: so does the proxy
        s3.putObject(b -> b.bucket("private").key("gone").overrideConfiguration(token(1)), RequestBody.fromString("x"));
        s3.deleteObject(b -> b.bucket("private").key("gone").overrideConfiguration(token(2)));
        assertS3Error(unsigned("GET", "/private/gone", "", null), 403, "AccessDenied");
    }

    @Test
    void unsignedWritesAreRefusedAndWriteNothing() throws Exception {
        Http.Response put = unsigned("PUT", "/public/anon.txt", "Fencing-Token: 5\r\n", "anonymous");
        assertS3Error(put, 403, "AccessDenied");
        assertTrue(put.body().contains("unsigned writes are never forwarded"), put.body());
        assertS3Error(unsigned("DELETE", "/public/open.txt", "Fencing-Token: 5\r\n", null), 403, "AccessDenied");
        assertS3Error(unsigned("PUT", "/public/open.txt?acl", "x-amz-acl: private\r\n", ""), 403, "AccessDenied");
        assertThrows(NoSuchKeyException.class, () -> direct.headObject(b -> b.bucket("public").key("anon.txt")));
        assertEquals("for everyone", direct.getObjectAsBytes(b -> b.bucket("public").key("open.txt")).asUtf8String());
        assertEquals("1", direct.headObject(b -> b.bucket("public").key("open.txt")).metadata().get("fencing-token"));
    }

    @Test
    void aCorsPreflightWithoutOriginIsAnsweredAsS3AndOneWithOriginGoesToTheStore() throws Exception {
        assertS3Error(unsigned("OPTIONS", "/public/open.txt", "", null), 400, "BadRequest");
        // with an Origin the store answers from its CORS configuration: the same answer as straight from it
        String preflight = "OPTIONS /public/open.txt HTTP/1.1\r\nHost: x\r\nOrigin: https://example.org\r\n"
                + "Access-Control-Request-Method: GET\r\nConnection: close\r\n\r\n";
        Http.Response through = RawHttp.send(port, preflight);
        Http.Response straight = RawHttp.send(fixture.s3proxy.getPort(), preflight);
        assertEquals(straight.status(), through.status(), through.body());
    }
}
