package io.stockade.proxy.backend.s3;

import java.util.List;
import java.util.Map;

import io.stockade.proxy.backend.s3.S3Request.Operation;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The query of a request: as SigV4 signs it, and what of it goes upstream (S3 round four, item 3). */
class S3QueryTest {

    @Test
    void theCanonicalQueryIsSortedByNameThenValueAsAwsSortsIt() {
        // boto3's select_object_content: before, sorted as "name=value" strings, "select-type=2" came first (403)
        assertEquals("select=&select-type=2", SigV4.canonicalQuery(List.of(Map.entry("select", ""),
                Map.entry("select-type", "2"))));
        assertEquals("select=&select-type=2", SigV4.canonicalQuery(List.of(Map.entry("select-type", "2"),
                Map.entry("select", ""))));
        // one name twice: by value; names compared encoded, by code point
        assertEquals("a=1&a=2&a%20b=x&a-b=0&b=", SigV4.canonicalQuery(List.of(Map.entry("b", ""),
                Map.entry("a", "2"), Map.entry("a b", "x"), Map.entry("a-b", "0"), Map.entry("a", "1"))));
        assertEquals("uploadId=u%2Bv&x-id=UploadPart", SigV4.canonicalQuery(List.of(Map.entry("x-id",
                "UploadPart"), Map.entry("uploadId", "u+v"))));
    }

    @Test
    void noParameterEveryRequestMayCarryGoesUpstream() {
        S3Request put = new S3Request("PUT", "b", "k", "/b/k", List.of(Map.entry("x-id", "PutObject"),
                Map.entry("X-Amz-Algorithm", "AWS4-HMAC-SHA256"), Map.entry("X-Amz-Signature", "00"),
                Map.entry("x-amz-meta-owner", "js")), Operation.PUT_OBJECT, null,
                List.of(Map.entry("x-amz-meta-owner", "js")), null);
        assertEquals(List.of(), put.upstreamQuery());
        S3Request part = new S3Request("PUT", "b", "k", "/b/k", List.of(Map.entry("partNumber", "1"),
                Map.entry("uploadId", "u"), Map.entry("x-id", "UploadPart")), Operation.UPLOAD_PART, null, List.of(),
                null);
        assertEquals(List.of(Map.entry("partNumber", "1"), Map.entry("uploadId", "u")), part.upstreamQuery());
    }
}
