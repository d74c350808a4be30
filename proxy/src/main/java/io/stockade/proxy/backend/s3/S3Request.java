package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.stockade.policy.RequestTarget;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * One client request read as S3: the bucket and key (path-style {@code /bucket/key}, or virtual-host-style
 * {@code bucket.<virtual-host>/key}), the decoded query, and the operation its row of the closed table
 * ({@link S3Table}) names.
 *
 * @param method      the HTTP method, exactly as the client spelled it (S3 methods are upper case)
 * @param bucket      the bucket, or null (ListBuckets)
 * @param key         the object key, decoded, or null (a bucket or service operation)
 * @param decodedPath the request path, percent-decoded, as the client signed it
 * @param query       the decoded query parameters in request order
 * @param operation   what the request does; null when the table refuses it
 * @param subresource the sub-resource that names the operation ({@code acl}, {@code lifecycle}...), or null
 * @param hoisted     the {@code x-amz-*} headers a presigner moved into the query (lower-case names)
 * @param refusal     null, or why the table refuses the request (answered once the request is authenticated)
 */
record S3Request(String method, @Nullable String bucket, @Nullable String key, String decodedPath,
                 List<Map.Entry<String, String>> query, @Nullable Operation operation, @Nullable String subresource,
                 List<Map.Entry<String, String>> hoisted, S3Table.@Nullable Refusal refusal) {

    /** The most bytes of UTF-8 an S3 key may have. */
    static final int MAX_KEY_BYTES = 1024;

    /** What an S3 request does: one per row (or group of rows) of the closed table. */
    enum Operation {
        /** ListBuckets. */
        LIST_BUCKETS,
        /** A read of a bucket: HeadBucket, a bucket sub-resource's GET, ListMultipartUploads. */
        BUCKET_READ,
        /** ListObjects (v1) or ListObjectsV2: tombstones are hidden from it (atomic class). */
        LIST_OBJECTS,
        /** ListObjectVersions: tombstone versions are hidden from it (atomic class). */
        LIST_OBJECT_VERSIONS,
        /** CreateBucket, or a PUT, DELETE or POST of a bucket sub-resource: forwarded when the policy names it. */
        BUCKET_WRITE,
        /** DeleteBucket: forwarded when the policy names it; refused with the reason when only tombstones are left
         * in the bucket (atomic class). */
        DELETE_BUCKET,
        DELETE_OBJECTS,
        /** POST Object: a browser-form upload (multipart/form-data, a signed policy document) to a bucket. */
        POST_OBJECT,
        GET_OBJECT, HEAD_OBJECT,
        /** A read of an object's sub-resource: its ACL, tags, attributes, retention, legal hold, torrent. */
        OBJECT_READ,
        PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT,
        /** PutObjectAcl, PutObjectTagging, DeleteObjectTagging: fenced on the key's scope (serialized class). */
        OBJECT_SUBRESOURCE_WRITE,
        CREATE_MULTIPART, UPLOAD_PART, COMPLETE_MULTIPART, ABORT_MULTIPART, LIST_PARTS,
        /** An OPTIONS request (a browser's CORS preflight): never signed, never fenced. */
        PREFLIGHT;

        /** Whether the operation is a fenced write, and so carries a token ({@link S3Planner#fencing}). */
        boolean fenced() {
            return switch (S3Planner.fencing(this)) {
                case OBJECT_WRITE, UPLOAD_STEP, EVERY_KEY -> true;
                case READ, BUCKET_WRITE -> false;
            };
        }
    }

    /**
     * Reads the request.
     *
     * @param target      the request's target, parsed once by the pipeline
     * @param virtualHost the host under which buckets are addressed as sub-domains, or null
     * @throws IllegalArgumentException when the path or query has a malformed escape
     */
    static S3Request of(ServerRequest req, RequestTarget target, @Nullable String virtualHost) {
        String method = req.prologue().method().text();
        // The bucket and key come from the target's one canonical form, like the scope: never from the raw path.
        String decodedPath = "/" + String.join("/", target.segments())
                + (target.trailingSlash() && !target.segments().isEmpty() ? "/" : "");
        List<Map.Entry<String, String>> query = parseQuery(req.query().rawValue());
        String bucket = null;
        String key = null;
        String hostBucket = virtualHost == null ? null : hostBucket(req.headers().first(HeaderNames.HOST)
                .orElse(""), virtualHost);
        String rest = decodedPath.startsWith("/") ? decodedPath.substring(1) : decodedPath;
        if (hostBucket != null) {
            bucket = hostBucket;
            key = rest.isEmpty() ? null : rest;
        } else if (!rest.isEmpty()) {
            int slash = rest.indexOf('/');
            bucket = slash < 0 ? rest : rest.substring(0, slash);
            key = slash < 0 || slash == rest.length() - 1 ? null : rest.substring(slash + 1);
        }
        boolean copy = req.headers().contains(HeaderNames.create("x-amz-copy-source"));
        S3Table.Target addressed = bucket == null ? S3Table.Target.SERVICE
                : key == null ? S3Table.Target.BUCKET : S3Table.Target.OBJECT;
        S3Table.Classified classified = S3Table.classify(method, addressed, query,
                req.headers().first(HeaderNames.CONTENT_TYPE).orElse(null), copy);
        Operation operation = classified.operation();
        if (operation == Operation.PUT_OBJECT && copy) {
            operation = Operation.COPY_OBJECT;
        }
        String subresource = classified.row() == null ? null : classified.row().subresource();
        return new S3Request(method, bucket, key, decodedPath, query, classified.refusal() == null ? operation : null,
                subresource, classified.hoisted(), classified.refusal());
    }

    /**
     * The operation of a request the closed table admitted ({@code refusal} null, so its row names one): never null.
     */
    Operation admittedOperation() {
        return Objects.requireNonNull(operation, "the table admitted the request: its row names the operation");
    }

    /** The bucket of a request the table admitted on a bucket or an object (every operation but ListBuckets). */
    String namedBucket() {
        return Objects.requireNonNull(bucket, "the table admitted the request on a bucket or an object");
    }

    /** The key of a request the table admitted on an object. */
    String namedKey() {
        return Objects.requireNonNull(key, "the table admitted the request on an object");
    }

    static @Nullable String hostBucket(String host, String virtualHost) {
        String name = host.toLowerCase(Locale.ROOT);
        int colon = name.lastIndexOf(':');
        if (colon > 0 && name.indexOf(']') < colon) {
            name = name.substring(0, colon);
        }
        String suffix = "." + virtualHost.toLowerCase(Locale.ROOT);
        return name.endsWith(suffix) && name.length() > suffix.length()
                ? name.substring(0, name.length() - suffix.length()) : null;
    }

    static boolean has(List<Map.Entry<String, String>> query, String name) {
        return query.stream().anyMatch(e -> e.getKey().equals(name));
    }

    Optional<String> param(String name) {
        return query.stream().filter(e -> e.getKey().equals(name)).map(Map.Entry::getValue).findFirst();
    }

    /** This request with the value of its {@code uploadId} parameter replaced (the upstream's own ID). */
    S3Request withUploadId(String upstreamId) {
        List<Map.Entry<String, String>> replaced = new ArrayList<>(query.size());
        for (Map.Entry<String, String> e : query) {
            replaced.add(e.getKey().equals("uploadId") ? Map.entry("uploadId", upstreamId) : e);
        }
        return new S3Request(method, bucket, key, decodedPath, List.copyOf(replaced), operation, subresource, hoisted,
                refusal);
    }

    /** Whether the request reads and changes nothing (GET, HEAD): the only kind an unsigned request may be. */
    boolean read() {
        return method.equals("GET") || method.equals("HEAD");
    }

    /** Whether this is a presigned request (SigV4 in the query). */
    boolean presigned() {
        return has(query, "X-Amz-Signature");
    }

    /**
     * What goes upstream of the query: without the parameters every request may carry (the SDKs' operation hint
     * {@code x-id}, the presigning parameters: the proxy's request is its own, signed in its headers) and without the
     * headers a presigner hoisted into it (those go upstream as the headers they are).
     */
    List<Map.Entry<String, String>> upstreamQuery() {
        return query.stream().filter(e -> !S3Table.UNIVERSAL.contains(e.getKey()))
                .filter(e -> hoisted.stream().noneMatch(h -> h.getKey().equals(e.getKey()))).toList();
    }

    /**
     * The name of the bucket write this is ({@code bucket-writes}: {@code create}, {@code delete} or the
     * sub-resource), or null when it is none.
     */
    @Nullable String bucketWrite() {
        return operation == Operation.DELETE_BUCKET ? "delete" : operation != Operation.BUCKET_WRITE ? null
                : subresource == null ? "create" : subresource;
    }

    /** Why the key is refused, if it is. */
    Optional<String> keyProblem() {
        if (key != null && key.getBytes(StandardCharsets.UTF_8).length > MAX_KEY_BYTES) {
            return Optional.of("the key is " + key.getBytes(StandardCharsets.UTF_8).length
                    + " bytes of UTF-8; S3 allows at most " + MAX_KEY_BYTES);
        }
        return Optional.empty();
    }

    /** The resource for error answers: /bucket/key. */
    String resource() {
        return "/" + (bucket == null ? "" : bucket) + (key == null ? "" : "/" + key);
    }

    static List<Map.Entry<String, String>> parseQuery(@Nullable String raw) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String pair : raw.split("&", -1)) {
            if (pair.isEmpty()) {
                continue;
            }
            int eq = pair.indexOf('=');
            String name = SigV4.decode(eq < 0 ? pair : pair.substring(0, eq));
            String value = eq < 0 ? "" : SigV4.decode(pair.substring(eq + 1));
            out.add(Map.entry(name, value));
        }
        return out;
    }
}
