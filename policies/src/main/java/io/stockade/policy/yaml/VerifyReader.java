package io.stockade.policy.yaml;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import io.stockade.policy.ClientTls;
import io.stockade.policy.Datasource;
import io.stockade.policy.TokenVerification;

/** Reads a {@code fence.verify} block: one method and key list per verifier kind. */
final class VerifyReader {
    private static final Pattern KEY_ID = Pattern.compile("[A-Za-z0-9._-]{1,64}");
    /** A namespace is a DNS label (RFC 1123). */
    private static final Pattern NAMESPACE = Pattern.compile("[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?");
    /** The start of a Lease name (a DNS subdomain): what may come before the scope. */
    private static final Pattern LEASE_PREFIX = Pattern.compile("[a-z0-9][-a-z0-9.]{0,251}");
    /** {@code host[:port]} of a ZooKeeper server: a host name, an IPv4 address or a bracketed IPv6 address. */
    private static final Pattern ZK_SERVER = Pattern.compile(
            "(?<host>[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?|\\[[0-9A-Fa-f:.]+\\])(:(?<port>[0-9]{1,5}))?");
    /**
     * The start of a lock path: absolute, no empty, {@code .} or {@code ..} segment, none of the characters ZooKeeper
     * refuses in a path (controls, U+FFF0 to U+FFFF); a trailing {@code /} is allowed (the scope follows it).
     */
    private static final Pattern ZK_PREFIX = Pattern.compile(
            "/|(/(?!\\.{1,2}(/|$))[^/\\x00-\\x1f\\x7f-\\x9f\\ud800-\\uf8ff\\ufff0-\\uffff]+)+/?");
    /** A DynamoDB table name, as DynamoDB allows it. */
    private static final Pattern DYNAMODB_TABLE = Pattern.compile("[A-Za-z0-9_.-]{3,255}");
    /** An AWS region name: lowercase words and a number, e.g. {@code eu-west-1}, {@code us-gov-east-1}. */
    private static final Pattern AWS_REGION = Pattern.compile("[a-z]{2,}(-[a-z0-9]+)+");
    private static final Pattern TABLE = Pattern.compile("([a-z_][a-z0-9_]*\\.)?[a-z_][a-z0-9_]*");

    private VerifyReader() {
    }

    static Optional<TokenVerification> read(Field field) {
        return field.mapping().flatMap(verify -> verify
                .required("kind", kind -> Values.keyword(kind, "verifier kind", Vocabulary.VERIFY_KINDS))
                .flatMap(kind -> switch (kind) {
                    case "etcd" -> etcd(verify);
                    case "postgres" -> postgres(verify);
                    case "kubernetes" -> kubernetes(verify);
                    case "redis" -> redis(verify);
                    case "zookeeper" -> zookeeper(verify);
                    case "consul" -> consul(verify);
                    case "dynamodb" -> dynamodb(verify);
                    default -> hmac(verify);
                }));
    }

    private static Optional<TokenVerification> etcd(Mapping verify) {
        verify.allowOnly(Vocabulary.ETCD_VERIFY_KEYS);
        Optional<List<URI>> endpoints = verify.required("endpoints", StoreReader::endpoints);
        Optional<String> prefix = verify.optional("prefix", Values::text, "");
        Optional<Duration> timeout = verify.optional("timeout", StoreReader::etcdTimeout,
                TokenVerification.Etcd.DEFAULT_TIMEOUT);
        Optional<StoreReader.EtcdAccess> access = StoreReader.etcdAccess(verify, endpoints);
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        if (!Values.allPresent(endpoints, prefix, timeout, access, cache)) {
            return Optional.empty();
        }
        StoreReader.EtcdAccess a = access.get();
        return Optional.of(new TokenVerification.Etcd(endpoints.get(), prefix.get(), timeout.get(), a.username(),
                a.password(), a.passwordFile(), a.tls(), cache.get()));
    }

    private static Optional<TokenVerification> postgres(Mapping verify) {
        verify.allowOnly(Vocabulary.POSTGRES_VERIFY_KEYS);
        Optional<Datasource> datasource = verify.required("datasource", DatasourceReader::read);
        Optional<String> table = verify.optional("table", f -> Values.matching(f, TABLE, "is not a table name: use"
                + " lower-case letters, digits and '_', optionally schema-qualified (schema.table)"),
                TokenVerification.DEFAULT_LEASE_TABLE);
        Optional<String> prefix = verify.optional("prefix", Values::text, "");
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        if (!Values.allPresent(datasource, table, prefix, cache)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.Postgres(datasource.get(), table.get(), prefix.get(), cache.get()));
    }

    private static Optional<TokenVerification> kubernetes(Mapping verify) {
        verify.allowOnly(Vocabulary.KUBERNETES_VERIFY_KEYS);
        Optional<URI> apiServer = verify.optional("api-server", Values::httpUrl,
                TokenVerification.Kubernetes.DEFAULT_API_SERVER);
        Optional<String> namespace = verify.required("namespace", f -> Values.matching(f, NAMESPACE, "is not a"
                + " namespace: use at most 63 lower-case letters, digits and '-', starting and ending with a letter"
                + " or digit"));
        Optional<String> prefix = verify.optional("prefix", f -> Values.matching(f, LEASE_PREFIX, "cannot start a"
                + " Lease name: use lower-case letters, digits, '-' and '.', starting with a letter or digit"), "");
        Optional<Path> tokenFile = verify.optional("token-file", Values::path,
                TokenVerification.Kubernetes.DEFAULT_TOKEN_FILE);
        Optional<Optional<ClientTls>> tls = verify.optional("tls", f -> ClientTlsReader.read(f).flatMap(t -> {
            if (apiServer.isPresent() && !apiServer.get().getScheme().equalsIgnoreCase("https")) {
                f.error("tls applies to an https:// api-server, but it is " + apiServer.get() + ": write https:// or"
                        + " remove tls");
                return Optional.empty();
            }
            return Optional.of(Optional.of(t));
        }), Optional.empty());
        Optional<Duration> timeout = verify.optional("timeout", Values::duration,
                TokenVerification.Kubernetes.DEFAULT_TIMEOUT);
        Optional<Duration> skew = verify.optional("clock-skew", Values::duration,
                TokenVerification.Kubernetes.DEFAULT_CLOCK_SKEW);
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        if (!Values.allPresent(apiServer, namespace, prefix, tokenFile, tls, timeout, skew, cache)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.Kubernetes(apiServer.get(), namespace.get(), prefix.get(),
                tokenFile.get(), tls.get().orElse(null), timeout.get(), skew.get(), cache.get()));
    }

    private static Optional<TokenVerification> redis(Mapping verify) {
        verify.allowOnly(Vocabulary.REDIS_VERIFY_KEYS);
        Optional<URI> url = verify.required("url", VerifyReader::redisUrl);
        Optional<String> prefix = verify.optional("prefix", Values::text, "");
        Optional<Duration> timeout = verify.optional("timeout", Values::duration,
                TokenVerification.Redis.DEFAULT_TIMEOUT);
        Optional<Optional<String>> username = verify.optional("username", Values::text);
        Optional<Optional<String>> password = verify.optional("password", Values::text);
        Optional<Optional<Path>> passwordFile = verify.optional("password-file", Values::path);
        Optional<Optional<ClientTls>> tls = verify.optional("tls", f -> ClientTlsReader.read(f).flatMap(t -> {
            if (url.isPresent() && !url.get().getScheme().equalsIgnoreCase("rediss")) {
                f.error("tls applies to a rediss:// url, but it is " + url.get() + ": write rediss:// or remove tls");
                return Optional.empty();
            }
            return Optional.of(Optional.of(t));
        }), Optional.empty());
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        boolean secret = Values.allPresent(username, password, passwordFile);
        if (secret && password.get().isPresent() && passwordFile.get().isPresent()) {
            verify.required("password").ifPresent(f -> f.error("give either password or password-file, not both"));
            secret = false;
        } else if (secret && username.get().isPresent() && password.get().isEmpty()
                && passwordFile.get().isEmpty()) {
            verify.required("username").ifPresent(f -> f.error("a Redis user authenticates with a password: give"
                    + " password (e.g. ${REDIS_PASSWORD}) or password-file"));
            secret = false;
        }
        if (!secret || !Values.allPresent(url, prefix, timeout, tls, cache)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.Redis(url.get(), prefix.get(), timeout.get(),
                username.get().orElse(null), password.get().orElse(null), passwordFile.get().orElse(null),
                tls.get().orElse(null), cache.get()));
    }

    /**
     * {@code redis://host[:port][/db]} or {@code rediss://…} (TLS). Credentials in the URL are refused: the URL is
     * shown in {@code GET /admin/policies} and in messages, the {@code password} key is redacted.
     */
    private static Optional<URI> redisUrl(Field field) {
        return Values.text(field).flatMap(text -> Values.uri(text, field).flatMap(uri -> {
            String problem = null;
            if (uri.getScheme() == null || !uri.getScheme().matches("(?i)rediss?")) {
                problem = "expected redis://host:port or rediss://host:port (TLS), got '" + text + "'";
            } else if (uri.getRawUserInfo() != null) {
                problem = "URL '" + text.replace(uri.getRawUserInfo() + "@", "…@") + "' carries credentials: give"
                        + " username and password (e.g. ${REDIS_PASSWORD}) or password-file instead (the URL is"
                        + " shown in GET /admin/policies and in messages)";
            } else if (uri.getHost() == null) {
                problem = "URL '" + text + "' has no host (or a host name with characters a URL cannot hold)";
            } else if (uri.getPort() == 0 || uri.getPort() > 65535) {
                problem = "the port of '" + text + "' must be 1..65535 (6379 when left out)";
            } else if (uri.getRawQuery() != null || uri.getRawFragment() != null) {
                problem = "URL '" + text + "' must not have a query or fragment";
            } else if (uri.getPath() != null && !uri.getPath().isEmpty() && !uri.getPath().equals("/")
                    && !uri.getPath().matches("/(0|[1-9][0-9]{0,4})")) {
                problem = "the path of '" + text + "' must be a database number (redis://host:6379/0), or none";
            }
            if (problem != null) {
                field.error(problem);
                return Optional.empty();
            }
            return Optional.of(uri);
        }));
    }

    private static Optional<TokenVerification> zookeeper(Mapping verify) {
        verify.allowOnly(Vocabulary.ZOOKEEPER_VERIFY_KEYS);
        Optional<List<String>> servers = verify.required("servers", VerifyReader::zkServers);
        Optional<String> prefix = verify.optional("prefix", f -> Values.matching(f, ZK_PREFIX, "is not the start of"
                + " a ZooKeeper path: write an absolute path such as /locks/ (starting with '/', no '//', '.' or '..'"
                + " segment, no control character)"), TokenVerification.ZooKeeper.DEFAULT_PREFIX);
        Optional<Duration> timeout = verify.optional("timeout", Values::duration,
                TokenVerification.ZooKeeper.DEFAULT_TIMEOUT);
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        if (!Values.allPresent(servers, prefix, timeout, cache)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.ZooKeeper(servers.get(), prefix.get(), timeout.get(), cache.get()));
    }

    /** A list of {@code host[:port]}, or the same comma-separated in one string (a ZooKeeper connect string). */
    private static Optional<List<String>> zkServers(Field field) {
        if (field.isScalar()) {
            return Values.text(field).flatMap(text -> {
                List<String> servers = new ArrayList<>();
                for (String part : text.split(",", -1)) {
                    Optional<String> server = zkServer(part.strip(), field);
                    if (server.isEmpty()) {
                        return Optional.empty();
                    }
                    servers.add(server.get());
                }
                return Optional.of(servers);
            });
        }
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("list at least one server, e.g. 127.0.0.1:2181");
                return Optional.empty();
            }
            List<String> servers = new ArrayList<>();
            boolean ok = true;
            for (Field item : items) {
                Optional<String> server = Values.text(item).flatMap(text -> zkServer(text, item));
                ok &= server.isPresent();
                server.ifPresent(servers::add);
            }
            return ok ? Optional.of(servers) : Optional.empty();
        });
    }

    private static Optional<String> zkServer(String text, Field field) {
        var m = ZK_SERVER.matcher(text);
        if (!m.matches()) {
            field.error("expected host:port of a ZooKeeper server (e.g. 127.0.0.1:2181), got '" + text + "'"
                    + (text.contains("/") ? ": no URL scheme and no chroot path (write the path in prefix)" : ""));
            return Optional.empty();
        }
        if (m.group("port") == null) {
            return Optional.of(text + ":" + TokenVerification.ZooKeeper.DEFAULT_PORT);
        }
        int port = Integer.parseInt(m.group("port"));
        if (port < 1 || port > 65535) {
            field.error("the port of '" + text + "' must be 1..65535 (" + TokenVerification.ZooKeeper.DEFAULT_PORT
                    + " when left out)");
            return Optional.empty();
        }
        return Optional.of(text);
    }

    private static Optional<TokenVerification> consul(Mapping verify) {
        verify.allowOnly(Vocabulary.CONSUL_VERIFY_KEYS);
        Optional<URI> url = verify.required("url", f -> Values.httpUrl(f).flatMap(u -> {
            if (u.getRawUserInfo() != null) {
                f.error("URL '" + u.toString().replace(u.getRawUserInfo() + "@", "…@") + "' carries credentials:"
                        + " give the ACL token as token (e.g. ${CONSUL_HTTP_TOKEN}) or token-file instead (the URL is"
                        + " shown in GET /admin/policies and in messages)");
                return Optional.empty();
            }
            String path = u.getRawPath();
            if (path != null && !path.isEmpty() && !path.equals("/")) {
                f.error("URL '" + u + "' must not have a path: give the agent's address (e.g. http://127.0.0.1:8500),"
                        + " the proxy adds /v1/kv/…");
                return Optional.empty();
            }
            return Optional.of(u);
        }));
        Optional<String> prefix = verify.optional("prefix", f -> Values.text(f).flatMap(p -> {
            if (p.startsWith("/")) {
                f.error("'" + p + "' starts with '/': Consul KV keys do not (write e.g. locks/)");
                return Optional.empty();
            }
            if (p.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
                f.error("'" + p.replaceAll("\\p{Cntrl}", "?") + "' holds a control character");
                return Optional.empty();
            }
            return Optional.of(p);
        }), "");
        Optional<Optional<String>> token = verify.optional("token", Values::text);
        Optional<Optional<Path>> tokenFile = verify.optional("token-file", Values::path);
        Optional<Optional<ClientTls>> tls = verify.optional("tls", f -> ClientTlsReader.read(f).flatMap(t -> {
            if (url.isPresent() && !url.get().getScheme().equalsIgnoreCase("https")) {
                f.error("tls applies to an https:// url, but it is " + url.get() + ": write https:// or remove tls");
                return Optional.empty();
            }
            return Optional.of(Optional.of(t));
        }), Optional.empty());
        Optional<Duration> timeout = verify.optional("timeout", Values::duration,
                TokenVerification.Consul.DEFAULT_TIMEOUT);
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        boolean secret = Values.allPresent(token, tokenFile);
        if (secret && token.get().isPresent() && tokenFile.get().isPresent()) {
            verify.required("token").ifPresent(f -> f.error("give either token or token-file, not both"));
            secret = false;
        }
        if (!secret || !Values.allPresent(url, prefix, tls, timeout, cache)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.Consul(url.get(), prefix.get(), token.get().orElse(null),
                tokenFile.get().orElse(null), tls.get().orElse(null), timeout.get(), cache.get()));
    }

    private static Optional<TokenVerification> dynamodb(Mapping verify) {
        verify.allowOnly(Vocabulary.DYNAMODB_VERIFY_KEYS);
        Optional<String> table = verify.required("table", f -> Values.text(f).flatMap(t -> {
            if (!DYNAMODB_TABLE.matcher(t).matches()) {
                f.error("'" + t.replaceAll("\\p{Cntrl}", "?") + "' is not a DynamoDB table name (3 to 255 of"
                        + " A-Z a-z 0-9 _ . -)");
                return Optional.empty();
            }
            return Optional.of(t);
        }));
        Optional<String> prefix = verify.optional("prefix", f -> Values.text(f).flatMap(p -> {
            if (p.chars().anyMatch(c -> c < 0x20 || c == 0x7f)) {
                f.error("'" + p.replaceAll("\\p{Cntrl}", "?") + "' holds a control character");
                return Optional.empty();
            }
            return Optional.of(p);
        }), "");
        Optional<String> region = verify.required("region", f -> Values.text(f).flatMap(r -> {
            if (!AWS_REGION.matcher(r).matches()) {
                f.error("'" + r.replaceAll("\\p{Cntrl}", "?") + "' is not an AWS region name (e.g. eu-west-1)");
                return Optional.empty();
            }
            return Optional.of(r);
        }));
        Optional<Optional<URI>> endpoint = verify.optional("endpoint", f -> Values.httpUrl(f).flatMap(u -> {
            if (u.getRawUserInfo() != null) {
                f.error("URL '" + u.toString().replace(u.getRawUserInfo() + "@", "…@") + "' carries credentials:"
                        + " give access-key and secret-key instead");
                return Optional.empty();
            }
            String path = u.getRawPath();
            if ((path != null && !path.isEmpty() && !path.equals("/")) || u.getRawQuery() != null) {
                f.error("URL '" + u + "' must not have a path or query: give the endpoint's address (e.g."
                        + " http://127.0.0.1:8000)");
                return Optional.empty();
            }
            return Optional.of(Optional.of(u));
        }), Optional.empty());
        Optional<Optional<String>> accessKey = verify.optional("access-key", Values::text);
        Optional<Optional<String>> secretKey = verify.optional("secret-key", Values::text);
        Optional<Duration> timeout = verify.optional("timeout", Values::duration,
                TokenVerification.DynamoDb.DEFAULT_TIMEOUT);
        Optional<TokenVerification.Cache> cache = verify.optional("cache", VerifyReader::cache,
                TokenVerification.Cache.DEFAULT);
        boolean keys = Values.allPresent(accessKey, secretKey);
        if (keys && accessKey.get().isPresent() != secretKey.get().isPresent()) {
            String given = accessKey.get().isPresent() ? "access-key" : "secret-key";
            verify.required(given).ifPresent(f -> f.error("give access-key and secret-key together, or neither"
                    + " (the AWS SDK's default credentials chain: environment, profile, web identity, instance"
                    + " role)"));
            keys = false;
        }
        if (!keys || !Values.allPresent(table, prefix, region, endpoint, timeout, cache)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.DynamoDb(table.get(), prefix.get(), region.get(),
                endpoint.get().orElse(null), accessKey.get().orElse(null), secretKey.get().orElse(null),
                timeout.get(), cache.get()));
    }

    private static Optional<TokenVerification> hmac(Mapping verify) {
        verify.allowOnly(Vocabulary.HMAC_VERIFY_KEYS);
        Optional<List<TokenVerification.SharedKey>> keys = verify.required("keys", VerifyReader::keys);
        Optional<String> header = verify.optional("header", Values::headerName,
                TokenVerification.DEFAULT_SIGNATURE_HEADER);
        Optional<Duration> skew = verify.optional("clock-skew", Values::duration,
                TokenVerification.Hmac.DEFAULT_CLOCK_SKEW);
        if (!Values.allPresent(keys, header, skew)) {
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.Hmac(keys.get(), header.get(), skew.get()));
    }

    private static Optional<List<TokenVerification.SharedKey>> keys(Field field) {
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("list at least one key: {id: k1, key: ${STOCKADE_FENCE_KEY}}");
                return Optional.empty();
            }
            Map<String, String> owners = new HashMap<>();
            List<TokenVerification.SharedKey> keys = new ArrayList<>();
            boolean valid = true;
            for (Field item : items) {
                Optional<TokenVerification.SharedKey> key = item.mapping().flatMap(k -> key(item, k, owners));
                key.ifPresent(keys::add);
                valid &= key.isPresent();
            }
            return valid ? Optional.of(keys) : Optional.empty();
        });
    }

    private static Optional<TokenVerification.SharedKey> key(Field item, Mapping key, Map<String, String> owners) {
        key.allowOnly(Vocabulary.HMAC_KEY_KEYS);
        Optional<String> id = key.required("id", f -> Values.matching(f, KEY_ID, "is not a key id: use 1 to 64"
                + " letters, digits, '.', '_' and '-'").flatMap(text -> {
                    String owner = owners.putIfAbsent(text, item.path());
                    if (owner != null) {
                        f.error("key id '" + text + "' is already used by " + owner);
                        return Optional.empty();
                    }
                    return Optional.of(text);
                }));
        Optional<Optional<String>> text = key.optional("key", f -> Values.text(f).flatMap(k -> {
            if (k.length() < TokenVerification.SharedKey.MIN_LENGTH) {
                f.error("a key must have at least " + TokenVerification.SharedKey.MIN_LENGTH + " characters, got "
                        + k.length() + " (make one with: openssl rand -base64 32)");
                return Optional.empty();
            }
            return Optional.of(Optional.of(k));
        }), Optional.empty());
        Optional<Optional<Path>> file = key.optional("key-file", Values::path);
        if (!Values.allPresent(id, text, file)) {
            return Optional.empty();
        }
        if (text.get().isPresent() == file.get().isPresent()) {
            item.error("give exactly one of key (e.g. ${STOCKADE_FENCE_KEY}) and key-file");
            return Optional.empty();
        }
        return Optional.of(new TokenVerification.SharedKey(id.get(), text.get().orElse(null),
                file.get().orElse(null)));
    }

    private static Optional<TokenVerification.Cache> cache(Field field) {
        return field.mapping().flatMap(cache -> {
            cache.allowOnly(Vocabulary.VERIFY_CACHE_KEYS);
            Optional<Boolean> enabled = cache.optional("enabled", Values::bool, true);
            Optional<Duration> ttl = cache.optional("ttl", Values::duration, TokenVerification.Cache.DEFAULT.ttl());
            Optional<Integer> maxEntries = cache.optional("max-entries",
                    f -> Values.integer(f, 1, Integer.MAX_VALUE, "number of verdicts"),
                    (int) TokenVerification.Cache.DEFAULT.maxEntries());
            if (!Values.allPresent(enabled, ttl, maxEntries)) {
                return Optional.empty();
            }
            return Optional.of(new TokenVerification.Cache(enabled.get(), ttl.get(), maxEntries.get()));
        });
    }
}
