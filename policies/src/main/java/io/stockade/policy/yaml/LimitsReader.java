package io.stockade.policy.yaml;

import java.time.Duration;
import java.util.Optional;

import io.stockade.policy.Policy;
import io.stockade.policy.ServerConfig;

/**
 * Reads the two {@code limits} blocks: the listener's ({@code server.limits}), which bound what the HTTP server
 * parses before any policy is known, and a policy's ({@code policies[i].limits}), which the proxy checks once the
 * policy is known. Which bound lives where is decided by who can enforce it; the reference explains it.
 */
final class LimitsReader {
    /** A request line or header block smaller than this cannot hold an ordinary request. */
    private static final long MIN_HEAD_BYTES = 256;
    /** Larger heads than this only serve an attacker (and Helidon counts them in an int). */
    private static final long MAX_HEAD_BYTES = 1L << 20;

    private LimitsReader() {
    }

    static Optional<ServerConfig.Limits> server(Field field) {
        return field.mapping().flatMap(limits -> {
            limits.allowOnly(Vocabulary.SERVER_LIMITS_KEYS);
            ServerConfig.Limits d = ServerConfig.Limits.defaults();
            Optional<Long> requestLine = limits.optional("max-request-line-bytes",
                    f -> Values.size(f, MIN_HEAD_BYTES, MAX_HEAD_BYTES), (long) d.maxRequestLineBytes());
            Optional<Long> headers = limits.optional("max-header-bytes",
                    f -> Values.size(f, MIN_HEAD_BYTES, MAX_HEAD_BYTES), (long) d.maxHeaderBytes());
            Optional<Long> body = limits.optional("max-body-bytes", Values::size, d.maxBodyBytes());
            Optional<Duration> headerTimeout = limits.optional("header-timeout", Values::duration, d.headerTimeout());
            Optional<Duration> idleTimeout = limits.optional("idle-timeout", Values::duration, d.idleTimeout());
            Optional<Duration> readTimeout = limits.optional("read-timeout", Values::duration, d.readTimeout());
            if (!Values.allPresent(requestLine, headers, body, headerTimeout, idleTimeout, readTimeout)) {
                return Optional.empty();
            }
            return Optional.of(new ServerConfig.Limits(requestLine.get().intValue(), headers.get().intValue(),
                    body.get(), headerTimeout.get(), idleTimeout.get(), readTimeout.get()));
        });
    }

    static Optional<Policy.Limits> policy(Field field) {
        return field.mapping().flatMap(limits -> {
            limits.allowOnly(Vocabulary.POLICY_LIMITS_KEYS);
            Policy.Limits d = Policy.Limits.defaults();
            Optional<Long> headers = limits.optional("max-header-bytes",
                    f -> Values.size(f, MIN_HEAD_BYTES, MAX_HEAD_BYTES), d.maxHeaderBytes());
            Optional<Long> body = limits.optional("max-body-bytes", Values::size, d.maxBodyBytes());
            Optional<Duration> bodyTimeout = limits.optional("body-timeout", Values::duration, d.bodyTimeout());
            Optional<Integer> concurrent = limits.optional("max-concurrent-per-scope",
                    f -> Values.integer(f, 1, 1_000_000, "whole number"), d.maxConcurrentPerScope());
            Optional<Long> scopeBytes = limits.optional("max-scope-bytes", f -> Values.size(f, 16, 1L << 16),
                    (long) d.maxScopeBytes());
            Optional<Long> maxScopes = limits.optional("max-scopes",
                    f -> Values.longInteger(f, 1, Long.MAX_VALUE, "whole number"), d.maxScopes());
            if (!Values.allPresent(headers, body, bodyTimeout, concurrent, scopeBytes, maxScopes)) {
                return Optional.empty();
            }
            return Optional.of(new Policy.Limits(headers.get(), body.get(), bodyTimeout.get(), concurrent.get(),
                    scopeBytes.get().intValue(), maxScopes.get()));
        });
    }
}
