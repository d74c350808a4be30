package io.stockade.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/** Reads a policy's {@code backend} block. */
final class BackendReader {

    private BackendReader() {
    }

    /**
     * @param path  the policy's path template, if it was valid
     * @param scope the policy's scope template, if it was valid
     */
    static Optional<BackendConfig> read(Field field, Optional<PathTemplate> path, Optional<ScopeTemplate> scope,
                                        Optional<Set<String>> methods, Optional<Policy.Fence> fence) {
        return field.mapping().flatMap(backend -> backend
                .required("type", type -> Values.keyword(type, "backend type", Vocabulary.BACKEND_TYPES))
                .flatMap(type -> switch (type) {
                    case "file" -> file(backend);
                    case "postgres" -> PostgresBackendReader.read(backend, path, methods, fence);
                    default -> http(backend, path, scope);
                }));
    }

    private static Optional<BackendConfig> file(Mapping backend) {
        backend.allowOnly(Vocabulary.FILE_BACKEND_KEYS);
        return backend.required("root", Values::path).map(BackendConfig.File::new);
    }

    private static Optional<BackendConfig> http(Mapping backend, Optional<PathTemplate> path,
                                                Optional<ScopeTemplate> scope) {
        backend.allowOnly(Vocabulary.HTTP_BACKEND_KEYS);
        Optional<URI> url = backend.required("url", Values::httpUrl);
        Optional<BackendConfig.Conditional> conditional = backend.optional("conditional",
                field -> conditional(field, path, scope), BackendConfig.Conditional.NONE);
        Optional<Duration> connectTimeout = backend.optional("connect-timeout", Values::duration,
                BackendConfig.Http.DEFAULT_CONNECT_TIMEOUT);
        Optional<Duration> timeout = backend.optional("timeout", Values::duration,
                BackendConfig.Http.DEFAULT_TIMEOUT);
        Optional<Duration> settle = backend.optional("settle", Values::duration, BackendConfig.Http.DEFAULT_SETTLE);
        Optional<Integer> maxConnections = backend.optional("max-connections",
                field -> Values.integer(field, 1, 10_000, "whole number"), BackendConfig.Http.DEFAULT_MAX_CONNECTIONS);
        if (!Values.allPresent(url, conditional, connectTimeout, timeout, settle, maxConnections)) {
            return Optional.empty();
        }
        return Optional.of(new BackendConfig.Http(url.get(), conditional.get(), connectTimeout.get(), timeout.get(),
                settle.get(), maxConnections.get()));
    }

    /** if-match guards one resource with its ETag, so the scope must name exactly one resource. */
    private static Optional<BackendConfig.Conditional> conditional(Field field, Optional<PathTemplate> path,
                                                                   Optional<ScopeTemplate> scope) {
        Optional<BackendConfig.Conditional> conditional =
                Values.keyword(field, "value", Vocabulary.CONDITIONALS);
        if (conditional.equals(Optional.of(BackendConfig.Conditional.IF_MATCH))
                && path.isPresent() && scope.isPresent()) {
            List<String> unused = path.get().variables().stream()
                    .filter(variable -> !scope.get().variables().contains(variable))
                    .map(variable -> "{" + variable + "}")
                    .toList();
            if (!unused.isEmpty()) {
                field.error("if-match needs a scope that uses every variable of the path template, but scope '"
                        + scope.get() + "' does not use " + String.join(", ", unused) + " of path " + path.get()
                        + ": an ETag is per resource; a scope covering several resources cannot be guarded by"
                        + " one ETag");
                return Optional.empty();
            }
        }
        return conditional;
    }
}
