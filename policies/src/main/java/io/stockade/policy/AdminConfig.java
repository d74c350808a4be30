package io.stockade.policy;

import java.nio.file.Path;

import org.jspecify.annotations.Nullable;

/**
 * The admin endpoints ({@code admin} block): fence-state operations over HTTP, authenticated by a bearer token.
 * Exactly one of {@code token} and {@code tokenFile} is set. Without an {@code admin} block the endpoints are off.
 *
 * @param token     the bearer token itself (write it as {@code ${ENV}} so it stays out of the file), or {@code null}
 * @param tokenFile a file whose first line is the bearer token (read at start), or {@code null}
 */
public record AdminConfig(@Nullable String token, @Nullable Path tokenFile) {
    public AdminConfig {
        if ((token == null) == (tokenFile == null)) {
            throw new IllegalArgumentException("exactly one of token and tokenFile");
        }
    }

    @Override
    public String toString() {
        // Never print the token.
        return "AdminConfig[" + (token != null ? "token=***" : "tokenFile=" + tokenFile) + "]";
    }
}
