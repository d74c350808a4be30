package io.stockade.policy.yaml;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Datasource;
import io.stockade.policy.Policy;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.SqlConfig;

/**
 * Every key and keyword of the policy file format in one place. The JSON schema test checks
 * {@code stockade-policy.schema.json} against these lists.
 */
final class Vocabulary {
    static final List<String> ROOT_KEYS = List.of("server", "store", "policies", "admin", "sql");
    static final List<String> SERVER_KEYS = List.of("host", "port", "tls", "limits", "management");
    static final List<String> MANAGEMENT_KEYS = List.of("host", "port");
    static final List<String> SERVER_LIMITS_KEYS = List.of("max-request-line-bytes", "max-header-bytes",
            "max-body-bytes", "header-timeout", "idle-timeout", "read-timeout");
    static final List<String> SERVER_TLS_KEYS = List.of("keystore", "password", "password-file", "truststore",
            "client-auth");
    static final List<String> MEMORY_STORE_KEYS = List.of("type", "journal", "compact-after", "max-scopes",
            "max-scope-memory", "heal-within");
    static final List<String> POSTGRES_STORE_KEYS = List.of("type", "datasource", "migrate", "cache");
    static final List<String> DATASOURCE_KEYS = List.of("url", "user", "password", "password-file", "pool-size",
            "statement-timeout", "connect-timeout", "statements");
    static final Map<String, Datasource.Statements> STATEMENTS = keywords(Datasource.Statements.class);
    static final List<String> ETCD_STORE_KEYS = List.of("type", "endpoints", "prefix", "timeout", "username",
            "password", "password-file", "tls", "cache");
    static final List<String> TLS_KEYS = List.of("ca", "cert", "key");
    static final List<String> CACHE_KEYS = List.of("enabled", "max-scopes");
    static final List<String> ADMIN_KEYS = List.of("token", "token-file");
    static final List<String> POLICY_KEYS = List.of("name", "match", "scope", "fence", "backend", "limits",
            "readiness");
    static final Map<String, Policy.Readiness> READINESS = keywords(Policy.Readiness.class);
    static final List<String> POLICY_LIMITS_KEYS = List.of("max-header-bytes", "max-body-bytes", "body-timeout",
            "max-concurrent-per-scope", "max-scope-bytes", "max-scopes");
    static final List<String> MATCH_KEYS = List.of("path", "methods");
    static final List<String> FENCE_KEYS = List.of("header", "methods", "missing", "equal", "mode", "max-advance",
            "first-token-max", "verify");
    static final List<String> VERIFY_KINDS = List.of("etcd", "postgres", "kubernetes", "redis", "zookeeper",
            "consul", "dynamodb", "hmac");
    static final List<String> ETCD_VERIFY_KEYS = List.of("kind", "endpoints", "prefix", "timeout", "username",
            "password", "password-file", "tls", "cache");
    static final List<String> POSTGRES_VERIFY_KEYS = List.of("kind", "datasource", "table", "prefix", "cache");
    static final List<String> KUBERNETES_VERIFY_KEYS = List.of("kind", "api-server", "namespace", "prefix",
            "token-file", "tls", "timeout", "clock-skew", "cache");
    static final List<String> REDIS_VERIFY_KEYS = List.of("kind", "url", "prefix", "username", "password",
            "password-file", "tls", "timeout", "cache");
    static final List<String> ZOOKEEPER_VERIFY_KEYS = List.of("kind", "servers", "prefix", "timeout", "cache");
    static final List<String> CONSUL_VERIFY_KEYS = List.of("kind", "url", "prefix", "token", "token-file", "tls",
            "timeout", "cache");
    static final List<String> DYNAMODB_VERIFY_KEYS = List.of("kind", "table", "prefix", "region", "endpoint",
            "access-key", "secret-key", "timeout", "cache");
    static final List<String> HMAC_VERIFY_KEYS = List.of("kind", "keys", "header", "clock-skew");
    static final List<String> HMAC_KEY_KEYS = List.of("id", "key", "key-file");
    static final List<String> VERIFY_CACHE_KEYS = List.of("enabled", "ttl", "max-entries");
    static final List<String> FILE_BACKEND_KEYS = List.of("type", "root");
    static final List<String> HTTP_BACKEND_KEYS =
            List.of("type", "url", "conditional", "connect-timeout", "timeout", "settle", "max-connections", "tls");
    static final List<String> POSTGRES_BACKEND_KEYS = List.of("type", "datasource", "fence", "migrate", "params",
            "statements", "check", "body-limit", "retries", "empty-get", "commit",
            "one-statement");
    static final List<String> PARAM_KEYS = List.of("from", "field", "type", "nullable", "precision",
            "scale");
    static final List<String> STATEMENT_KEYS = List.of("name", "sql");
    static final List<String> S3_BACKEND_KEYS = List.of("type", "endpoint", "region", "access-key", "secret-key",
            "path-style", "conditional-writes", "auth", "signed-token", "token-from-metadata", "unsigned-reads",
            "clients", "virtual-host", "fence-scope", "prefix-segments", "timeout", "retries", "etag-cache",
            "max-connections", "tls", "bucket-writes", "distinct-keys");
    static final List<String> SQL_KEYS = List.of("listen", "database", "fence-role", "schema", "secret-file",
            "direct-clients", "session-tokens", "admin-datasource", "policies");
    static final List<String> SQL_LISTEN_KEYS = List.of("host", "port", "tls", "startup-timeout");
    static final List<String> SQL_DATABASE_KEYS = List.of("host", "port", "name", "tls");
    static final List<String> SQL_POLICY_KEYS = List.of("name", "tables", "fence", "lock", "readiness");
    static final List<String> SQL_TABLE_KEYS = List.of("table", "scope");
    static final List<String> SQL_FENCE_KEYS = List.of("missing", "equal", "max-advance", "verify");
    static final Map<String, SqlConfig.DirectClients> DIRECT_CLIENTS = keywords(SqlConfig.DirectClients.class);
    static final Map<String, SqlConfig.SessionTokens> SESSION_TOKENS = keywords(SqlConfig.SessionTokens.class);
    static final List<String> S3_CLIENT_KEYS = List.of("access-key", "secret-key");

    /** The methods a postgres policy can declare statements for, in the order messages list them. */
    static final List<String> METHODS = List.of("GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS");

    /**
     * What {@code match.methods} and {@code fence.methods} take: an RFC 9110 method token, upper case only. Methods
     * are case-sensitive; the listener reads a request's method case-insensitively and forwards it upper-cased, so
     * only an upper-case name can ever meet a request.
     */
    static final Pattern METHOD_TOKEN = Pattern.compile("[!#$%&'*+.^_`|~0-9A-Z-]+");

    /**
     * The methods of the IANA HTTP Method Registry (RFC 9110, the WebDAV family, RFC 5789), in the order messages
     * list them. Any other token is taken as written, unless it is one edit away from one of these (a typo).
     */
    static final List<String> REGISTERED_METHODS = List.of("GET", "HEAD", "PUT", "POST", "PATCH", "DELETE", "OPTIONS",
            "TRACE", "CONNECT", "COPY", "MOVE", "MKCOL", "PROPFIND", "PROPPATCH", "LOCK", "UNLOCK", "SEARCH", "REPORT",
            "ACL", "BASELINE-CONTROL", "BIND", "CHECKIN", "CHECKOUT", "LABEL", "LINK", "MERGE", "MKACTIVITY",
            "MKCALENDAR", "MKREDIRECTREF", "MKWORKSPACE", "ORDERPATCH", "REBIND", "UNBIND", "UNCHECKOUT", "UNLINK",
            "UPDATE", "UPDATEREDIRECTREF", "VERSION-CONTROL");

    /**
     * Methods that change a resource named in their request body, which the proxy does not read: their write cannot
     * be fenced on the scope it changes, so no policy may take them. Each with why.
     */
    static final Map<String, String> BODY_NAMED_METHODS = Map.of(
            "BIND", "adds a binding named in its request body to another resource (RFC 5842)",
            "REBIND", "moves a binding named in its request body, removing it from another collection (RFC 5842)",
            "UNBIND", "removes the member its request body names (RFC 5842)",
            "MERGE", "merges, and may check in, the resource its request body names (RFC 3253)");

    /**
     * The methods {@code match.methods} may name that are not fenced unless {@code fence.methods} says so: those
     * RFC 9110 and the WebDAV RFCs define as safe (read-only). Every other method a policy names is fenced by
     * default.
     */
    static final Set<String> SAFE_METHODS = Set.of("GET", "HEAD", "OPTIONS", "TRACE", "PROPFIND", "REPORT",
            "SEARCH");

    static final List<String> STORE_TYPES = List.of("memory", "postgres", "etcd");
    static final List<String> BACKEND_TYPES = List.of("file", "http", "postgres", "s3");
    static final Map<String, Policy.MissingToken> MISSING = keywords(Policy.MissingToken.class);
    static final Map<String, Policy.EqualToken> EQUAL = keywords(Policy.EqualToken.class);
    static final Map<String, Policy.Mode> MODES = keywords(Policy.Mode.class);
    static final Map<String, ServerConfig.ClientAuth> CLIENT_AUTH = keywords(ServerConfig.ClientAuth.class);
    static final Map<String, BackendConfig.Conditional> CONDITIONALS = keywords(BackendConfig.Conditional.class);
    static final Map<String, BackendConfig.FenceMode> FENCE_MODES = keywords(BackendConfig.FenceMode.class);
    static final Map<String, BackendConfig.EmptyGet> EMPTY_GET = keywords(BackendConfig.EmptyGet.class);
    static final Map<String, BackendConfig.Commit> COMMITS = keywords(BackendConfig.Commit.class);
    static final Map<String, BackendConfig.ParamSource> PARAM_SOURCES = keywords(BackendConfig.ParamSource.class);
    static final Map<String, BackendConfig.ParamType> PARAM_TYPES = keywords(BackendConfig.ParamType.class);
    static final Map<String, BackendConfig.Auth> S3_AUTH = keywords(BackendConfig.Auth.class);
    static final Map<String, BackendConfig.FenceScope> S3_FENCE_SCOPES = keywords(BackendConfig.FenceScope.class);
    static final Map<String, BackendConfig.UnsignedReads> S3_UNSIGNED_READS =
            keywords(BackendConfig.UnsignedReads.class);

    private Vocabulary() {
    }

    /** The enum's constants by their spelling in the file: lower case, '-' for '_' (IF_MATCH is if-match). */
    private static <E extends Enum<E>> Map<String, E> keywords(Class<E> type) {
        Map<String, E> byKeyword = new LinkedHashMap<>();
        Arrays.stream(type.getEnumConstants())
                .forEach(e -> byKeyword.put(e.name().toLowerCase(Locale.ROOT).replace('_', '-'), e));
        return Collections.unmodifiableMap(byKeyword);
    }
}
