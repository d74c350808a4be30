package io.stockade.policy.yaml;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

import io.stockade.policy.ClientTls;

/**
 * Reads a {@code tls: {ca, cert, key}} block (the etcd store and verifier, the http and s3 backends). Each file must
 * be a readable file when the policy file loads, so a typo is reported at its line and column rather than as a
 * failed handshake later; what is inside is checked when the proxy opens the client.
 */
final class ClientTlsReader {
    private ClientTlsReader() {
    }

    static Optional<ClientTls> read(Field field) {
        return field.mapping().flatMap(tls -> {
            tls.allowOnly(Vocabulary.TLS_KEYS);
            Optional<Optional<Path>> ca = tls.optional("ca", ClientTlsReader::file, Optional.empty());
            Optional<Optional<Path>> cert = tls.optional("cert", ClientTlsReader::file, Optional.empty());
            Optional<Optional<Path>> key = tls.optional("key", ClientTlsReader::file, Optional.empty());
            if (!Values.allPresent(ca, cert, key)) {
                return Optional.empty();
            }
            if (cert.get().isPresent() != key.get().isPresent()) {
                tls.required(cert.get().isPresent() ? "key" : "cert"); // reports the missing one at the mapping
                return Optional.empty();
            }
            return Optional.of(new ClientTls(ca.get().orElse(null), cert.get().orElse(null), key.get().orElse(null)));
        });
    }

    private static Optional<Optional<Path>> file(Field field) {
        return Values.path(field).flatMap(path -> {
            if (!Files.isRegularFile(path)) {
                field.error("cannot read '" + path + "': " + (Files.exists(path) ? "not a regular file"
                        : "no such file") + " (a relative path resolves against the working directory)");
                return Optional.empty();
            }
            if (!Files.isReadable(path)) {
                field.error("cannot read '" + path + "': permission denied");
                return Optional.empty();
            }
            return Optional.of(Optional.of(path));
        });
    }
}
