package io.stockade.proxy.tls;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyFactory;
import java.security.KeyStore;
import java.security.NoSuchAlgorithmException;
import java.security.PrivateKey;
import java.security.PublicKey;
import java.security.Signature;
import java.security.cert.CertificateException;
import java.security.cert.CertificateFactory;
import java.security.cert.X509Certificate;
import java.security.spec.InvalidKeySpecException;
import java.security.spec.PKCS8EncodedKeySpec;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Objects;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import io.stockade.policy.ClientTls;

import org.jspecify.annotations.Nullable;

/**
 * The PEM files of a policy's {@code tls: {ca, cert, key}}, read and checked once when a client is opened (an
 * upstream of the http or s3 backend, the etcd store and verifier), so a bad file stops the proxy at start with a
 * message naming it instead of failing every handshake later. Only the JDK reads them: no provider that knows more
 * formats is on the class path, so the key must be PKCS#8 and the message says how to convert one that is not.
 *
 * @param ca    the certificates to trust; empty for the JVM's default authorities
 * @param chain the certificate chain the proxy presents; empty for none
 * @param key   the private key of {@code chain}, or {@code null}
 */
public record ClientTlsFiles(List<X509Certificate> ca, List<X509Certificate> chain, @Nullable PrivateKey key) {
    private static final Pattern PEM_KEY = Pattern.compile(
            "-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----([A-Za-z0-9+/=\\s]*)-----END \\1-----");

    public ClientTlsFiles {
        ca = List.copyOf(ca);
        chain = List.copyOf(chain);
    }

    /**
     * Reads the files.
     *
     * @param tls  the policy's block
     * @param what who the files are for, to start every message with (e.g. {@code "backend https://s:8443 tls"})
     * @throws IOException naming the file and what is wrong with it
     */
    public static ClientTlsFiles read(ClientTls tls, String what) throws IOException {
        List<X509Certificate> ca = tls.ca() == null ? List.of() : certificates(tls.ca(), what + ".ca");
        List<X509Certificate> chain = List.of();
        PrivateKey key = null;
        if (tls.cert() != null) {
            chain = certificates(tls.cert(), what + ".cert");
            // ClientTls refuses a cert without a key
            key = privateKey(Objects.requireNonNull(tls.key(), "key"), what + ".key");
            if (!matches(key, chain.getFirst().getPublicKey())) {
                throw new IOException(what + ".key: " + tls.key() + " is not the private key of the certificate in "
                        + tls.cert() + " (" + chain.getFirst().getSubjectX500Principal() + ")");
            }
        }
        return new ClientTlsFiles(ca, chain, key);
    }

    /** The SSL context: only {@link #ca} trusted when given (else the JVM's defaults), and the client key if any. */
    public SSLContext sslContext() throws IOException {
        try {
            KeyStore store = KeyStore.getInstance("PKCS12");
            store.load(null, null);
            char[] password = new char[0];
            TrustManagerFactory trust = null;
            if (!ca.isEmpty()) {
                for (int i = 0; i < ca.size(); i++) {
                    store.setCertificateEntry("ca-" + i, ca.get(i));
                }
                trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(store);
            }
            KeyManagerFactory keys = null;
            if (key != null) {
                KeyStore own = KeyStore.getInstance("PKCS12");
                own.load(null, null);
                own.setKeyEntry("client", key, password, chain.toArray(X509Certificate[]::new));
                keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
                keys.init(own, password);
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys == null ? null : keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(),
                    null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IOException("tls: " + e.getMessage(), e);
        }
    }

    private static List<X509Certificate> certificates(Path file, String what) throws IOException {
        byte[] bytes = readable(file, what);
        try {
            List<X509Certificate> certs = new ArrayList<>();
            for (var c : CertificateFactory.getInstance("X.509")
                    .generateCertificates(new ByteArrayInputStream(bytes))) {
                certs.add((X509Certificate) c);
            }
            if (certs.isEmpty()) {
                throw new CertificateException("no certificate in it");
            }
            return certs;
        } catch (CertificateException e) {
            throw new IOException(what + ": " + file + " is not a PEM certificate (-----BEGIN CERTIFICATE-----): "
                    + e.getMessage(), e);
        }
    }

    private static PrivateKey privateKey(Path file, String what) throws IOException {
        String text = new String(readable(file, what), StandardCharsets.US_ASCII);
        Matcher m = PEM_KEY.matcher(text);
        if (!m.find()) {
            throw new IOException(what + ": " + file + " holds no PEM private key (-----BEGIN PRIVATE KEY-----)");
        }
        if (!m.group(1).equals("PRIVATE KEY")) {
            throw new IOException(what + ": " + file + " holds a '" + m.group(1) + "'; the proxy reads unencrypted"
                    + " PKCS#8 keys only (-----BEGIN PRIVATE KEY-----): convert it with"
                    + " 'openssl pkcs8 -topk8 -nocrypt -in " + file + " -out proxy.key'");
        }
        byte[] der;
        try {
            der = Base64.getMimeDecoder().decode(m.group(2));
        } catch (IllegalArgumentException e) {
            throw new IOException(what + ": " + file + ": bad base64 in the PEM key", e);
        }
        for (String algorithm : List.of("RSA", "EC", "Ed25519", "Ed448", "RSASSA-PSS")) {
            try {
                return KeyFactory.getInstance(algorithm).generatePrivate(new PKCS8EncodedKeySpec(der));
            } catch (InvalidKeySpecException | NoSuchAlgorithmException e) {
                // try the next algorithm
            }
        }
        throw new IOException(what + ": " + file + ": not an RSA, EC or EdDSA PKCS#8 key the JDK can read");
    }

    /** Whether {@code key} signs what {@code publicKey} verifies: a key file mixed up with another's certificate. */
    private static boolean matches(PrivateKey key, PublicKey publicKey) {
        String algorithm = switch (key.getAlgorithm()) {
            case "RSA" -> "SHA256withRSA";
            case "EC" -> "SHA256withECDSA";
            case "Ed25519", "Ed448", "EdDSA" -> key.getAlgorithm();
            default -> null;
        };
        if (algorithm == null || !key.getAlgorithm().equals(publicKey.getAlgorithm())) {
            return algorithm == null; // unknown kinds are left to the handshake
        }
        try {
            byte[] probe = "stockade".getBytes(StandardCharsets.US_ASCII);
            Signature sign = Signature.getInstance(algorithm);
            sign.initSign(key);
            sign.update(probe);
            byte[] signature = sign.sign();
            Signature verify = Signature.getInstance(algorithm);
            verify.initVerify(publicKey);
            verify.update(probe);
            return verify.verify(signature);
        } catch (GeneralSecurityException e) {
            return false;
        }
    }

    private static byte[] readable(Path file, String what) throws IOException {
        try {
            return Files.readAllBytes(file);
        } catch (IOException e) {
            throw new IOException(what + ": cannot read " + file + " (" + e.getClass().getSimpleName() + ")", e);
        }
    }
}
