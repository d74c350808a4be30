package io.stockade.proxy.io;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * Secrets kept in files whose configuration key promises "the first line" (listener key-store, etcd and Redis
 * passwords, the admin token, HMAC keys, the Consul ACL token), so that a trailing newline written by an editor or
 * {@code echo} is not part of the secret. Two keys read the whole file, stripped, as their reference says: a
 * datasource's {@code password-file} and the Kubernetes verifier's {@code token-file}.
 */
public final class SecretFiles {

    private SecretFiles() {
    }

    /** The file's first line without surrounding white space; empty when the file or its first line is. */
    public static String firstLine(Path file) throws IOException {
        return Files.readAllLines(file, StandardCharsets.UTF_8).stream().findFirst().orElse("").strip();
    }

    /**
     * The file's first line exactly as written (a password may begin or end with a space).
     *
     * @param what what the file is for, to begin the error message (e.g. the configuration key)
     * @throws IOException naming {@code what} and the file when it cannot be read or its first line is empty
     */
    public static String password(Path file, String what) throws IOException {
        List<String> lines;
        try {
            lines = Files.readAllLines(file, StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new IOException(what + ": cannot read " + file + " (" + e.getClass().getSimpleName() + ")", e);
        }
        if (lines.isEmpty() || lines.getFirst().isEmpty()) {
            throw new IOException(what + ": " + file + " is empty (its first line is the password)");
        }
        return lines.getFirst();
    }
}
