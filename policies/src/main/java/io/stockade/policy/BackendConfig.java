package io.stockade.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

/** Where a policy's requests go. Each backend type is one record; later issues add postgres. */
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
     */
    record Http(URI url, Conditional conditional, Duration connectTimeout, Duration timeout, Duration settle,
                int maxConnections) implements BackendConfig {
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

        @Override
        public String type() {
            return "http";
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
     */
    record S3(URI endpoint, String region, String accessKey, String secretKey, boolean pathStyle,
              boolean conditionalWrites, Auth auth, List<Credentials> clients, String virtualHost,
              FenceScope fenceScope, int prefixSegments, Duration timeout, int retries, int maxConnections)
            implements BackendConfig {
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
        }

        @Override
        public String type() {
            return "s3";
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
                    + ", prefixSegments=" + prefixSegments + "]";
        }
    }

    /** How S3 clients authenticate to the proxy. */
    enum Auth {
        /** AWS Signature Version 4 (header or presigned URL), checked against the configured client keys. */
        SIGV4,
        /** No check at all: for a trusted network only; the proxy says so loudly when it starts. */
        NONE
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
