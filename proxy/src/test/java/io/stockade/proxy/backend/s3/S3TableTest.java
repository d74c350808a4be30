package io.stockade.proxy.backend.s3;

import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.s3.S3Request.Operation;
import io.stockade.proxy.backend.s3.S3Table.Target;
import io.stockade.proxy.problem.ProblemType;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The closed table on its own: what each request is read as, and that its rows and the policy's words agree. */
class S3TableTest {

    private static S3Table.Classified classify(String method, Target target, String... query) {
        List<Map.Entry<String, String>> q = new java.util.ArrayList<>();
        for (String p : query) {
            int eq = p.indexOf('=');
            q.add(eq < 0 ? Map.entry(p, "") : Map.entry(p.substring(0, eq), p.substring(eq + 1)));
        }
        return S3Table.classify(method, target, q, null, false);
    }

    @Test
    void theBucketWritesOfTheTableAreTheWordsAPolicyCanName() {
        Set<String> inTable = new TreeSet<>();
        for (S3Table.Row row : S3Table.ROWS) {
            if (row.operation() == Operation.BUCKET_WRITE) {
                inTable.add(row.subresource() == null ? "create" : row.subresource());
            } else if (row.operation() == Operation.DELETE_BUCKET) {
                inTable.add("delete");
            }
        }
        assertEquals(new TreeSet<>(BackendConfig.S3.BUCKET_WRITES), inTable);
    }

    @Test
    void noTwoRowsNameTheSameRequest() {
        Set<String> seen = new HashSet<>();
        for (S3Table.Row row : S3Table.ROWS) {
            assertTrue(seen.add(row.method() + " " + row.target() + " " + new TreeSet<>(row.required())),
                    row.toString());
            assertTrue(S3Table.METHODS.contains(row.method()), row.toString());
        }
    }

    @Test
    void requestsAreReadAsTheirRow() {
        assertEquals(Operation.PUT_OBJECT, classify("PUT", Target.OBJECT, "x-id=PutObject").operation());
        assertEquals(Operation.GET_OBJECT, classify("GET", Target.OBJECT, "response-content-type=a/b",
                "versionId=1", "X-Amz-Signature=x", "X-Amz-Date=1").operation());
        assertEquals(Operation.OBJECT_READ, classify("GET", Target.OBJECT, "acl").operation());
        assertEquals(Operation.OBJECT_READ, classify("HEAD", Target.OBJECT, "tagging", "versionId=3").operation());
        assertEquals(Operation.BUCKET_READ, classify("HEAD", Target.BUCKET, "versioning").operation());
        assertEquals(Operation.LIST_PARTS, classify("GET", Target.OBJECT, "uploadId=u", "max-parts=2").operation());
        assertEquals(Operation.UPLOAD_PART, classify("PUT", Target.OBJECT, "partNumber=1", "uploadId=u").operation());
        assertEquals(Operation.OBJECT_SUBRESOURCE_WRITE, classify("PUT", Target.OBJECT, "tagging").operation());
        assertEquals(Operation.OBJECT_SUBRESOURCE_WRITE, classify("DELETE", Target.OBJECT, "tagging").operation());
        assertEquals(Operation.LIST_OBJECTS, classify("GET", Target.BUCKET, "list-type=2", "prefix=a").operation());
        assertEquals(Operation.LIST_OBJECT_VERSIONS, classify("GET", Target.BUCKET, "versions").operation());
        assertEquals(Operation.BUCKET_READ, classify("GET", Target.BUCKET, "metrics", "id=x").operation());
        assertEquals(Operation.BUCKET_WRITE, classify("PUT", Target.BUCKET).operation());
        assertEquals("lifecycle", classify("PUT", Target.BUCKET, "lifecycle").row().subresource());
        assertEquals(Operation.DELETE_BUCKET, classify("DELETE", Target.BUCKET).operation());
        assertEquals(Operation.LIST_BUCKETS, classify("GET", Target.SERVICE, "max-buckets=3").operation());
    }

    @Test
    void whatNoRowNamesIsRefused() {
        for (S3Table.Classified c : List.of(classify("GET", Target.OBJECT, "foo"),
                classify("PUT", Target.OBJECT, "acl", "x"), classify("DELETE", Target.OBJECT, "uploads"),
                classify("PUT", Target.OBJECT, "uploadId=1"), classify("DELETE", Target.OBJECT, "acl"),
                classify("GET", Target.BUCKET, "session"), classify("PUT", Target.OBJECT, "X-Amz-Foo=1"),
                classify("PUT", Target.OBJECT, "x-amz-meta-a=b"))) {
            assertNull(c.operation(), c.toString());
            assertEquals(ProblemType.UNKNOWN_OPERATION, c.refusal().kind(), c.toString());
            assertEquals(400, c.refusal().status());
        }
        S3Table.Classified retention = classify("PUT", Target.OBJECT, "retention");
        assertEquals(501, retention.refusal().status());
        assertTrue(retention.refusal().message().contains("x-amz-object-lock-mode"), retention.toString());
        assertEquals(405, classify("PATCH", Target.OBJECT).refusal().status());
        assertEquals(405, classify("put", Target.OBJECT).refusal().status());
        assertEquals(ProblemType.BAD_PARAMETER, classify("GET", Target.OBJECT, "versionId=1", "versionId=2").refusal()
                .kind());
        assertEquals(400, classify("GET", Target.BUCKET, "list-type=1").refusal().status());
        assertEquals(400, classify("POST", Target.BUCKET).refusal().status()); // not a form
        assertEquals(Operation.POST_OBJECT, S3Table.classify("POST", Target.BUCKET, List.of(),
                "multipart/form-data; boundary=x", false).operation());
    }

    @Test
    void aPresignerMayHoistHeadersIntoTheQueryOfAPresignedUrlOnly() {
        S3Table.Classified hoisted = classify("PUT", Target.OBJECT, "x-amz-meta-owner=js", "x-amz-checksum-crc32=AA",
                "X-Amz-Signature=s");
        assertEquals(Operation.PUT_OBJECT, hoisted.operation());
        assertEquals(List.of(Map.entry("x-amz-meta-owner", "js"), Map.entry("x-amz-checksum-crc32", "AA")),
                hoisted.hoisted());
        assertTrue(S3Table.headers(Operation.PUT_OBJECT, Set.of(), hoisted.hoisted(), false).isEmpty());
        assertEquals(ProblemType.REFUSED_HEADER, S3Table.headers(Operation.PUT_OBJECT, Set.of(),
                List.of(Map.entry("x-amz-copy-source", "/b/k")), false).orElseThrow().kind());
    }

    @Test
    void aCopySourceMakesACopyAndOnlyCopiesTakeIt() {
        Set<String> copy = Set.of("x-amz-copy-source", "x-amz-copy-source-if-match");
        assertTrue(S3Table.headers(Operation.COPY_OBJECT, copy, List.of(), true).isEmpty());
        assertTrue(S3Table.headers(Operation.UPLOAD_PART, Set.of("x-amz-copy-source", "x-amz-copy-source-range"),
                List.of(), true).isEmpty());
        for (Operation op : List.of(Operation.OBJECT_SUBRESOURCE_WRITE, Operation.DELETE_OBJECT,
                Operation.CREATE_MULTIPART, Operation.COMPLETE_MULTIPART, Operation.BUCKET_WRITE,
                Operation.GET_OBJECT)) {
            S3Table.Refusal r = S3Table.headers(op, copy, List.of(), true).orElseThrow();
            assertTrue(r.message().contains("x-amz-copy-source"), r.message());
        }
        assertEquals(ProblemType.REFUSED_HEADER, S3Table.headers(Operation.PUT_OBJECT,
                Set.of("x-amz-metadata-directive"), List.of(), false).orElseThrow().kind());
        assertEquals(ProblemType.REFUSED_HEADER, S3Table.headers(Operation.UPLOAD_PART,
                Set.of("x-amz-copy-source-range"), List.of(), false).orElseThrow().kind());
    }

    @Test
    void headersOutsideTheTableAreRefused() {
        for (String name : List.of("x-amz-rename-source", "x-amz-write-offset-bytes", "x-amz-foo",
                "x-amz-meta-fencing-deleted")) {
            assertTrue(S3Table.headers(Operation.PUT_OBJECT, Set.of(name), List.of(), false).isPresent(), name);
        }
        assertTrue(S3Table.headers(Operation.DELETE_OBJECT, Set.of("x-amz-meta-a"), List.of(), false).isPresent());
        assertTrue(S3Table.headers(Operation.PUT_OBJECT, Set.of("x-amz-object-ownership"), List.of(), false)
                .isPresent());
        assertTrue(S3Table.headers(Operation.BUCKET_WRITE, Set.of("x-amz-object-ownership"), List.of(), false)
                .isEmpty());
        assertTrue(S3Table.headers(Operation.GET_OBJECT, Set.of("x-amz-te", "x-amz-checksum-mode", "x-amz-date",
                "x-amz-content-sha256", "user-agent"), List.of(), false).isEmpty());
    }
}
