package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

import io.stockade.policy.RequestTarget;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

/**
 * One client request read as S3: the bucket and key (path-style {@code /bucket/key}, or virtual-host-style
 * {@code bucket.<virtual-host>/key}), the decoded query, and the operation.
 *
 * @param method      the HTTP method, upper case
 * @param bucket      the bucket, or null (ListBuckets)
 * @param key         the object key, decoded, or null (a bucket or service operation)
 * @param decodedPath the request path, percent-decoded, as the client signed it
 * @param query       the decoded query parameters in request order
 * @param operation   what the request does
 */
record S3Request(String method, String bucket, String key, String decodedPath,
                 List<Map.Entry<String, String>> query, Operation operation) {

    /** The most bytes of UTF-8 an S3 key may have. */
    static final int MAX_KEY_BYTES = 1024;
    /** Query parameters that name no sub-resource: an object request with only these is a plain object request. */
    private static final Set<String> PLAIN = Set.of("x-id", "versionId", "partNumber");

    /** What an S3 request does; the fenced ones are the writes of object data. */
    enum Operation {
        LIST_BUCKETS, BUCKET_OTHER, DELETE_OBJECTS,
        /** POST Object: a browser-form upload (multipart/form-data, a signed policy document) to a bucket. */
        POST_OBJECT,
        /** ListObjects (v1) or ListObjectsV2: tombstones are hidden from it (atomic class). */
        LIST_OBJECTS,
        /** ListObjectVersions: tombstone versions are hidden from it (atomic class). */
        LIST_OBJECT_VERSIONS,
        /** DeleteBucket: refused with the reason when only tombstones are left in the bucket (atomic class). */
        DELETE_BUCKET,
        GET_OBJECT, HEAD_OBJECT, PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT,
        CREATE_MULTIPART, UPLOAD_PART, COMPLETE_MULTIPART, ABORT_MULTIPART, OBJECT_OTHER,
        /** An OPTIONS request (a browser's CORS preflight): never signed, never fenced. */
        PREFLIGHT,
        /** A write to an object whose method or parameters name no operation the proxy knows: refused. */
        UNKNOWN_WRITE;

        /** Whether the operation changes what an object holds (and so needs a token). */
        boolean fenced() {
            return switch (this) {
                case PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT, CREATE_MULTIPART, COMPLETE_MULTIPART, DELETE_OBJECTS,
                     POST_OBJECT, UNKNOWN_WRITE ->
                        true;
                default -> false;
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
    static S3Request of(ServerRequest req, RequestTarget target, String virtualHost) {
        String method = req.prologue().method().text().toUpperCase(Locale.ROOT);
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
        Operation operation = operation(method, bucket, key, query, copy);
        if (operation == Operation.BUCKET_OTHER && method.equals("POST") && query.stream().allMatch(e ->
                e.getKey().equals("x-id")) && req.headers().first(HeaderNames.CONTENT_TYPE).map(t -> t.trim()
                .toLowerCase(Locale.ROOT).startsWith("multipart/form-data")).orElse(false)) {
            operation = Operation.POST_OBJECT;
        }
        return new S3Request(method, bucket, key, decodedPath, query, operation);
    }

    private static String hostBucket(String host, String virtualHost) {
        String name = host.toLowerCase(Locale.ROOT);
        int colon = name.lastIndexOf(':');
        if (colon > 0 && name.indexOf(']') < colon) {
            name = name.substring(0, colon);
        }
        String suffix = "." + virtualHost.toLowerCase(Locale.ROOT);
        return name.endsWith(suffix) && name.length() > suffix.length()
                ? name.substring(0, name.length() - suffix.length()) : null;
    }

    private static Operation operation(String method, String bucket, String key, List<Map.Entry<String, String>> q,
                                       boolean copy) {
        if (method.equals("OPTIONS")) {
            return Operation.PREFLIGHT;
        }
        if (bucket == null) {
            return method.equals("GET") ? Operation.LIST_BUCKETS : Operation.BUCKET_OTHER;
        }
        if (key == null) {
            return bucketOperation(method, q);
        }
        boolean plain = q.stream().allMatch(e -> PLAIN.contains(e.getKey()) || e.getKey().startsWith("response-")
                || e.getKey().startsWith("X-Amz-"));
        // Writes are classified by their exact set of parameters: a write whose parameters name no operation the
        // proxy knows is refused (UNKNOWN_WRITE), never forwarded unfenced. S3 stores ignore parameters they do
        // not know, so PUT /b/k?x=1 would otherwise be a PutObject that no fence checked.
        Set<String> keys = new java.util.TreeSet<>();
        for (Map.Entry<String, String> e : q) {
            if (!e.getKey().equals("x-id") && !e.getKey().startsWith("X-Amz-")) {
                keys.add(e.getKey());
            }
        }
        return switch (method) {
            case "GET" -> plain ? Operation.GET_OBJECT : Operation.OBJECT_OTHER;
            case "HEAD" -> plain ? Operation.HEAD_OBJECT : Operation.OBJECT_OTHER;
            case "PUT" -> keys.isEmpty() ? (copy ? Operation.COPY_OBJECT : Operation.PUT_OBJECT)
                    : keys.equals(Set.of("uploadId", "partNumber")) ? Operation.UPLOAD_PART
                    : metadataOnly(keys, Set.of("acl", "tagging", "retention", "legal-hold")) ? Operation.OBJECT_OTHER
                    : Operation.UNKNOWN_WRITE;
            case "POST" -> keys.equals(Set.of("uploads")) ? Operation.CREATE_MULTIPART
                    : keys.equals(Set.of("uploadId")) ? Operation.COMPLETE_MULTIPART
                    : metadataOnly(keys, Set.of("restore", "select")) ? Operation.OBJECT_OTHER
                    : Operation.UNKNOWN_WRITE;
            case "DELETE" -> keys.equals(Set.of("uploadId")) ? Operation.ABORT_MULTIPART
                    : keys.isEmpty() || keys.equals(Set.of("versionId")) ? Operation.DELETE_OBJECT
                    : metadataOnly(keys, Set.of("tagging")) ? Operation.OBJECT_OTHER
                    : Operation.UNKNOWN_WRITE;
            default -> Operation.UNKNOWN_WRITE;
        };
    }

    /** Query parameters of ListObjects (v1) and ListObjectsV2. */
    private static final Set<String> LIST_PARAMETERS = Set.of("list-type", "prefix", "delimiter", "marker", "max-keys",
            "continuation-token", "start-after", "fetch-owner", "encoding-type", "x-id", "allow-unordered");
    /** Query parameters of ListObjectVersions. */
    private static final Set<String> VERSIONS_PARAMETERS = Set.of("versions", "prefix", "delimiter", "key-marker",
            "version-id-marker", "max-keys", "encoding-type", "x-id");

    private static Operation bucketOperation(String method, List<Map.Entry<String, String>> q) {
        Set<String> keys = new java.util.TreeSet<>();
        for (Map.Entry<String, String> e : q) {
            if (!e.getKey().startsWith("X-Amz-")) {
                keys.add(e.getKey());
            }
        }
        return switch (method) {
            case "POST" -> has(q, "delete") ? Operation.DELETE_OBJECTS : Operation.BUCKET_OTHER;
            case "GET" -> keys.contains("versions") && VERSIONS_PARAMETERS.containsAll(keys)
                    ? Operation.LIST_OBJECT_VERSIONS
                    : LIST_PARAMETERS.containsAll(keys) ? Operation.LIST_OBJECTS : Operation.BUCKET_OTHER;
            case "DELETE" -> keys.isEmpty() || keys.equals(Set.of("x-id")) ? Operation.DELETE_BUCKET
                    : Operation.BUCKET_OTHER;
            default -> Operation.BUCKET_OTHER;
        };
    }

    /**
     * Whether the parameters are one sub-resource of {@code subresources} (optionally with its companions
     * {@code versionId} and {@code select-type}): a request that changes or reads something beside the object's
     * data (its ACL, tags, retention, legal hold; a restore or select), which is not fenced.
     */
    private static boolean metadataOnly(Set<String> keys, Set<String> subresources) {
        long named = keys.stream().filter(subresources::contains).count();
        return named == 1 && keys.stream().allMatch(k -> subresources.contains(k) || k.equals("versionId")
                || k.equals("select-type"));
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
        return new S3Request(method, bucket, key, decodedPath, List.copyOf(replaced), operation);
    }

    /** Whether the request reads and changes nothing (GET, HEAD): the only kind an unsigned request may be. */
    boolean read() {
        return method.equals("GET") || method.equals("HEAD");
    }

    /** Whether this is a presigned request (SigV4 in the query). */
    boolean presigned() {
        return has(query, "X-Amz-Signature");
    }

    /** The query without the presigning parameters: what goes upstream. */
    List<Map.Entry<String, String>> upstreamQuery() {
        return query.stream().filter(e -> !e.getKey().startsWith("X-Amz-")).toList();
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

    static List<Map.Entry<String, String>> parseQuery(String raw) {
        List<Map.Entry<String, String>> out = new ArrayList<>();
        if (raw == null || raw.isEmpty()) {
            return out;
        }
        for (String pair : raw.split("&")) {
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
