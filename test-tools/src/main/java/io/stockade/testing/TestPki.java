package io.stockade.testing;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import io.stockade.policy.ClientTls;

/**
 * A throwaway public-key infrastructure for TLS tests, made with the {@code openssl} command (Debian's
 * {@code openssl}) in a directory of the test's: a CA and certificates it signs, as PEM files (keys PKCS#8, as
 * the proxy, etcd and PostgreSQL read them). EC P-256 keys, valid two days. Each {@link Leaf} is a certificate,
 * its key, and the CA that signed it; {@link #sslContext(Leaf)} makes a JDK context from them (a server's, or a
 * client's with the CA to trust).
 *
 * <pre>{@code
 * TestPki pki = TestPki.create(dir);
 * TestPki.Leaf server = pki.server("server");            // SAN: IP 127.0.0.1, DNS localhost
 * TestPki.Leaf client = pki.leaf("proxy", "DNS:proxy");  // any SAN
 * TestPki other = TestPki.create(dir.resolve("other"));  // an unrelated CA
 * Path p12 = TestPki.keystore(server, dir.resolve("server.p12"), "changeit"); // PKCS#12 for Java servers
 * }</pre>
 */
public final class TestPki {
    private final Path dir;
    private final Path caCert;
    private final Path caKey;

    /** A certificate signed by this CA, with its private key. */
    public record Leaf(Path cert, Path key, Path ca) {
        /** {@code tls: {ca, cert, key}} as the policy file would give it. */
        public ClientTls clientTls() {
            return new ClientTls(ca, cert, key);
        }
    }

    private TestPki(Path dir, Path caCert, Path caKey) {
        this.dir = dir;
        this.caCert = caCert;
        this.caKey = caKey;
    }

    /** A new CA in {@code dir} (created if missing). */
    public static TestPki create(Path dir) {
        try {
            Files.createDirectories(dir);
            Path cert = dir.resolve("ca.pem");
            Path key = dir.resolve("ca.key");
            openssl(dir, "req", "-x509", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-keyout", key.toString(), "-out", cert.toString(), "-days", "2",
                    "-subj", "/CN=Stockade Test CA " + dir.getFileName(),
                    "-addext", "basicConstraints=critical,CA:TRUE",
                    "-addext", "keyUsage=critical,keyCertSign,cRLSign");
            return new TestPki(dir, cert, key);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The CA's certificate (PEM): what a client that trusts this CA names as {@code ca}. */
    public Path ca() {
        return caCert;
    }

    /** A server certificate for {@code 127.0.0.1} and {@code localhost}. */
    public Leaf server(String name) {
        return leaf(name, "IP:127.0.0.1,DNS:localhost");
    }

    /**
     * A certificate for server and client use.
     *
     * @param subjectAltNames openssl's syntax, e.g. {@code "DNS:wrong.example"} or {@code "IP:127.0.0.1"}
     */
    public Leaf leaf(String name, String subjectAltNames) {
        try {
            Path key = dir.resolve(name + ".key");
            Path csr = dir.resolve(name + ".csr");
            Path cert = dir.resolve(name + ".pem");
            Path ext = dir.resolve(name + ".ext");
            Files.writeString(ext, "subjectAltName=" + subjectAltNames + "\nbasicConstraints=CA:FALSE\n"
                    + "keyUsage=critical,digitalSignature,keyEncipherment\n"
                    + "extendedKeyUsage=serverAuth,clientAuth\n");
            openssl(dir, "req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key.toString(), "-out", csr.toString(), "-subj", "/CN=" + name);
            openssl(dir, "x509", "-req", "-in", csr.toString(), "-CA", caCert.toString(), "-CAkey", caKey.toString(),
                    "-set_serial", Long.toString(System.nanoTime() & Long.MAX_VALUE), "-days", "2",
                    "-extfile", ext.toString(), "-out", cert.toString());
            return new Leaf(cert, key, caCert);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A JDK context presenting {@code leaf} and trusting its CA (for a test server, or a test client). */
    public static SSLContext sslContext(Leaf leaf) {
        try {
            KeyStore keys = KeyStore.getInstance("PKCS12");
            keys.load(null, null);
            keys.setKeyEntry("key", privateKey(leaf.key()), new char[0], certificates(leaf.cert())
                    .toArray(X509Certificate[]::new));
            KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            kmf.init(keys, new char[0]);
            KeyStore trust = KeyStore.getInstance("PKCS12");
            trust.load(null, null);
            trust.setCertificateEntry("ca", certificates(leaf.ca()).getFirst());
            TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
            tmf.init(trust);
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(kmf.getKeyManagers(), tmf.getTrustManagers(), null);
            return context;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A PKCS#12 key store holding {@code leaf}'s key and certificate chain (for {@code server.tls}, s3proxy). */
    public static Path keystore(Leaf leaf, Path file, String password) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setKeyEntry("key", privateKey(leaf.key()), password.toCharArray(),
                    certificates(leaf.cert()).toArray(X509Certificate[]::new));
            return save(store, file, password);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A PKCS#12 trust store holding this CA's certificate. */
    public Path truststore(Path file, String password) {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            store.setCertificateEntry("ca", certificates(caCert).getFirst());
            return save(store, file, password);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        } catch (GeneralSecurityException e) {
            throw new IllegalStateException(e);
        }
    }

    /** The certificates of a PEM file. */
    private static List<X509Certificate> certificates(Path pem) throws IOException, GeneralSecurityException {
        try (InputStream in = Files.newInputStream(pem)) {
            return CertificateFactory.getInstance("X.509").generateCertificates(in).stream()
                    .map(c -> (X509Certificate) c).toList();
        }
    }

    /** The EC private key of a PKCS#8 PEM file, as {@code openssl} wrote it here. */
    private static PrivateKey privateKey(Path pem) throws IOException, GeneralSecurityException {
        String text = Files.readString(pem, StandardCharsets.US_ASCII);
        String base64 = text.replaceAll("-----(BEGIN|END) PRIVATE KEY-----", "").replaceAll("\\s", "");
        return KeyFactory.getInstance("EC").generatePrivate(new PKCS8EncodedKeySpec(Base64.getDecoder()
                .decode(base64)));
    }

    private static Path save(KeyStore store, Path file, String password)
            throws IOException, GeneralSecurityException {
        try (var out = Files.newOutputStream(file)) {
            store.store(out, password.toCharArray());
        }
        return file;
    }

    private static void openssl(Path dir, String... args) throws IOException {
        List<String> command = new ArrayList<>();
        command.add("openssl");
        command.addAll(List.of(args));
        Process p;
        try {
            p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true)
                    .redirectInput(ProcessBuilder.Redirect.from(new File("/dev/null"))).start();
        } catch (IOException e) {
            throw new IOException("cannot run openssl (apt-get install -y openssl)", e);
        }
        try {
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IOException(command + " failed:\n" + out);
            }
        } catch (InterruptedException e) {
            p.destroyForcibly();
            Thread.currentThread().interrupt();
            throw new IOException("interrupted: " + command, e);
        }
    }
}
