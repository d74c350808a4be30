package io.stockade.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

/** Where a policy's requests go. Each backend type is one record; later issues add postgres and s3. */
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
}
