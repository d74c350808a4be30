package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/s3.md's table of what is fenced is made from the tables the code runs ({@link S3Table#ROWS}, and
 * {@link S3Planner#fencing} for each operation), so the two cannot drift: this test makes the table again and
 * compares it with the block between {@value #BEGIN} and {@value #END}. Run with {@code -Dstockade.docs.write=true}
 * to write the block it made.
 */
class S3FencingTableDocTest {
    static final String BEGIN = "<!-- fencing-table: made by S3FencingTableDocTest from S3Table and S3Planner -->";
    static final String END = "<!-- end of fencing-table -->";

    @Test
    void docsShowWhatTheCodeFences() throws IOException {
        Path doc = Path.of("..", "docs", "s3.md");
        String text = Files.readString(doc);
        int begin = text.indexOf(BEGIN);
        int end = text.indexOf(END);
        assertTrue(begin >= 0 && end > begin, "docs/s3.md has no block " + BEGIN + " ... " + END);
        String made = table();
        String documented = text.substring(begin + BEGIN.length(), end);
        if (!made.equals(documented) && Boolean.getBoolean("stockade.docs.write")) {
            Files.writeString(doc, text.substring(0, begin + BEGIN.length()) + made + text.substring(end));
            return;
        }
        assertEquals(made, documented, "docs/s3.md's fencing table differs from the code's; run this test with "
                + "-Dstockade.docs.write=true to write it");
    }

    /** Every operation the table classifies fences as its kind says; no operation is left out. */
    @Test
    void everyOperationOfTheTableIsPlanned() {
        Set<S3Request.Operation> inRows = S3Table.ROWS.stream().map(S3Table.Row::operation)
                .filter(java.util.Objects::nonNull).collect(Collectors.toSet());
        for (S3Request.Operation op : S3Request.Operation.values()) {
            if (op != S3Request.Operation.COPY_OBJECT && op != S3Request.Operation.PREFLIGHT) {
                assertTrue(inRows.contains(op), op + " has no row");
            }
            assertEquals(S3Planner.fencing(op) != S3Planner.Kind.READ
                    && S3Planner.fencing(op) != S3Planner.Kind.BUCKET_WRITE, op.fenced(), op.toString());
        }
    }

    /** The table: one line per operation, in the order of the kinds, then of the operations. */
    static String table() {
        Map<S3Request.Operation, List<S3Table.Row>> rows = new EnumMap<>(S3Request.Operation.class);
        for (S3Table.Row row : S3Table.ROWS) {
            if (row.operation() != null) {
                rows.computeIfAbsent(row.operation(), o -> new ArrayList<>()).add(row);
            }
        }
        StringBuilder out = new StringBuilder("\n\n| operation | requests | how the plan fences it |\n|---|---|---|\n");
        for (S3Planner.Kind kind : S3Planner.Kind.values()) {
            for (S3Request.Operation op : S3Request.Operation.values()) {
                if (S3Planner.fencing(op) != kind) {
                    continue;
                }
                out.append("| ").append(name(op)).append(" | ").append(requests(op, rows.getOrDefault(op,
                        List.of()))).append(" | ").append(how(kind)).append(" |\n");
            }
        }
        return out.append('\n').toString();
    }

    private static String name(S3Request.Operation op) {
        return switch (op) {
            case LIST_BUCKETS -> "ListBuckets";
            case BUCKET_READ -> "HeadBucket, ListMultipartUploads, the bucket's configuration";
            case LIST_OBJECTS -> "ListObjects, ListObjectsV2";
            case LIST_OBJECT_VERSIONS -> "ListObjectVersions";
            case BUCKET_WRITE -> "CreateBucket, the bucket's configuration";
            case DELETE_BUCKET -> "DeleteBucket";
            case DELETE_OBJECTS -> "DeleteObjects";
            case POST_OBJECT -> "POST Object (a browser form)";
            case GET_OBJECT -> "GetObject";
            case HEAD_OBJECT -> "HeadObject";
            case OBJECT_READ -> "the object's sub-resources";
            case PUT_OBJECT -> "PutObject";
            case COPY_OBJECT -> "CopyObject";
            case DELETE_OBJECT -> "DeleteObject";
            case OBJECT_SUBRESOURCE_WRITE -> "PutObjectAcl, PutObjectTagging, DeleteObjectTagging";
            case CREATE_MULTIPART -> "CreateMultipartUpload";
            case UPLOAD_PART -> "UploadPart, UploadPartCopy";
            case COMPLETE_MULTIPART -> "CompleteMultipartUpload";
            case ABORT_MULTIPART -> "AbortMultipartUpload";
            case LIST_PARTS -> "ListParts";
            case PREFLIGHT -> "CORS preflight";
        };
    }

    /** The requests of an operation: each method and target, with the parameters that name it. */
    private static String requests(S3Request.Operation op, List<S3Table.Row> rows) {
        if (op == S3Request.Operation.COPY_OBJECT) {
            return "PUT object with `x-amz-copy-source`";
        }
        if (op == S3Request.Operation.PREFLIGHT) {
            return "OPTIONS, any target";
        }
        Map<String, Set<String>> byTarget = new java.util.LinkedHashMap<>();
        for (S3Table.Row row : rows) {
            String query = row.required().isEmpty() ? "" : " `" + String.join("&", new TreeSet<>(row.required()))
                    + "`";
            byTarget.computeIfAbsent(row.target().name().toLowerCase(java.util.Locale.ROOT) + query,
                    t -> new TreeSet<>()).add(row.method());
        }
        if (byTarget.size() > 3) {
            Set<String> methods = byTarget.values().stream().flatMap(Set::stream)
                    .collect(Collectors.toCollection(TreeSet::new));
            String target = rows.getFirst().target().name().toLowerCase(java.util.Locale.ROOT);
            return String.join(", ", methods) + " " + target + ", " + byTarget.size() + " spellings (the closed "
                    + "table above)";
        }
        return byTarget.entrySet().stream().map(e -> String.join(", ", e.getValue()) + " " + e.getKey())
                .collect(Collectors.joining("; "));
    }

    private static String how(S3Planner.Kind kind) {
        return switch (kind) {
            case READ -> "forwarded without a token";
            case BUCKET_WRITE -> "forwarded without a token when the policy names it in `bucket-writes`, else 501";
            case OBJECT_WRITE -> "a fenced write of the object's scope";
            case UPLOAD_STEP -> "a fenced write of the object's scope with the upload's token, sent or taken from "
                    + "its upload ID (judged as a continuation: an equal token passes)";
            case EVERY_KEY -> "a fenced write of every key's scope the body names";
        };
    }
}
