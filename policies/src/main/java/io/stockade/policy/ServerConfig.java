package io.stockade.policy;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * Where the proxy listens.
 *
 * @param host interface address to bind, e.g. {@code 127.0.0.1}
 * @param port TCP port, 0 for any free port
 * @param tls  TLS on the listener, or {@code null} for plain HTTP
 * @param limits what the listener enforces on every connection, before any policy is known
 * @param management the listener of the proxy's own endpoints ({@code /metrics}, {@code /admin}), or {@code null}
 *                   to serve them on this one
 */
public record ServerConfig(String host, int port, @Nullable Tls tls, Limits limits, @Nullable Management management) {
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 8080;

    public ServerConfig {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
        Objects.requireNonNull(limits, "limits");
        if (management != null && management.port() != 0 && management.port() == port
                && management.host().equals(host)) {
            throw new IllegalArgumentException("the management listener needs a port of its own, not " + port);
        }
    }

    /** A listener that serves the proxy's own endpoints beside the policies'. */
    public ServerConfig(String host, int port, @Nullable Tls tls, Limits limits) {
        this(host, port, tls, limits, null);
    }

    /** A listener with the default limits. */
    public ServerConfig(String host, int port, @Nullable Tls tls) {
        this(host, port, tls, Limits.defaults());
    }

    /** A plain-HTTP listener. */
    public ServerConfig(String host, int port) {
        this(host, port, null);
    }

    /** A copy on another port. */
    public ServerConfig withPort(int newPort) {
        return new ServerConfig(host, newPort, tls, limits, management);
    }

    /** A copy with this management listener, or none. */
    public ServerConfig withManagement(@Nullable Management newManagement) {
        return new ServerConfig(host, port, tls, limits, newManagement);
    }

    /** A copy whose management listener is on another port (on the data listener's host unless it has one). */
    public ServerConfig withManagementPort(int newPort) {
        return new ServerConfig(host, port, tls, limits,
                new Management(management == null ? host : management.host(), newPort));
    }

    /**
     * The listener of the proxy's own endpoints, apart from the port writers reach: {@code /metrics} and the admin
     * API are served only there, so a network policy, a Service or a firewall can keep them from writers. The health
     * endpoints answer on both (probes and load balancers check either). Plain HTTP: bind it to an interface only
     * operators reach.
     *
     * @param host the interface address to bind
     * @param port the TCP port, 0 for any free port
     */
    public record Management(String host, int port) {
        public Management {
            Objects.requireNonNull(host, "host");
            if (port < 0 || port > 65535) {
                throw new IllegalArgumentException("port must be 0..65535, was " + port);
            }
        }
    }

    /**
     * What the HTTP listener enforces itself, on every request and connection, before a policy is known: only the
     * listener can bound what it parses (the request line, the headers) and how long a connection may sit idle.
     * Per-policy bounds ({@link Policy.Limits}) come after these and can only be tighter.
     *
     * @param maxRequestLineBytes the longest request line (method, target, version); longer gets 414
     * @param maxHeaderBytes      the most bytes of header lines; more gets 431
     * @param maxBodyBytes        the largest body on any route ({@link Policy.Limits#UNLIMITED}: any); more gets 413
     * @param headerTimeout       the longest from the end of the request line to the end of the headers; past it the
     *                            connection is closed (headers trickled a byte at a time: slowloris)
     * @param idleTimeout         how long a connection may wait for (or trickle) its next request line before it
     *                            is closed
     * @param readTimeout         the longest one read of a request may block; a body that stalls longer gets 408
     */
    public record Limits(int maxRequestLineBytes, int maxHeaderBytes, long maxBodyBytes, Duration headerTimeout,
                         Duration idleTimeout, Duration readTimeout) {
        /** Room for long object keys and presigned query strings. */
        public static final int DEFAULT_MAX_REQUEST_LINE_BYTES = 8 * 1024;
        /** Helidon's default. */
        public static final int DEFAULT_MAX_HEADER_BYTES = 16 * 1024;
        public static final Duration DEFAULT_HEADER_TIMEOUT = Duration.ofSeconds(10);
        public static final Duration DEFAULT_IDLE_TIMEOUT = Duration.ofSeconds(60);
        /** Helidon's default. */
        public static final Duration DEFAULT_READ_TIMEOUT = Duration.ofSeconds(30);

        public Limits {
            Objects.requireNonNull(headerTimeout, "headerTimeout");
            Objects.requireNonNull(idleTimeout, "idleTimeout");
            Objects.requireNonNull(readTimeout, "readTimeout");
            if (maxRequestLineBytes < 1 || maxHeaderBytes < 1 || maxBodyBytes < 1) {
                throw new IllegalArgumentException("sizes must be positive");
            }
        }

        public static Limits defaults() {
            return new Limits(DEFAULT_MAX_REQUEST_LINE_BYTES, DEFAULT_MAX_HEADER_BYTES, Policy.Limits.UNLIMITED,
                    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_READ_TIMEOUT);
        }
    }

    /**
     * TLS on the listener, from PKCS#12 key stores.
     *
     * @param keystore     the server's private key and certificate chain (PKCS#12)
     * @param password     the key store's password (write {@code ${ENV}}), or null when {@code passwordFile} gives it
     * @param passwordFile a file whose first line is the password, or null
     * @param truststore   the certificates client certificates are checked against (PKCS#12, same password), or
     *                     null
     * @param clientAuth   whether clients must present a certificate
     */
    public record Tls(Path keystore, @Nullable String password, @Nullable Path passwordFile, @Nullable Path truststore,
                      ClientAuth clientAuth) {
        public Tls {
            Objects.requireNonNull(keystore, "keystore");
            Objects.requireNonNull(clientAuth, "clientAuth");
        }

        @Override
        public String toString() {
            return "Tls[keystore=" + keystore + ", passwordFile=" + passwordFile + ", truststore=" + truststore
                    + ", clientAuth=" + clientAuth + "]";
        }
    }

    /** Whether the listener asks clients for a certificate. */
    public enum ClientAuth {
        /** No client certificate. */
        NONE,
        /** A client certificate is checked when one is sent. */
        OPTIONAL,
        /** Every client must present a certificate the trust store accepts. */
        REQUIRED
    }
}
