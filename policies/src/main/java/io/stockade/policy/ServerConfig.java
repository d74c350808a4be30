package io.stockade.policy;

import java.nio.file.Path;
import java.util.Objects;

/**
 * Where the proxy listens.
 *
 * @param host interface address to bind, e.g. {@code 127.0.0.1}
 * @param port TCP port, 0 for any free port
 * @param tls  TLS on the listener, or {@code null} for plain HTTP
 */
public record ServerConfig(String host, int port, Tls tls) {
    public static final String DEFAULT_HOST = "127.0.0.1";
    public static final int DEFAULT_PORT = 8080;

    public ServerConfig {
        Objects.requireNonNull(host, "host");
        if (port < 0 || port > 65535) {
            throw new IllegalArgumentException("port must be 0..65535, was " + port);
        }
    }

    /** A plain-HTTP listener. */
    public ServerConfig(String host, int port) {
        this(host, port, null);
    }

    /** A copy on another port. */
    public ServerConfig withPort(int newPort) {
        return new ServerConfig(host, newPort, tls);
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
    public record Tls(Path keystore, String password, Path passwordFile, Path truststore, ClientAuth clientAuth) {
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
