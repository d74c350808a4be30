package io.stockade.proxy.tls;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import io.stockade.policy.ClientTls;
import io.stockade.testing.TestPki;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Reading the PEM files of a {@code tls} block: what works, and that every bad file is named with its problem. */
class ClientTlsFilesTest {
    @TempDir
    static Path dir;
    static TestPki pki;
    static TestPki.Leaf leaf;
    static TestPki.Leaf other;

    @BeforeAll
    static void pki() {
        pki = TestPki.create(dir.resolve("ca"));
        leaf = pki.leaf("a", "DNS:a.example");
        other = pki.leaf("b", "DNS:b.example");
    }

    static String failure(ClientTls tls) {
        return assertThrows(IOException.class, () -> ClientTlsFiles.read(tls, "backend x tls")).getMessage();
    }

    @Test
    void aCaAndAMatchingPkcs8KeyAndCertificateMakeAContext() throws Exception {
        ClientTlsFiles files = ClientTlsFiles.read(leaf.clientTls(), "t");
        assertEquals(1, files.ca().size());
        assertEquals(1, files.chain().size());
        assertEquals("EC", files.key().getAlgorithm());
        assertNotNull(files.sslContext());
        assertTrue(ClientTlsFiles.read(new ClientTls(pki.ca(), null, null), "t").chain().isEmpty());
    }

    @Test
    void aKeyOfAnotherCertificateIsNamed() {
        String message = failure(new ClientTls(pki.ca(), leaf.cert(), other.key()));
        assertTrue(message.startsWith("backend x tls.key: " + other.key() + " is not the private key of the"
                + " certificate in " + leaf.cert()), message);
    }

    @Test
    void aTraditionalKeyIsRefusedWithTheConversion() throws Exception {
        Path key = Files.writeString(dir.resolve("ec.key"),
                "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n");
        String message = failure(new ClientTls(null, leaf.cert(), key));
        assertTrue(message.contains("holds a 'EC PRIVATE KEY'") && message.contains("openssl pkcs8 -topk8 -nocrypt"),
                message);
    }

    @Test
    void aFileWithoutACertificateIsNamed() throws Exception {
        Path notPem = Files.writeString(dir.resolve("ca-typo.pem"), "hello\n");
        String message = failure(new ClientTls(notPem, null, null));
        assertTrue(message.startsWith("backend x tls.ca: " + notPem + " is not a PEM certificate"), message);
        assertTrue(failure(new ClientTls(null, leaf.cert(), leaf.cert())).contains("holds no PEM private key"));
        assertTrue(failure(new ClientTls(dir.resolve("gone.pem"), null, null)).contains("cannot read"));
    }
}
