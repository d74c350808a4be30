package io.stockade.policy.yaml;

import java.net.URI;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.ClientTls;
import io.stockade.policy.PathTemplate;
import io.stockade.policy.Policy;
import io.stockade.policy.ScopeTemplate;

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
                    case "s3" -> s3(backend, scope);
                    default -> http(backend, path, scope, fence);
                }));
    }

    private static Optional<BackendConfig> file(Mapping backend) {
        backend.allowOnly(Vocabulary.FILE_BACKEND_KEYS);
        return backend.required("root", Values::path).map(BackendConfig.File::new);
    }

    private static Optional<BackendConfig> http(Mapping backend, Optional<PathTemplate> path,
                                                Optional<ScopeTemplate> scope, Optional<Policy.Fence> fence) {
        backend.allowOnly(Vocabulary.HTTP_BACKEND_KEYS);
        Optional<URI> url = backend.required("url", Values::httpUrl);
        Optional<BackendConfig.Conditional> conditional = backend.optional("conditional",
                field -> conditional(field, path, scope, fence), BackendConfig.Conditional.NONE);
        Optional<Duration> connectTimeout = backend.optional("connect-timeout", Values::duration,
                BackendConfig.Http.DEFAULT_CONNECT_TIMEOUT);
        Optional<Duration> timeout = backend.optional("timeout", Values::duration,
                BackendConfig.Http.DEFAULT_TIMEOUT);
        Optional<Duration> settle = backend.optional("settle", Values::duration, BackendConfig.Http.DEFAULT_SETTLE);
        Optional<Integer> maxConnections = backend.optional("max-connections",
                field -> Values.integer(field, 1, 10_000, "whole number"), BackendConfig.Http.DEFAULT_MAX_CONNECTIONS);
        Optional<Optional<ClientTls>> tls = tls(backend, url);
        if (!Values.allPresent(url, conditional, connectTimeout, timeout, settle, maxConnections, tls)) {
            return Optional.empty();
        }
        return Optional.of(new BackendConfig.Http(url.get(), conditional.get(), connectTimeout.get(), timeout.get(),
                settle.get(), maxConnections.get(), tls.get().orElse(null)));
    }

    /**
     * The s3 backend derives bucket and key itself (path-style or virtual-host-style), so the policy's scope is
     * a literal prefix of every scope it makes: {@code <scope>/<bucket>/<key>} or {@code <scope>/<bucket>/<prefix>}.
     */
    private static Optional<BackendConfig> s3(Mapping backend, Optional<ScopeTemplate> scope) {
        backend.allowOnly(Vocabulary.S3_BACKEND_KEYS);
        Optional<URI> endpoint = backend.required("endpoint", Values::httpUrl);
        Optional<String> region = backend.optional("region", Values::text, BackendConfig.S3.DEFAULT_REGION);
        Optional<String> accessKey = backend.required("access-key", Values::text);
        Optional<String> secretKey = backend.required("secret-key", Values::text);
        Optional<Boolean> pathStyle = backend.optional("path-style", Values::bool, true);
        Optional<Boolean> conditionalWrites = backend.optional("conditional-writes", Values::bool, true);
        Optional<BackendConfig.Auth> auth = backend.required("auth",
                field -> Values.keyword(field, "auth", Vocabulary.S3_AUTH));
        Optional<List<BackendConfig.Credentials>> clients = backend.optional("clients", BackendReader::credentials,
                List.of());
        Optional<String> virtualHost = backend.optional("virtual-host", Values::text, "");
        Optional<BackendConfig.FenceScope> fenceScope = backend.optional("fence-scope",
                field -> Values.keyword(field, "fence scope", Vocabulary.S3_FENCE_SCOPES),
                BackendConfig.FenceScope.OBJECT);
        Optional<Integer> prefixSegments = backend.optional("prefix-segments",
                field -> Values.integer(field, 1, 100, "whole number"), 1);
        Optional<Duration> timeout = backend.optional("timeout", Values::duration, BackendConfig.S3.DEFAULT_TIMEOUT);
        Optional<Integer> retries = backend.optional("retries",
                field -> Values.integer(field, 0, 20, "whole number"), BackendConfig.S3.DEFAULT_RETRIES);
        Optional<Integer> maxConnections = backend.optional("max-connections",
                field -> Values.integer(field, 1, 10_000, "whole number"), BackendConfig.S3.DEFAULT_MAX_CONNECTIONS);
        Optional<Optional<ClientTls>> tls = tls(backend, endpoint);
        Optional<Boolean> signedToken = backend.optional("signed-token", Values::bool, true);
        Optional<Boolean> tokenFromMetadata = backend.optional("token-from-metadata", Values::bool, false);
        Optional<BackendConfig.UnsignedReads> unsignedReads = backend.optional("unsigned-reads",
                field -> Values.keyword(field, "unsigned reads", Vocabulary.S3_UNSIGNED_READS),
                BackendConfig.UnsignedReads.REFUSE);
        Optional<Integer> etagCache = backend.optional("etag-cache",
                field -> Values.integer(field, 0, 10_000_000, "whole number"), 0);
        Optional<Set<String>> bucketWrites = backend.optional("bucket-writes", BackendReader::bucketWrites, Set.of());
        Optional<Boolean> distinctKeys = backend.optional("distinct-keys", Values::bool, false);
        boolean valid = true;
        if (etagCache.isPresent() && etagCache.get() > 0
                && !(conditionalWrites.equals(Optional.of(true))
                && fenceScope.equals(Optional.of(BackendConfig.FenceScope.OBJECT)))) {
            backend.required("etag-cache").ifPresent(field -> field.error("etag-cache remembers the ETag of each "
                    + "object's last conditional write, so it applies to the atomic class only (fence-scope: object "
                    + "and conditional-writes: true); write etag-cache: 0 or remove it"));
            valid = false;
        }
        if (scope.isPresent() && !scope.get().variables().isEmpty()) {
            backend.required("type").ifPresent(type -> type.error("an s3 policy's scope is a literal prefix such"
                    + " as 's3' (it was '" + scope.get() + "'): the s3 backend reads bucket and key itself and"
                    + " fences '<scope>/<bucket>/<key>' (fence-scope: object) or '<scope>/<bucket>/<prefix>'"
                    + " (fence-scope: prefix)"));
            valid = false;
        }
        if (auth.equals(Optional.of(BackendConfig.Auth.SIGV4)) && clients.equals(Optional.of(List.of()))) {
            backend.required("auth").ifPresent(field -> field.error("auth: sigv4 needs at least one entry in"
                    + " 'clients' (access-key and secret-key the proxy accepts); or write auth: none for a"
                    + " trusted network"));
            valid = false;
        }
        if (!valid || !Values.allPresent(endpoint, region, accessKey, secretKey, pathStyle, conditionalWrites, auth,
                clients, virtualHost, fenceScope, prefixSegments, timeout, retries, maxConnections, tls,
                signedToken, tokenFromMetadata, unsignedReads, etagCache, bucketWrites, distinctKeys)) {
            return Optional.empty();
        }
        return Optional.of(new BackendConfig.S3(endpoint.get(), region.get(), accessKey.get(), secretKey.get(),
                pathStyle.get(), conditionalWrites.get(), auth.get(), clients.get(),
                virtualHost.get().isEmpty() ? null : virtualHost.get(), fenceScope.get(), prefixSegments.get(),
                timeout.get(), retries.get(), maxConnections.get(), tls.get().orElse(null), signedToken.get(),
                tokenFromMetadata.get(), unsignedReads.get(), etagCache.get(), bucketWrites.get(),
                distinctKeys.get()));
    }

    /**
     * {@code bucket-writes}: the bucket-level writes an s3 policy forwards, each by its name (an unknown name is an
     * error listing the valid ones), each once.
     */
    private static Optional<Set<String>> bucketWrites(Field field) {
        return field.items().flatMap(items -> {
            Set<String> names = new LinkedHashSet<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<String> name = Values.keyword(item, "bucket write", BackendConfig.S3.BUCKET_WRITES);
                if (name.isPresent() && !names.add(name.get())) {
                    item.error(name.get() + " is listed twice");
                    valid = false;
                }
                valid &= name.isPresent();
            }
            return valid ? Optional.of(names) : Optional.empty();
        });
    }

    /**
     * The backend's {@code tls} block. It only means something for an {@code https://} upstream: on a plain
     * {@code http://} one it would look like protection while nothing is encrypted, so that is an error.
     */
    private static Optional<Optional<ClientTls>> tls(Mapping backend, Optional<URI> url) {
        return backend.optional("tls", field -> ClientTlsReader.read(field).flatMap(tls -> {
            if (url.isPresent() && !url.get().getScheme().equalsIgnoreCase("https")) {
                field.error("tls applies to an https:// upstream, but the upstream is " + url.get()
                        + ": write https:// or remove tls");
                return Optional.empty();
            }
            return Optional.of(Optional.of(tls));
        }), Optional.empty());
    }

    private static Optional<List<BackendConfig.Credentials>> credentials(Field field) {
        return field.items().flatMap(items -> {
            List<BackendConfig.Credentials> read = new ArrayList<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<BackendConfig.Credentials> one = item.mapping().flatMap(m -> {
                    m.allowOnly(Vocabulary.S3_CLIENT_KEYS);
                    Optional<String> key = m.required("access-key", Values::text);
                    Optional<String> secret = m.required("secret-key", Values::text);
                    return Values.allPresent(key, secret)
                            ? Optional.of(new BackendConfig.Credentials(key.get(), secret.get())) : Optional.empty();
                });
                one.ifPresent(read::add);
                valid &= one.isPresent();
            }
            return valid ? Optional.of(read) : Optional.empty();
        });
    }

    /**
     * if-match guards one resource with its ETag, so the scope must name exactly one resource, and a fenced write
     * must change only that one: a COPY or MOVE also writes its Destination, whose version an {@code If-Match} on
     * the source cannot make it conditional on.
     */
    private static Optional<BackendConfig.Conditional> conditional(Field field, Optional<PathTemplate> path,
                                                                   Optional<ScopeTemplate> scope,
                                                                   Optional<Policy.Fence> fence) {
        Optional<BackendConfig.Conditional> conditional =
                Values.keyword(field, "value", Vocabulary.CONDITIONALS);
        List<String> twoResources = fence.map(f -> Policy.DESTINATION_METHODS.stream()
                .filter(f.methods()::contains).sorted().toList()).orElse(List.of());
        if (conditional.equals(Optional.of(BackendConfig.Conditional.IF_MATCH)) && !twoResources.isEmpty()) {
            field.error("if-match makes a write conditional on the ETag of the one resource it names, but fence.methods"
                    + " has " + String.join(" and ", twoResources) + (twoResources.size() == 1
                    ? ", which also writes the resource its" : ", which also write the resource their")
                    + " Destination header names, and If-Match cannot make that write conditional on the"
                    + " destination's version; write conditional: none (serialized: the proxy holds both scopes) or"
                    + " take " + String.join(" and ", twoResources) + " out of fence.methods");
            return Optional.empty();
        }
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
