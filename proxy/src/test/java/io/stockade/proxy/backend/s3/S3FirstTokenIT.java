package io.stockade.proxy.backend.s3;

import java.nio.file.Path;
import java.util.Map;

import io.stockade.proxy.S3Fixture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * Issue 46, item 5, in the s3 atomic class, whose fence is each object's metadata (the proxy's store holds
 * nothing for it): a forged first token on a new object is refused by the same rule as everywhere
 * ({@code Policy.Fence.tooFar}, first-token-max, by default max-advance), and the honest holder writes. On main the
 * forged 9223372036854775807 was stored in the object's metadata and every honest token refused from then on.
 */
class S3FirstTokenIT {
    @TempDir
    Path dir;

    @Test
    void aForgedFirstTokenCannotTakeANewObject() throws Exception {
        try (S3Fixture fixture = S3Fixture.start(dir.resolve("j"), Map.of("MAX_ADVANCE", "100"));
             S3Client direct = fixture.direct();
             S3Client client = fixture.client()) {
            direct.createBucket(b -> b.bucket("first"));
            S3Exception forged = assertThrows(S3Exception.class, () -> client.putObject(b -> b.bucket("first")
                    .key("new").overrideConfiguration(S3Fixture.token(Long.MAX_VALUE)),
                    RequestBody.fromString("evil")));
            assertEquals(422, forged.statusCode(), forged.toString());
            assertThrows(NoSuchKeyException.class, () -> direct.getObjectAsBytes(b -> b.bucket("first").key("new")),
                    "the refused write reached the store");

            client.putObject(b -> b.bucket("first").key("new").overrideConfiguration(S3Fixture.token(5)),
                    RequestBody.fromString("v5"));
            assertEquals("v5", direct.getObjectAsBytes(b -> b.bucket("first").key("new")).asUtf8String());
            assertEquals("5", direct.headObject(b -> b.bucket("first").key("new")).metadata().get("fencing-token"));
        }
    }
}
