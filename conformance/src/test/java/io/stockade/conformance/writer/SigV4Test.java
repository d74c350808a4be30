package io.stockade.conformance.writer;

import java.net.URI;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.util.Map;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

class SigV4Test {

    /** AWS's published example "GET Object" (Signature Version 4, header-based authentication, S3). */
    @Test
    void theAwsGetObjectExampleSignsAsPublished() {
        SigV4 sig = new SigV4("AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "us-east-1");
        Map<String, String> h = sig.sign("GET", "examplebucket.s3.amazonaws.com",
                URI.create("http://examplebucket.s3.amazonaws.com/test.txt"), new byte[0],
                Map.of("Range", "bytes=0-9"), ZonedDateTime.of(2013, 5, 24, 0, 0, 0, 0, ZoneOffset.UTC));
        assertEquals("AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20130524/us-east-1/s3/aws4_request, "
                + "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                + "Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41", h.get("Authorization"));
        assertEquals("20130524T000000Z", h.get("x-amz-date"));
        assertEquals("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", h.get("x-amz-content-sha256"));
    }

    @Test
    void theSpecKeepsASecretWithColons() {
        SigV4 s = new SigV4("ak", "se:cr/et+", "eu-west-1");
        assertEquals(s, SigV4.parse(s.spec()));
    }
}
