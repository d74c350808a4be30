package io.stockade.policy;

import java.nio.file.Path;

import org.jspecify.annotations.Nullable;

/**
 * TLS from the proxy to something it calls: an {@code https://} upstream of the http or s3 backend, the etcd store
 * or the etcd token verifier. PEM files, because that is what a private CA hands out and what etcd, PostgreSQL
 * ({@code sslrootcert}, {@code sslcert}, {@code sslkey}) and Kubernetes TLS secrets hold, so one set of files serves
 * every client of the proxy. Server name verification is always on: there is no switch to turn it off, because a
 * certificate for any name signed by a trusted CA would otherwise be enough to take the writes.
 *
 * @param ca   a PEM bundle of the certificates to trust instead of the JVM's default authorities, or {@code null}
 *             for the defaults
 * @param cert the PEM certificate chain the proxy presents (mutual TLS), or {@code null}
 * @param key  the private key of {@code cert} (PEM, PKCS#8 {@code BEGIN PRIVATE KEY}, unencrypted), or {@code null}
 */
public record ClientTls(@Nullable Path ca, @Nullable Path cert, @Nullable Path key) {
    public ClientTls {
        if ((cert == null) != (key == null)) {
            throw new IllegalArgumentException("cert and key go together");
        }
    }
}
