package io.stockade.proxy.listener;

import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.Objects;
import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;

import io.stockade.policy.ServerConfig;
import io.stockade.proxy.io.SecretFiles;

/** The listener's TLS context, from the PKCS#12 key stores the policy file names. */
public final class ListenerTls {
    private ListenerTls() {
    }

    /**
     * Builds the SSL context.
     *
     * @throws IOException naming the file when a key store cannot be read, or its password is wrong
     */
    public static SSLContext context(ServerConfig.Tls tls) throws IOException {
        char[] password = password(tls);
        try {
            KeyManagerFactory keys = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
            keys.init(load(tls.keystore(), password), password);
            TrustManagerFactory trust = null;
            if (tls.truststore() != null) {
                trust = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                trust.init(load(tls.truststore(), password));
            }
            SSLContext context = SSLContext.getInstance("TLS");
            context.init(keys.getKeyManagers(), trust == null ? null : trust.getTrustManagers(), null);
            return context;
        } catch (GeneralSecurityException e) {
            throw new IOException("server.tls: " + e.getMessage(), e);
        }
    }

    private static KeyStore load(Path file, char[] password) throws IOException, GeneralSecurityException {
        KeyStore store = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(file)) {
            store.load(in, password);
        } catch (IOException e) {
            throw new IOException("server.tls: cannot read the PKCS#12 key store " + file + " (" + e.getMessage()
                    + "; a wrong password reads as a corrupt file)", e);
        }
        return store;
    }

    private static char[] password(ServerConfig.Tls tls) throws IOException {
        if (tls.password() != null) {
            return tls.password().toCharArray();
        }
        return SecretFiles.firstLine(Objects.requireNonNull(tls.passwordFile(),
                "the policy loader takes exactly one of password and password-file")).toCharArray();
    }
}
