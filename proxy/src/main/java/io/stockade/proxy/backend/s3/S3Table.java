package io.stockade.proxy.backend.s3;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

import io.stockade.proxy.backend.s3.S3Request.Operation;
import io.stockade.proxy.problem.ProblemType;

import org.jspecify.annotations.Nullable;

/**
 * The S3 backend's closed table: every (method, target, query parameters, significant header) the backend forwards
 * is a row naming the operation; the plan of each operation (a read forwarded, a fenced write of the key's scope, a
 * bucket write the policy opts into, an upload step relayed unfenced) is {@link S3Planner}'s. Anything that
 * matches no row is refused before the store sees it: a store reads a request by its own rules (s3proxy ignores
 * {@code ?retention} and runs a PutObject, takes {@code x-amz-copy-source} on any PUT as a CopyObject), so a request
 * the proxy has not classified is a write nobody checked.
 * <p>
 * The rows, the sub-resources and the headers come from AWS's S3 API reference (the service model, 2006-03-01):
 * each operation's method, request URI and query and header members. docs/s3.md carries the same table.
 */
final class S3Table {
    private S3Table() {
    }

    /** What a request addresses: the service ({@code /}), a bucket, or an object. */
    enum Target {
        SERVICE, BUCKET, OBJECT;

        String described() {
            return switch (this) {
                case SERVICE -> "the service";
                case BUCKET -> "a bucket";
                case OBJECT -> "an object";
            };
        }
    }

    /**
     * Why a request is refused, as the S3 error it is answered with.
     *
     * @param kind    its kind in the proxy's vocabulary of refusals
     * @param status  the S3 error's status
     * @param code    the S3 error code
     * @param message what is wrong and what to do instead
     */
    record Refusal(ProblemType kind, int status, String code, String message) {
    }

    /**
     * One row.
     *
     * @param method    the method, exactly as S3 spells it
     * @param target    what it addresses
     * @param required  the parameters that name the operation (its sub-resource)
     * @param optional  the parameters it may carry besides
     * @param operation the operation
     * @param refused   null, or why the proxy does not forward it (501 NotImplemented)
     */
    record Row(String method, Target target, Set<String> required, Set<String> optional,
               @Nullable Operation operation, @Nullable String refused) {
        /** The sub-resource that names the row, or null (a plain bucket or object request). */
        @Nullable String subresource() {
            return required.stream().filter(r -> !r.equals("uploadId") && !r.equals("partNumber")
                    && !r.equals("list-type")).findFirst().orElse(null);
        }
    }

    /** The methods S3 knows, exactly as it spells them. */
    static final Set<String> METHODS = Set.of("GET", "HEAD", "PUT", "POST", "DELETE", "OPTIONS");

    /** Parameters every request may carry: the SDKs' operation hint and the presigning parameters (SigV4). */
    static final Set<String> UNIVERSAL = Set.of("x-id", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date",
            "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature", "X-Amz-Security-Token",
            "X-Amz-Content-Sha256");

    private static final Set<String> RESPONSE = Set.of("response-cache-control", "response-content-disposition",
            "response-content-encoding", "response-content-language", "response-content-type", "response-expires");

    /** Bucket sub-resources whose GET (and HEAD, a read too) reads a configuration: forwarded. */
    private static final List<String> BUCKET_READS = List.of("abac", "accelerate", "acl", "analytics", "cors",
            "encryption", "intelligent-tiering", "inventory", "lifecycle", "location", "logging",
            "metadataConfiguration", "metadataTable", "metrics", "notification", "object-lock", "ownershipControls",
            "policy", "policyStatus", "publicAccessBlock", "replication", "requestPayment", "tagging", "versioning",
            "website");
    /** Bucket sub-resources that take an {@code id} (and list with a {@code continuation-token}). */
    private static final Set<String> WITH_ID = Set.of("analytics", "intelligent-tiering", "inventory", "metrics");
    /** Bucket sub-resources AWS writes with PUT. */
    private static final List<String> BUCKET_PUTS = List.of("abac", "accelerate", "acl", "analytics", "cors",
            "encryption", "intelligent-tiering", "inventory", "lifecycle", "logging", "metadataInventoryTable",
            "metadataJournalTable", "metrics", "notification", "object-lock", "ownershipControls", "policy",
            "publicAccessBlock", "replication", "requestPayment", "tagging", "versioning", "website");
    /** Bucket sub-resources AWS removes with DELETE. */
    private static final List<String> BUCKET_DELETES = List.of("analytics", "cors", "encryption",
            "intelligent-tiering", "inventory", "lifecycle", "metadataConfiguration", "metadataTable", "metrics",
            "ownershipControls", "policy", "publicAccessBlock", "replication", "tagging", "website");
    /** Bucket sub-resources AWS creates with POST. */
    private static final List<String> BUCKET_POSTS = List.of("metadataConfiguration", "metadataTable");
    /** Object sub-resources whose GET (and HEAD) reads something of the object beside its bytes: forwarded. */
    private static final List<String> OBJECT_READS = List.of("acl", "attributes", "legal-hold", "retention",
            "tagging", "torrent");

    /** Every row. */
    static final List<Row> ROWS = rows();

    private static List<Row> rows() {
        List<Row> rows = new ArrayList<>();
        // the service
        rows.add(row("GET", Target.SERVICE, Set.of(), Set.of("max-buckets", "continuation-token", "prefix",
                "bucket-region", "max-directory-buckets"), Operation.LIST_BUCKETS));
        // a bucket: listings and reads
        rows.add(row("GET", Target.BUCKET, Set.of(), Set.of("prefix", "delimiter", "marker", "max-keys",
                "encoding-type", "allow-unordered"), Operation.LIST_OBJECTS));
        rows.add(row("GET", Target.BUCKET, Set.of("list-type"), Set.of("prefix", "delimiter", "max-keys",
                "continuation-token", "start-after", "fetch-owner", "encoding-type", "allow-unordered"),
                Operation.LIST_OBJECTS));
        rows.add(row("GET", Target.BUCKET, Set.of("versions"), Set.of("prefix", "delimiter", "key-marker",
                "version-id-marker", "max-keys", "encoding-type"), Operation.LIST_OBJECT_VERSIONS));
        rows.add(row("GET", Target.BUCKET, Set.of("uploads"), Set.of("prefix", "delimiter", "key-marker",
                "upload-id-marker", "max-uploads", "encoding-type"), Operation.BUCKET_READ));
        for (String sub : BUCKET_READS) {
            for (String method : List.of("GET", "HEAD")) {
                rows.add(row(method, Target.BUCKET, Set.of(sub), WITH_ID.contains(sub)
                        ? Set.of("id", "continuation-token") : Set.of(), Operation.BUCKET_READ));
            }
        }
        rows.add(row("HEAD", Target.BUCKET, Set.of(), Set.of(), Operation.BUCKET_READ));
        // a bucket: writes, each forwarded only when the policy names it (bucket-writes)
        rows.add(row("PUT", Target.BUCKET, Set.of(), Set.of(), Operation.BUCKET_WRITE));
        rows.add(row("DELETE", Target.BUCKET, Set.of(), Set.of(), Operation.DELETE_BUCKET));
        for (String sub : BUCKET_PUTS) {
            rows.add(row("PUT", Target.BUCKET, Set.of(sub), WITH_ID.contains(sub) ? Set.of("id") : Set.of(),
                    Operation.BUCKET_WRITE));
        }
        for (String sub : BUCKET_DELETES) {
            rows.add(row("DELETE", Target.BUCKET, Set.of(sub), WITH_ID.contains(sub) ? Set.of("id") : Set.of(),
                    Operation.BUCKET_WRITE));
        }
        for (String sub : BUCKET_POSTS) {
            rows.add(row("POST", Target.BUCKET, Set.of(sub), Set.of(), Operation.BUCKET_WRITE));
        }
        // a bucket: writes of objects
        rows.add(row("POST", Target.BUCKET, Set.of("delete"), Set.of(), Operation.DELETE_OBJECTS));
        rows.add(row("POST", Target.BUCKET, Set.of(), Set.of(), Operation.POST_OBJECT));
        // an object: reads
        Set<String> get = new HashSet<>(RESPONSE);
        get.add("versionId");
        get.add("partNumber");
        rows.add(row("GET", Target.OBJECT, Set.of(), get, Operation.GET_OBJECT));
        rows.add(row("HEAD", Target.OBJECT, Set.of(), get, Operation.HEAD_OBJECT));
        rows.add(row("GET", Target.OBJECT, Set.of("uploadId"), Set.of("max-parts", "part-number-marker"),
                Operation.LIST_PARTS));
        for (String sub : OBJECT_READS) {
            for (String method : List.of("GET", "HEAD")) {
                rows.add(row(method, Target.OBJECT, Set.of(sub), sub.equals("torrent") ? Set.of()
                        : Set.of("versionId"), Operation.OBJECT_READ));
            }
        }
        // an object: writes of its data, fenced
        rows.add(row("PUT", Target.OBJECT, Set.of(), Set.of(), Operation.PUT_OBJECT));
        rows.add(row("DELETE", Target.OBJECT, Set.of(), Set.of("versionId"), Operation.DELETE_OBJECT));
        rows.add(row("POST", Target.OBJECT, Set.of("uploads"), Set.of(), Operation.CREATE_MULTIPART));
        rows.add(row("POST", Target.OBJECT, Set.of("uploadId"), Set.of(), Operation.COMPLETE_MULTIPART));
        // an object: upload steps that change no object until the upload is completed, relayed
        rows.add(row("PUT", Target.OBJECT, Set.of("partNumber", "uploadId"), Set.of(), Operation.UPLOAD_PART));
        rows.add(row("DELETE", Target.OBJECT, Set.of("uploadId"), Set.of(), Operation.ABORT_MULTIPART));
        // an object: its ACL and tags, fenced on the key's scope (serialized class; refused by the atomic class)
        rows.add(row("PUT", Target.OBJECT, Set.of("acl"), Set.of("versionId"), Operation.OBJECT_SUBRESOURCE_WRITE));
        rows.add(row("PUT", Target.OBJECT, Set.of("tagging"), Set.of("versionId"),
                Operation.OBJECT_SUBRESOURCE_WRITE));
        rows.add(row("DELETE", Target.OBJECT, Set.of("tagging"), Set.of("versionId"),
                Operation.OBJECT_SUBRESOURCE_WRITE));
        // an object: writes the proxy does not forward
        String why = " cannot be fenced through the proxy: the token of the object's lock guards its bytes and "
                + "metadata, and a store that does not know the sub-resource runs the request as a PutObject";
        rows.add(refused("PUT", Set.of("retention"), Set.of("versionId"), "PutObjectRetention (?retention)" + why
                + "; set x-amz-object-lock-mode and x-amz-object-lock-retain-until-date with the PutObject"));
        rows.add(refused("PUT", Set.of("legal-hold"), Set.of("versionId"), "PutObjectLegalHold (?legal-hold)"
                + why + "; set x-amz-object-lock-legal-hold with the PutObject"));
        rows.add(refused("PUT", Set.of("encryption"), Set.of("versionId"), "UpdateObjectEncryption (?encryption)"
                + why + "; set x-amz-server-side-encryption with the PutObject"));
        rows.add(refused("PUT", Set.of("renameObject"), Set.of(), "RenameObject (?renameObject) writes two keys"
                + " and is not offered through the proxy; copy the object (CopyObject) and delete the source"));
        rows.add(refused("POST", Set.of("restore"), Set.of("versionId"), "RestoreObject (?restore)" + why));
        rows.add(refused("POST", Set.of("select", "select-type"), Set.of(), "SelectObjectContent (?select) is not "
                + "offered through the proxy; read the object (GetObject)"));
        return List.copyOf(rows);
    }

    private static Row row(String method, Target target, Set<String> required, Set<String> optional,
                           Operation operation) {
        return new Row(method, target, Set.copyOf(required), Set.copyOf(optional), operation, null);
    }

    private static Row refused(String method, Set<String> required, Set<String> optional, String why) {
        return new Row(method, Target.OBJECT, Set.copyOf(required), Set.copyOf(optional), null, why);
    }

    /**
     * A request read against the table.
     *
     * @param row     the row it matched, or null
     * @param hoisted the {@code x-amz-*} parameters a presigner moved from the headers into the query (lower-case
     *                names, as the JS SDK v3's {@code getSignedUrl} writes them): the headers they stand for
     * @param refusal null, or why it is refused
     */
    record Classified(@Nullable Row row, List<Map.Entry<String, String>> hoisted, @Nullable Refusal refusal) {
        @Nullable Operation operation() {
            return row == null ? null : row.operation();
        }
    }

    /**
     * Classifies a request by its method (case-sensitive), its target and its query parameters (decoded, in
     * request order).
     *
     * @param contentType the request's {@code Content-Type}, or null (a POST to a bucket is a browser-form upload
     *                    only as {@code multipart/form-data})
     * @param copy        whether the request carries {@code x-amz-copy-source}
     */
    static Classified classify(String method, Target target, List<Map.Entry<String, String>> query,
                               @Nullable String contentType, boolean copy) {
        if (!METHODS.contains(method)) {
            return refusal(new Refusal(ProblemType.METHOD_NOT_ALLOWED, 405, "MethodNotAllowed", "The specified "
                    + "method is not allowed against this resource: '" + method + "' (S3 methods are GET, HEAD, PUT,"
                    + " POST, DELETE and OPTIONS, spelled in upper case)"));
        }
        boolean presigned = query.stream().anyMatch(e -> e.getKey().equals("X-Amz-Signature"));
        Set<String> names = new TreeSet<>();
        List<Map.Entry<String, String>> hoisted = new ArrayList<>();
        Set<String> seen = new HashSet<>();
        for (Map.Entry<String, String> e : query) {
            String name = e.getKey();
            if (!seen.add(name)) {
                return refusal(new Refusal(ProblemType.BAD_PARAMETER, 400, "InvalidArgument", "the query parameter '"
                        + name + "' is given twice; which one a store takes is its own choice, so the request is "
                        + "refused"));
            }
            if (UNIVERSAL.contains(name)) {
                continue;
            }
            if (presigned && name.startsWith("x-amz-")) {
                hoisted.add(Map.entry(name, e.getValue()));
            } else {
                names.add(name);
            }
        }
        if (method.equals("OPTIONS")) {
            // A browser's CORS preflight goes to the URL of the request it prepares, query included.
            Set<String> known = new HashSet<>();
            ROWS.stream().filter(r -> r.target() == target).forEach(r -> {
                known.addAll(r.required());
                known.addAll(r.optional());
            });
            return known.containsAll(names) ? new Classified(new Row("OPTIONS", target, Set.of(), Set.of(),
                    Operation.PREFLIGHT, null), hoisted, null) : unknown(method, target, names);
        }
        Row match = null;
        for (Row row : ROWS) {
            if (row.method().equals(method) && row.target() == target && names.containsAll(row.required())
                    && union(row).containsAll(names)
                    && (match == null || row.required().size() > match.required().size())) {
                match = row;
            }
        }
        if (match == null) {
            return unknown(method, target, names);
        }
        if (match.refused() != null) {
            return new Classified(match, hoisted, new Refusal(ProblemType.NOT_SUPPORTED, 501, "NotImplemented",
                    match.refused()));
        }
        if (match.required().contains("list-type") && !query.stream().anyMatch(e -> e.getKey().equals("list-type")
                && e.getValue().equals("2"))) {
            return refusal(new Refusal(ProblemType.BAD_PARAMETER, 400, "InvalidArgument", "list-type must be 2 "
                    + "(ListObjectsV2); without it the listing is ListObjects"));
        }
        if (match.operation() == Operation.POST_OBJECT && (contentType == null || !contentType.trim()
                .toLowerCase(Locale.ROOT).startsWith("multipart/form-data"))) {
            return refusal(new Refusal(ProblemType.UNKNOWN_OPERATION, 400, "InvalidArgument", "a POST to a bucket "
                    + "without a sub-resource is a browser-form upload (POST Object), sent as multipart/form-data;"
                    + " this one is " + (contentType == null ? "without a Content-Type" : "'" + contentType + "'")));
        }
        return new Classified(match, hoisted, null);
    }

    private static Set<String> union(Row row) {
        Set<String> all = new HashSet<>(row.required());
        all.addAll(row.optional());
        return all;
    }

    private static Classified refusal(Refusal refusal) {
        return new Classified(null, List.of(), refusal);
    }

    private static Classified unknown(String method, Target target, Set<String> names) {
        return refusal(new Refusal(ProblemType.UNKNOWN_OPERATION, 400, "InvalidArgument", "a " + method + " of "
                + target.described() + (names.isEmpty() ? "" : " with the query parameters " + names)
                + " is no S3 operation the fencing proxy forwards; it is refused rather than forwarded for the store"
                + " to read as it will (docs/s3.md, the closed table)"));
    }

    // ---- headers ----

    /** {@code x-amz-*} headers the proxy reads itself (signing, framing, the body's checksums) and does not relay. */
    static final Set<String> CONSUMED = Set.of("x-amz-date", "x-amz-content-sha256", "x-amz-decoded-content-length",
            "x-amz-trailer", "x-amz-sdk-checksum-algorithm", "x-amz-security-token", "x-amz-user-agent");

    /** {@code x-amz-*} headers relayed with any operation of the table (AWS reads them where they apply). */
    static final Set<String> RELAYED = Set.of("x-amz-acl", "x-amz-grant-full-control", "x-amz-grant-read",
            "x-amz-grant-read-acp", "x-amz-grant-write", "x-amz-grant-write-acp", "x-amz-storage-class",
            "x-amz-website-redirect-location", "x-amz-server-side-encryption",
            "x-amz-server-side-encryption-aws-kms-key-id", "x-amz-server-side-encryption-context",
            "x-amz-server-side-encryption-bucket-key-enabled", "x-amz-server-side-encryption-customer-algorithm",
            "x-amz-server-side-encryption-customer-key", "x-amz-server-side-encryption-customer-key-md5",
            "x-amz-request-payer", "x-amz-expected-bucket-owner", "x-amz-tagging", "x-amz-object-lock-mode",
            "x-amz-object-lock-retain-until-date", "x-amz-object-lock-legal-hold", "x-amz-checksum-crc32",
            "x-amz-checksum-crc32c", "x-amz-checksum-crc64nvme", "x-amz-checksum-sha1", "x-amz-checksum-sha256",
            "x-amz-checksum-sha512", "x-amz-checksum-md5", "x-amz-checksum-xxhash64", "x-amz-checksum-xxhash3",
            "x-amz-checksum-xxhash128", "x-amz-checksum-algorithm", "x-amz-checksum-type", "x-amz-checksum-mode",
            "x-amz-mp-object-size", "x-amz-mfa", "x-amz-bypass-governance-retention",
            "x-amz-optional-object-attributes", "x-amz-object-attributes", "x-amz-max-parts",
            "x-amz-part-number-marker",
            // not in the service model: the AWS SDK for Java v2 sends it with GetObject (append-md5)
            "x-amz-te");

    /** The copy source and its conditions: a request carrying them is a copy, so only the copies take them. */
    static final Set<String> COPY = Set.of("x-amz-copy-source", "x-amz-copy-source-if-match",
            "x-amz-copy-source-if-none-match", "x-amz-copy-source-if-modified-since",
            "x-amz-copy-source-if-unmodified-since", "x-amz-copy-source-server-side-encryption-customer-algorithm",
            "x-amz-copy-source-server-side-encryption-customer-key",
            "x-amz-copy-source-server-side-encryption-customer-key-md5", "x-amz-source-expected-bucket-owner");

    /** Headers of one operation only. */
    private static final Map<String, Set<Operation>> ONLY = Map.of(
            "x-amz-metadata-directive", Set.of(Operation.COPY_OBJECT),
            "x-amz-tagging-directive", Set.of(Operation.COPY_OBJECT),
            "x-amz-copy-source-range", Set.of(Operation.UPLOAD_PART),
            "x-amz-if-match-last-modified-time", Set.of(Operation.DELETE_OBJECT),
            "x-amz-if-match-size", Set.of(Operation.DELETE_OBJECT),
            "x-amz-if-match-initiated-time", Set.of(Operation.ABORT_MULTIPART));

    /** Headers of the bucket writes (CreateBucket and the bucket sub-resources' PUT). */
    private static final Set<String> BUCKET = Set.of("x-amz-bucket-object-lock-enabled", "x-amz-object-ownership",
            "x-amz-bucket-namespace", "x-amz-confirm-remove-self-bucket-access", "x-amz-bucket-object-lock-token",
            "x-amz-skip-destination-validation", "x-amz-transition-default-minimum-object-size");

    /** Operations that give an object its user metadata ({@code x-amz-meta-*}). */
    private static final Set<Operation> WITH_METADATA = Set.of(Operation.PUT_OBJECT, Operation.COPY_OBJECT,
            Operation.CREATE_MULTIPART);

    /**
     * Checks the {@code x-amz-*} headers of a classified request (and the parameters a presigner hoisted into its
     * query, which stand for headers): each must be one the table knows for its operation.
     *
     * @param headers the lower-case names of the request's headers
     * @param copy    whether the request carries {@code x-amz-copy-source}
     * @return why the request is refused, if it is
     */
    static Optional<Refusal> headers(Operation op, Set<String> headers, List<Map.Entry<String, String>> hoisted,
                                     boolean copy) {
        boolean copies = op == Operation.COPY_OBJECT || (op == Operation.UPLOAD_PART && copy);
        for (Map.Entry<String, String> h : hoisted) {
            if (COPY.contains(h.getKey()) || h.getKey().startsWith("x-amz-copy-source")) {
                return Optional.of(refusedHeader(h.getKey() + " in the query: send it as a header"));
            }
            if (headers.contains(h.getKey())) {
                return Optional.of(refusedHeader(h.getKey() + " is both a header and a query parameter; send it once"));
            }
        }
        List<String> names = new ArrayList<>(headers);
        hoisted.forEach(h -> names.add(h.getKey()));
        for (String name : names) {
            if (!name.startsWith("x-amz-") || CONSUMED.contains(name) || RELAYED.contains(name)) {
                continue;
            }
            if (COPY.contains(name)) {
                if (!copies) {
                    return Optional.of(new Refusal(ProblemType.REFUSED_HEADER, 400, "InvalidArgument", name
                            + " makes a request a copy (a store runs it as CopyObject whatever else it names); only "
                            + "CopyObject (a PUT of a key without a sub-resource) and UploadPartCopy (PUT "
                            + "?partNumber&uploadId) take it, this request is " + op));
                }
            } else if (ONLY.containsKey(name)) {
                if (!ONLY.get(name).contains(op) || (name.equals("x-amz-copy-source-range") && !copy)) {
                    return Optional.of(refusedHeader(name + " belongs to " + (name.equals("x-amz-copy-source-range")
                            ? "UploadPartCopy" : ONLY.get(name).iterator().next()) + ", not to " + op));
                }
            } else if (BUCKET.contains(name)) {
                if (op != Operation.BUCKET_WRITE) {
                    return Optional.of(refusedHeader(name + " belongs to a bucket write, not to " + op));
                }
            } else if (name.startsWith("x-amz-meta-")) {
                if (name.equals(ObjectMeta.DELETED_META)) {
                    return Optional.of(refusedHeader(name + " is the proxy's own mark of a tombstone"));
                }
                if (name.equals(ObjectMeta.RECORD_META)) {
                    return Optional.of(copiedRecord());
                }
                if (!WITH_METADATA.contains(op)) {
                    return Optional.of(refusedHeader("user metadata (" + name + ") is given with the write that "
                            + "creates the object (PutObject, CopyObject, CreateMultipartUpload), not with " + op));
                }
            } else {
                return Optional.of(refusedHeader(name + " is no header the fencing proxy relays (docs/s3.md, the "
                        + "closed table)"));
            }
        }
        return Optional.empty();
    }

    /**
     * The proxy's record of an object's token sent back: a tool copied the object's metadata (read at the store, or
     * through a proxy of an earlier build, which showed it) onto a new request. It is no token.
     */
    static Refusal copiedRecord() {
        return new Refusal(ProblemType.REFUSED_HEADER, 400, "InvalidArgument", ObjectMeta.RECORD_META + " is the "
                + "fencing proxy's own record of an object's highest token, copied from an object's metadata (a tool "
                + "that sends back the metadata it read, such as s3cmd modify or boto3's copy_object with "
                + "head_object's Metadata, read it at the store or through an earlier build of the proxy); it is not"
                + " a token and is never written as one: leave it out, and send the token of your lock as the token "
                + "header; nothing was written");
    }

    private static Refusal refusedHeader(String why) {
        return new Refusal(ProblemType.REFUSED_HEADER, 400, "InvalidArgument", "header refused: " + why
                + "; it is refused rather than relayed for the store to read as it will");
    }

    /**
     * Headers without the {@code x-amz-} prefix that mean something to S3 and are relayed; every other one is not
     * relayed (the proxy signs its own request upstream, so a header S3 gives no meaning stays with the proxy).
     */
    static final Set<String> STANDARD = Set.of("content-type", "content-md5", "content-disposition",
            "content-encoding", "content-language", "cache-control", "expires", "if-match", "if-none-match",
            "if-modified-since", "if-unmodified-since", "range", "origin", "access-control-request-method",
            "access-control-request-headers");
}
