package io.stockade.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/** Where a policy's requests go. Each backend type is one record. */
public sealed interface BackendConfig {

    /** The backend's type as written in the policy file. */
    String type();

    /**
     * A plain HTTP upstream.
     *
     * @param url            base URL; the request path is appended to its path
     * @param conditional    how the write is made safe: {@code NONE} (the proxy serializes the scope) or
     *                       {@code IF_MATCH} (the upstream honours If-Match, the write is atomic)
     * @param connectTimeout time allowed to open a connection
     * @param timeout        time allowed for the upstream's answer; past it the outcome is unknown
     * @param settle         how long a scope stays quarantined after an unknown outcome
     * @param maxConnections the most pooled connections to the upstream
     * @param tls            whom an {@code https://} upstream is checked against and the certificate the proxy
     *                       presents to it, or {@code null} for the JVM's default authorities and no certificate
     */
    record Http(URI url, Conditional conditional, Duration connectTimeout, Duration timeout, Duration settle,
                int maxConnections, @Nullable ClientTls tls) implements BackendConfig {
        public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(2);
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);
        public static final Duration DEFAULT_SETTLE = Duration.ofSeconds(60);
        public static final int DEFAULT_MAX_CONNECTIONS = 64;

        public Http {
            Objects.requireNonNull(url, "url");
            Objects.requireNonNull(conditional, "conditional");
            Objects.requireNonNull(connectTimeout, "connectTimeout");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(settle, "settle");
        }

        /** An upstream reached with the JVM's default TLS settings. */
        public Http(URI url, Conditional conditional, Duration connectTimeout, Duration timeout, Duration settle,
                    int maxConnections) {
            this(url, conditional, connectTimeout, timeout, settle, maxConnections, null);
        }

        @Override
        public String type() {
            return "http";
        }

        /**
         * For a serialized policy ({@code conditional: none}) whose {@code settle} is shorter than its
         * {@code timeout}: why that may let a write the proxy gave up on land after the quarantine (a request the
         * upstream received just before the proxy gave up may take as long as {@code timeout} to apply); empty
         * otherwise. The server logs it as a warning; it does not refuse the policy (policies/README.md, "timeout
         * and settle").
         */
        public Optional<String> settleAdvice() {
            if (conditional != Conditional.NONE || settle.compareTo(timeout) >= 0) {
                return Optional.empty();
            }
            return Optional.of("settle (" + settle.toMillis() + " ms) is shorter than timeout (" + timeout.toMillis()
                    + " ms): a write the upstream received just before the proxy gave up on it may land after the"
                    + " quarantine, under a newer holder's write; make settle at least timeout, plus what the network"
                    + " can hold in flight (policies/README.md, 'timeout and settle')");
        }
    }

    /** How an HTTP upstream write is protected. */
    enum Conditional {
        /** The upstream knows nothing of conditions: the proxy holds the scope until the upstream answers. */
        NONE,
        /** The upstream honours If-Match / If-None-Match: the proxy writes conditionally on the recorded ETag. */
        IF_MATCH
    }

    /**
     * A local directory served over HTTP (PUT, GET, HEAD, DELETE).
     *
     * @param root the directory; created if missing
     */
    record File(Path root) implements BackendConfig {
        public File {
            Objects.requireNonNull(root, "root");
        }

        @Override
        public String type() {
            return "file";
        }
    }

    /** What a GET (or HEAD) of the postgres backend answers when its statements return no row. */
    enum EmptyGet {
        /** 404 {@code not-found}: the route reads one resource, and it is not there. */
        NOT_FOUND,
        /** 200 {@code []}: the route reads a list, which may be empty. */
        EMPTY_LIST
    }

    /** When the postgres backend sends a write's COMMIT. */
    enum Commit {
        /**
         * After the statements' results were read: one more round trip, and a connection lost before COMMIT was
         * sent is known to have written nothing (503).
         */
        SEPARATE,
        /**
         * In the same round trip as the fence call and the statements (table mode only): a connection lost
         * during that round trip leaves the outcome unknown (504), as for any autocommit statement.
         */
        PIPELINED
    }

    /**
     * PostgreSQL: each method of the policy runs named SQL statements declared here (never SQL from the request),
     * in one transaction together with the fence.
     *
     * @param datasource the connection pool
     * @param fence      where the high-water mark lives: the {@code stockade_fences} table, or a column of the
     *                   user's rows that the statements compare with {@code :fencing_token}
     * @param migrate    whether the proxy creates {@code stockade_fences} and its function at start
     *                   (otherwise it checks they exist)
     * @param params     the declared parameters by name
     * @param statements the statements of each method (upper case), in order
     * @param check      column mode: a SELECT answering the token column of the row a write targets; run when a
     *                   fenced write changed no row, to tell a stale token from a missing row
     * @param bodyLimit  the largest request body read, in bytes (413 above)
     * @param retries    how many times a transaction that hit a serialization failure or deadlock is retried
     * @param emptyGet   what a read of no row answers
     * @param commit     when COMMIT is sent: after the statements' results were read, or with them
     * @param oneStatement table mode, opt-in: whether a fenced method of one statement sends it and the fence as one
     *                   statement (a data-modifying {@code WITH}, committed as it ends) instead of a transaction
     */
    record Postgres(Datasource datasource, FenceMode fence, boolean migrate, Map<String, SqlParam> params,
                    Map<String, List<Statement>> statements, Optional<Statement> check, long bodyLimit,
                    int retries, EmptyGet emptyGet, Commit commit, boolean oneStatement) implements BackendConfig {
        public static final long DEFAULT_BODY_LIMIT = 1024 * 1024;
        public static final int DEFAULT_RETRIES = 3;
        /** Parameters every statement may use without declaring them. */
        public static final String FENCING_TOKEN = "fencing_token";
        public static final String SCOPE = "scope";

        /** As the canonical constructor, with a read of no row answering 404. */
        public Postgres(Datasource datasource, FenceMode fence, boolean migrate, Map<String, SqlParam> params,
                        Map<String, List<Statement>> statements, Optional<Statement> check, long bodyLimit,
                        int retries) {
            this(datasource, fence, migrate, params, statements, check, bodyLimit, retries, EmptyGet.NOT_FOUND,
                    Commit.SEPARATE, false);
        }

        public Postgres {
            Objects.requireNonNull(commit, "commit");
            if (commit == Commit.PIPELINED && fence == FenceMode.COLUMN) {
                throw new IllegalArgumentException("commit: pipelined needs fence: table");
            }
            if (oneStatement && fence == FenceMode.COLUMN) {
                throw new IllegalArgumentException("one-statement needs fence: table");
            }
            Objects.requireNonNull(emptyGet, "emptyGet");
            Objects.requireNonNull(datasource, "datasource");
            Objects.requireNonNull(fence, "fence");
            params = Map.copyOf(params);
            statements = Map.copyOf(statements);
            Objects.requireNonNull(check, "check");
        }

        @Override
        public String type() {
            return "postgres";
        }
    }

    /** Where a postgres backend keeps the high-water mark. */
    enum FenceMode {
        /** A row per scope in {@code stockade_fences}, bumped first in the transaction. */
        TABLE,
        /** A token column in the user's rows; the statements compare it with {@code :fencing_token}. */
        COLUMN
    }

    /**
     * One named statement of a postgres backend.
     *
     * @param name a name for answers and logs ({@code PUT[0]} unless the policy names it)
     * @param sql  the parsed text
     */
    record Statement(String name, SqlText sql) {
        public Statement {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(sql, "sql");
        }
    }

    /**
     * A statement parameter and where its value comes from.
     *
     * @param name     the {@code :name} in the statements
     * @param source   where the value is read
     * @param field    the path variable, query parameter or JSON field name (usually the same as {@code name})
     * @param type     how the value is checked and bound
     * @param nullable whether JSON {@code null} (or an absent query parameter) binds SQL NULL instead of a 400
     * @param digits   a {@code number} parameter's {@code precision} and {@code scale}, when the policy gives them
     */
    record SqlParam(String name, ParamSource source, String field, ParamType type, boolean nullable,
                    Optional<Digits> digits) {
        public SqlParam {
            Objects.requireNonNull(name, "name");
            Objects.requireNonNull(source, "source");
            Objects.requireNonNull(field, "field");
            Objects.requireNonNull(type, "type");
            Objects.requireNonNull(digits, "digits");
            if (digits.isPresent() && type != ParamType.NUMBER) {
                throw new IllegalArgumentException("precision and scale apply to type: number only");
            }
        }

        /** A parameter without precision and scale. */
        public SqlParam(String name, ParamSource source, String field, ParamType type, boolean nullable) {
            this(name, source, field, type, nullable, Optional.empty());
        }
    }

    /**
     * The digits a {@code number} parameter may have, as PostgreSQL's {@code numeric(precision, scale)} column
     * holds them: at most {@code scale} after the point and {@code precision - scale} before it. A value with more
     * is refused, never rounded (PostgreSQL would round 1.005 into {@code numeric(14, 2)} as 1.01 without a word).
     *
     * @param precision 1..{@value #MAX_PRECISION} significant digits in all
     * @param scale     0..precision digits after the point
     */
    record Digits(int precision, int scale) {
        /** PostgreSQL's largest {@code numeric(precision, scale)} precision. */
        public static final int MAX_PRECISION = 1000;

        public Digits {
            if (precision < 1 || precision > MAX_PRECISION || scale < 0 || scale > precision) {
                throw new IllegalArgumentException("numeric(" + precision + ", " + scale + ")");
            }
        }

        /** The most digits before the point. */
        public int integerDigits() {
            return precision - scale;
        }

        @Override
        public String toString() {
            return "numeric(" + precision + ", " + scale + ")";
        }
    }

    /** Where a statement parameter is read from. */
    enum ParamSource {
        /** A variable of the path template. */
        PATH,
        /** A query parameter. */
        QUERY,
        /** A field of the JSON object in the request body. */
        BODY,
        /** The whole request body as text. */
        BODY_TEXT
    }

    /** The type a parameter is checked against and bound as. */
    enum ParamType {
        /** Text (bound with an unspecified type: PostgreSQL infers it from the statement). */
        STRING,
        /** A whole number (bigint). */
        INTEGER,
        /** Any number (numeric). */
        NUMBER,
        BOOLEAN,
        /** Any JSON value, bound as its JSON text (for json/jsonb columns). */
        JSON
    }

    /**
     * An S3-compatible object store, spoken to by S3 clients (AWS SDKs, the AWS CLI) through the proxy.
     *
     * @param endpoint          the upstream's base URL, e.g. {@code https://s3.eu-west-1.amazonaws.com}
     * @param region            the region the proxy signs its upstream requests for
     * @param accessKey         the proxy's own access key at the upstream
     * @param secretKey         the proxy's own secret key at the upstream
     * @param pathStyle         whether the upstream is addressed path-style ({@code /bucket/key}) or
     *                          virtual-host-style ({@code bucket.host/key})
     * @param conditionalWrites whether the upstream honours {@code If-Match}/{@code If-None-Match} on writes
     * @param auth              how clients authenticate to the proxy
     * @param clients           the credentials the proxy accepts from clients ({@code auth: sigv4})
     * @param virtualHost       the host name under which clients may address buckets virtual-host-style
     *                          ({@code bucket.<virtualHost>}), or null for path-style clients only
     * @param fenceScope        one scope per object, or per key prefix
     * @param prefixSegments    with a prefix scope: how many '/'-separated segments of the key make the prefix
     * @param timeout           time allowed for an upstream answer
     * @param retries           how many times a conditional write is retried after losing a race (412/409)
     * @param maxConnections    the most pooled connections to the upstream
     * @param tls               TLS to an {@code https://} endpoint (as for {@link Http#tls()}), or {@code null}
     * @param signedToken       with {@code auth: sigv4}: whether a fenced request's token header must be one of the
     *                          headers its signature covers (else anyone holding a signed request or a presigned
     *                          URL could pick the token)
     * @param tokenFromMetadata whether a fenced request without the token header may carry its token as the user
     *                          metadata {@code x-amz-meta-fencing-token} (what the AWS CLI can send:
     *                          {@code --metadata fencing-token=7}); a CompleteMultipartUpload without either then
     *                          takes the token its upload ID carries
     * @param unsignedReads     with {@code auth: sigv4}: what happens to an unsigned (anonymous) GET or HEAD
     * @param etagCache         the atomic class: how many objects' (token, ETag) of the proxy's own last write
     *                          are remembered, so that the next write of the object skips the HEAD; 0: off
     * @param bucketWrites      the bucket-level writes the proxy forwards (unfenced), by name from
     *                          {@link #BUCKET_WRITES}; every other bucket write is refused
     * @param distinctKeys      the serialized class: whether the store keeps apart keys a file-system store folds
     *                          into one object ({@code k/} beside {@code k}); false refuses writes of such keys
     */
    record S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
              boolean conditionalWrites, Auth auth, List<Credentials> clients, @Nullable String virtualHost,
              FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections,
              @Nullable ClientTls tls, boolean signedToken, boolean tokenFromMetadata, UnsignedReads unsignedReads,
              int etagCache, Set<String> bucketWrites, boolean distinctKeys)
            implements BackendConfig {
        /**
         * The bucket-level writes a policy can let through ({@code bucket-writes}): {@code create} (CreateBucket),
         * {@code delete} (DeleteBucket), and each bucket sub-resource by its name in the query (its PUT, DELETE
         * and POST), as AWS's S3 API reference names them.
         */
        public static final List<String> BUCKET_WRITES = List.of("create", "delete", "abac", "accelerate", "acl",
                "analytics", "cors", "encryption", "intelligent-tiering", "inventory", "lifecycle", "logging",
                "metadataConfiguration", "metadataInventoryTable", "metadataJournalTable", "metadataTable", "metrics",
                "notification", "object-lock", "ownershipControls", "policy", "publicAccessBlock", "replication",
                "requestPayment", "tagging", "versioning", "website");
        public static final String DEFAULT_REGION = "us-east-1";
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(60);
        public static final int DEFAULT_RETRIES = 3;
        public static final int DEFAULT_MAX_CONNECTIONS = 64;

        public S3 {
            Objects.requireNonNull(endpoint, "endpoint");
            Objects.requireNonNull(region, "region");
            Objects.requireNonNull(accessKey, "accessKey");
            Objects.requireNonNull(secretKey, "secretKey");
            Objects.requireNonNull(auth, "auth");
            clients = List.copyOf(clients);
            Objects.requireNonNull(fenceScope, "fenceScope");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(unsignedReads, "unsignedReads");
            bucketWrites = Set.copyOf(bucketWrites);
            if (!BUCKET_WRITES.containsAll(bucketWrites)) {
                throw new IllegalArgumentException("unknown bucket writes " + bucketWrites + "; valid: "
                        + BUCKET_WRITES);
            }
        }

        @Override
        public String type() {
            return "s3";
        }

        /** As the canonical constructor, with every bucket write refused and keys that may alias refused. */
        public S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
                  boolean conditionalWrites, Auth auth, List<Credentials> clients, String virtualHost,
                  FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections,
                  ClientTls tls, boolean signedToken, boolean tokenFromMetadata, UnsignedReads unsignedReads,
                  int etagCache) {
            this(endpoint, region, accessKey, secretKey, pathStyle, conditionalWrites, auth, clients, virtualHost,
                    fenceScope, prefixSegments, timeout, retries, maxConnections, tls, signedToken, tokenFromMetadata,
                    unsignedReads, etagCache, Set.of(), false);
        }

        /** As the canonical constructor, without the ETag cache. */
        public S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
                  boolean conditionalWrites, Auth auth, List<Credentials> clients, String virtualHost,
                  FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections,
                  ClientTls tls, boolean signedToken, boolean tokenFromMetadata, UnsignedReads unsignedReads) {
            this(endpoint, region, accessKey, secretKey, pathStyle, conditionalWrites, auth, clients, virtualHost,
                    fenceScope, prefixSegments, timeout, retries, maxConnections, tls, signedToken, tokenFromMetadata,
                    unsignedReads, 0);
        }

        /** As the canonical constructor, with unsigned reads refused. */
        public S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
                  boolean conditionalWrites, Auth auth, List<Credentials> clients, String virtualHost,
                  FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections,
                  ClientTls tls, boolean signedToken, boolean tokenFromMetadata) {
            this(endpoint, region, accessKey, secretKey, pathStyle, conditionalWrites, auth, clients, virtualHost,
                    fenceScope, prefixSegments, timeout, retries, maxConnections, tls, signedToken, tokenFromMetadata,
                    UnsignedReads.REFUSE);
        }

        /** As the canonical constructor, with the token read from its header only. */
        public S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
                  boolean conditionalWrites, Auth auth, List<Credentials> clients, String virtualHost,
                  FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections,
                  ClientTls tls, boolean signedToken) {
            this(endpoint, region, accessKey, secretKey, pathStyle, conditionalWrites, auth, clients, virtualHost,
                    fenceScope, prefixSegments, timeout, retries, maxConnections, tls, signedToken, false);
        }

        /** As the canonical constructor, with the token's signature required. */
        public S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
                  boolean conditionalWrites, Auth auth, List<Credentials> clients, String virtualHost,
                  FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections,
                  ClientTls tls) {
            this(endpoint, region, accessKey, secretKey, pathStyle, conditionalWrites, auth, clients, virtualHost,
                    fenceScope, prefixSegments, timeout, retries, maxConnections, tls, true);
        }

        /** Whether the token is checked by the upstream's conditional write (atomic) rather than serialized. */
        public boolean atomic() {
            return conditionalWrites && fenceScope == FenceScope.OBJECT;
        }

        @Override
        public String toString() {
            return "S3[endpoint=" + endpoint + ", region=" + region + ", accessKey=" + accessKey + ", pathStyle="
                    + pathStyle + ", conditionalWrites=" + conditionalWrites + ", auth=" + auth + ", clients="
                    + clients.size() + ", virtualHost=" + virtualHost + ", fenceScope=" + fenceScope
                    + ", prefixSegments=" + prefixSegments + ", tls=" + tls + ", signedToken=" + signedToken
                    + ", tokenFromMetadata=" + tokenFromMetadata + ", unsignedReads=" + unsignedReads + ", etagCache="
                    + etagCache + ", bucketWrites=" + bucketWrites + ", distinctKeys=" + distinctKeys + "]";
        }
    }

    /** How S3 clients authenticate to the proxy. */
    enum Auth {
        /** AWS Signature Version 4 (header or presigned URL), checked against the configured client keys. */
        SIGV4,
        /** No check at all: for a trusted network only; the proxy says so loudly when it starts. */
        NONE
    }

    /** What an s3 policy with {@code auth: sigv4} does with an unsigned (anonymous) GET or HEAD. */
    enum UnsignedReads {
        /** 403 AccessDenied, like every unsigned request. */
        REFUSE,
        /** Forwarded to the store without the proxy's signature: the store's own ACLs and policies answer it. */
        FORWARD
    }

    /** What one S3 fence scope covers. */
    enum FenceScope {
        /** One scope per object: the token lives in the object's metadata (atomic with conditional writes). */
        OBJECT,
        /** One scope per key prefix: the proxy's store holds the token and the proxy serializes the scope. */
        PREFIX
    }

    /**
     * An access key and its secret.
     */
    record Credentials(String accessKey, String secretKey) {
        public Credentials {
            Objects.requireNonNull(accessKey, "accessKey");
            Objects.requireNonNull(secretKey, "secretKey");
        }

        @Override
        public String toString() {
            return "Credentials[accessKey=" + accessKey + "]";
        }
    }
}
