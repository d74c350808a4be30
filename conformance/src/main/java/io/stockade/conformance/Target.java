package io.stockade.conformance;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Set;

import io.stockade.conformance.storage.DirectoryReader;
import io.stockade.conformance.storage.HttpReader;
import io.stockade.conformance.storage.JdbcReader;
import io.stockade.conformance.storage.JsonValueReader;
import io.stockade.conformance.storage.S3Reader;
import io.stockade.conformance.storage.StorageReader;
import io.stockade.conformance.writer.SigV4;

import com.fasterxml.jackson.core.JsonPointer;
import org.jspecify.annotations.Nullable;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;
import org.yaml.snakeyaml.error.YAMLException;

/**
 * What the suite tests: a proxy, and the storage behind it read back directly. See {@code conformance/README.md}
 * for the file format. {@code {key}} in a path is replaced by the resource key of each run
 * ({@code conformance/<run>/<scenario>}, plus {@code -control} for the control), {@code {id}} by the same key as one
 * path segment ({@code conformance-<run>-<scenario>}); see {@link Template}.
 *
 * @param name        the label in reports (the "backend" column)
 * @param proxyUrl    {@code http://host:port} of a running proxy; null when {@code launch} is given
 * @param proxyPath   the request path written through the proxy, with {@code {key}}; null for a SQL target
 * @param header      the fencing header
 * @param launch      the command that starts the proxy (it must print {@code Stockade listening on http://H:P}),
 *                    or null; needed by {@link Scenario#PROXY_RESTART}
 * @param proxySigner the writers sign their PUTs to the proxy with AWS SigV4 ({@code proxy.access-key},
 *                    {@code proxy.secret-key}, {@code proxy.region}: a key of an S3 policy's {@code clients}), or
 *                    null
 * @param read        how to read the storage directly: {@code url}+{@code path}, {@code directory}+{@code file},
 *                    {@code jdbc}+{@code sql} (+{@code user}, {@code password}), or {@code s3}+{@code bucket}
 *                    (+{@code key}, {@code region}, {@code access-key}, {@code secret-key}, {@code path-style})
 * @param control     how to write the storage without the proxy: {@code url}+{@code path},
 *                    {@code directory}+{@code file}, {@code jdbc}+{@code sql} (+{@code user}, {@code password}:
 *                    the same upsert run over JDBC, unfenced), or {@code s3}+{@code bucket} (PUTs signed with the
 *                    bucket's own credentials); null: no control (every scenario is then inconclusive)
 * @param store       the proxy's fence store when the suite launches it ({@code store.launch}, {@code store.ready}
 *                    {@code host:port}), for {@link Scenario#STORE_STOP}; null otherwise
 * @param ttl         the lease TTL (the built-in counter's; with another provider, its TTL)
 * @param writers     how many writer processes
 * @param leaseProvider {@code counter} (built in), {@code etcd:<endpoints>}, {@code postgres:<jdbc url>} or
 *                    {@code redis:<redis url>} (the client SDK's providers), or {@code class:<Name>:<argument>}
 * @param request     how a write is sent: method, body template, content type ({@code proxy.method},
 *                    {@code proxy.body}, {@code proxy.content-type}); the defaults are a plain-text PUT of the value
 * @param metricsUrl  where the proxy's Prometheus text is ({@code proxy.metrics}, {@code sql.metrics}), for the
 *                    report's Stockade version and commit; null: {@code /metrics} on the proxy's address (an HTTP
 *                    target), unknown (a SQL target)
 * @param sql         a SQL target's writes ({@code sql} in place of {@code proxy}: SQL clients of the PostgreSQL
 *                    listener), or null for an HTTP target
 */
public record Target(String name, @Nullable String proxyUrl, @Nullable String proxyPath, String header,
                     @Nullable List<String> launch, @Nullable SigV4 proxySigner, Map<String, String> read,
                     @Nullable Map<String, String> control, @Nullable Store store, Duration ttl, int writers,
                     String leaseProvider, Request request, @Nullable String metricsUrl, @Nullable Sql sql) {

    /**
     * The writes of a SQL target: each is one statement on a connection of its own to the PostgreSQL listener, the
     * token in the connection's startup options ({@code options=-c stockade.fencing_token=N}), as an unmodified
     * client passes it. In the paired control the same writers run {@code control.sql} (default: the same
     * statement) straight on the database, on a table the fence does not cover.
     *
     * @param url       {@code jdbc:postgresql://host:port/database[?user=...]}: the listener (one host, no
     *                  {@code options}: the suite puts the token there)
     * @param user      the database user, or null (in the URL, or pgjdbc's default)
     * @param password  its password, or null
     * @param statement one SQL statement with a {@code ?} per parameter, run with autocommit
     * @param params    the parameters' templates, in order: {@code {value}}, {@code {token}}, {@code {key}},
     *                  {@code {id}} (bound as text of unspecified type: the server infers the column's type)
     */
    public record Sql(String url, @Nullable String user, @Nullable String password, String statement,
                      List<String> params) {
        /** The same writes with another statement, URL and credentials (the control's). */
        public Sql on(String otherUrl, @Nullable String otherUser, @Nullable String otherPassword,
                      String otherStatement) {
            return new Sql(otherUrl, otherUser, otherPassword, otherStatement, params);
        }
    }

    /**
     * How each write is sent, through the proxy and (method aside, for the suite's own shims) in the control.
     *
     * @param method      {@code PUT} (default), {@code POST} or {@code PATCH}
     * @param body        the body template: {@code {value}} (required), {@code {token}}, {@code {key}}, {@code {id}};
     *                    default {@code {value}}
     * @param contentType the {@code Content-Type} sent, or null (default: none, as before)
     */
    public record Request(String method, String body, @Nullable String contentType) {
        /** A plain-text PUT of the value with no Content-Type: what the suite always sent before. */
        public static final Request DEFAULT = new Request("PUT", "{value}", null);
    }

    /** The methods a write may use. */
    private static final Set<String> METHODS = Set.of("PUT", "POST", "PATCH");

    /** A fence store the suite launches (and may stop): the command, and a {@code host:port} open when it is up. */
    public record Store(List<String> launch, String ready) {
    }

    /** Loads a target file. */
    public static Target load(Path file) throws IOException {
        return parse(Files.readString(file, StandardCharsets.UTF_8), file.toString());
    }

    /** Parses a target document; {@code source} names it in errors. */
    @SuppressWarnings("unchecked")
    public static Target parse(String yaml, String source) {
        Object doc = yaml(yaml, source);
        if (!(doc instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException(source + ": a target file is a YAML mapping");
        }
        known(source, "", (Map<String, Object>) root, Set.of("name", "proxy", "sql", "read", "control", "store",
                "lease", "writers"));
        Map<String, Object> sqlRaw = section(source, root, "sql");
        if (sqlRaw != null && root.get("proxy") != null) {
            throw new IllegalArgumentException(source + ": a target has 'proxy' (HTTP writes) or 'sql' (SQL clients "
                    + "of the PostgreSQL listener), not both");
        }
        Sql sql = sqlRaw == null ? null : sql(source, sqlRaw);
        Map<String, Object> proxy = sql != null ? Map.of() : requiredSection(source, root, "proxy");
        known(source, "proxy.", proxy, Set.of("url", "path", "header", "launch", "access-key", "secret-key",
                "region", "method", "body", "content-type", "metrics"));
        Request request = request(source, proxy);
        SigV4 signer = null;
        if (proxy.containsKey("access-key") || proxy.containsKey("secret-key")) {
            if (proxy.get("access-key") == null || proxy.get("secret-key") == null) {
                throw new IllegalArgumentException(source + ": proxy.access-key and proxy.secret-key go together");
            }
            signer = new SigV4(String.valueOf(proxy.get("access-key")), String.valueOf(proxy.get("secret-key")),
                    strOr(source, "proxy.", proxy, "region", "us-east-1"));
        }
        Map<String, Object> storeRaw = section(source, root, "store");
        Store store = null;
        if (storeRaw != null) {
            known(source, "store.", storeRaw, Set.of("launch", "ready"));
            if (!(storeRaw.get("launch") instanceof List<?> sl) || storeRaw.get("ready") == null) {
                throw new IllegalArgumentException(source + ": store needs 'launch' ([program, arg, ...]) and "
                        + "'ready' (host:port open when the store is up)");
            }
            store = new Store(sl.stream().map(String::valueOf).toList(), String.valueOf(storeRaw.get("ready")));
        }
        Map<String, String> read = strings(source, "read", requiredSection(source, root, "read"), READ_KEYS);
        Map<String, Object> controlRaw = section(source, root, "control");
        Map<String, String> control = controlRaw == null ? null
                : strings(source, "control", controlRaw, CONTROL_KEYS);
        templates(source, "read", read);
        if (control != null) {
            templates(source, "control", control);
        }
        Map<String, Object> leaseRaw = section(source, root, "lease");
        Map<String, Object> lease = leaseRaw == null ? Map.of() : leaseRaw;   // no section: the defaults
        known(source, "lease.", lease, Set.of("ttl", "provider", "etcd", "jdbc", "redis", "zookeeper",
                "dynamodb", "dynamodb-region", "dynamodb-endpoint", "consul"));
        String provider = strOr(source, "lease.", lease, "provider", "counter");
        if (provider.equals("dynamodb")) {
            String table = str(lease.get("dynamodb"));
            String region = str(lease.get("dynamodb-region"));
            if (table == null || region == null) {
                throw new IllegalArgumentException(source + ": lease.provider dynamodb needs lease.dynamodb (the lock"
                        + " table) and lease.dynamodb-region (e.g. eu-west-1); lease.dynamodb-endpoint is optional");
            }
            String endpoint = str(lease.get("dynamodb-endpoint"));
            provider = leaseSpec("dynamodb:" + table + "," + region + (endpoint == null ? "" : "," + endpoint),
                    source);
        } else if (provider.equals("etcd") || provider.equals("postgres") || provider.equals("redis")
                || provider.equals("zookeeper") || provider.equals("consul")) {
            String key = switch (provider) {
                case "etcd" -> "etcd";
                case "postgres" -> "jdbc";
                case "zookeeper" -> "zookeeper";
                case "consul" -> "consul";
                default -> "redis";
            };
            String where = str(lease.get(key));
            if (where == null) {
                throw new IllegalArgumentException(source + ": lease.provider " + provider + " needs lease." + key
                        + switch (provider) {
                            case "etcd" -> " (comma-separated client URLs)";
                            case "postgres" -> " (a JDBC URL)";
                            case "zookeeper" -> " (comma-separated host:port of the ensemble)";
                            case "consul" -> " (the HTTP API, http://host:8500; the ACL token from CONSUL_HTTP_TOKEN)";
                            default -> " (redis://host:port or rediss://host:port)";
                        });
            }
            provider = leaseSpec(provider + ":" + where, source);
        } else if (!provider.equals("counter") && !provider.startsWith("class:")) {
            throw new IllegalArgumentException(source + ": lease.provider is counter, etcd, postgres, redis, "
                + "zookeeper, dynamodb, consul or class:<Name>:<argument>");
        }
        List<String> launch = null;
        if (proxy.get("launch") instanceof List<?> l) {
            launch = l.stream().map(String::valueOf).toList();
        } else if (proxy.get("launch") != null) {
            throw new IllegalArgumentException(source + ": proxy.launch is a list: [program, arg, ...]");
        }
        String url = str(proxy.get("url"));
        if (url == null && launch == null && sql == null) {
            throw new IllegalArgumentException(source + ": proxy needs 'url' or 'launch'");
        }
        String path = sql != null ? null : strOr(source, "proxy.", proxy, "path", "/{key}");
        if (path != null) {
            Template.parse(path, source + ": proxy.path", Template.KEY, Template.KEY);
        }
        String name = str(root.get("name"));
        Target t = new Target(name == null ? "target" : name,
                url == null ? null : trimSlash(url), path, strOr(source, "proxy.", proxy, "header", "Fencing-Token"),
                launch, signer, read, control, store,
                duration(strOr(source, "lease.", lease, "ttl", "1s")),
                root.get("writers") == null ? 2 : Integer.parseInt(String.valueOf(root.get("writers"))), provider,
                request, sqlRaw != null ? str(sqlRaw.get("metrics")) : str(proxy.get("metrics")), sql);
        try (StorageReader r = t.reader()) {   // validates the read section
            r.describe();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + ": " + e.getMessage(), e);
        }
        if (sql != null) {
            checkSqlReadAndControl(source, read, control);
        } else if (control != null) {
            checkControl(source, control);
        }
        if (t.writers < 2) {
            throw new IllegalArgumentException(source + ": writers must be at least 2 (a handoff needs two)");
        }
        return t;
    }

    /**
     * The same target with another lease provider, as {@code --lease} gives it: {@code counter},
     * {@code redis://…} or {@code rediss://…} (the client SDK's Redis provider), {@code etcd:<urls>},
     * {@code postgres:<jdbc url>}, {@code zookeeper:<host:port,...>}, {@code dynamodb:<table>,<region>[,<endpoint>]},
     * {@code consul:<url>} or {@code class:<Name>:<argument>}.
     *
     * @throws IllegalArgumentException naming the valid forms
     */
    public Target withLeaseProvider(String spec) {
        String s = spec.startsWith("redis://") || spec.startsWith("rediss://") ? "redis:" + spec : spec;
        return new Target(name, proxyUrl, proxyPath, header, launch, proxySigner, read, control, store, ttl, writers,
                leaseSpec(s, "--lease"), request, metricsUrl, sql);
    }

    /** Checks a lease provider spec (counter, etcd:…, postgres:…, redis:redis://…, zookeeper:…, class:…). */
    private static String leaseSpec(String spec, String source) {
        boolean known = spec.equals("counter") || spec.startsWith("class:") || spec.startsWith("etcd:")
                || spec.startsWith("postgres:") || spec.startsWith("redis:redis://")
                || spec.startsWith("redis:rediss://")
                || spec.matches("zookeeper:[A-Za-z0-9._-]+:\\d{1,5}(,[A-Za-z0-9._-]+:\\d{1,5})*")
                || spec.matches("consul:[hH][tT][tT][pP][sS]?://[^/?#@,]+/?")
                || spec.matches("dynamodb:[A-Za-z0-9_.-]{3,255},[a-z]{2,}(-[a-z0-9]+)+"
                        + "(,[hH][tT][tT][pP][sS]?://[^,@/]+/?)?");
        if (!known || spec.endsWith(":")) {
            throw new IllegalArgumentException(source + ": '" + spec.replaceFirst("(?<=://)[^@/]*@", "…@")
                    + "' is not a lease provider; valid: counter, redis://host:port (or rediss://), etcd:<client URLs>,"
                    + " postgres:<JDBC URL>, zookeeper:<host:port,...>, dynamodb:<table>,<region>[,<endpoint URL>],"
                    + " consul:<http(s)://host:port>, class:<Name>:<argument>");
        }
        return spec;
    }

    /**
     * A new reader for {@link #read}: the storage read as it is, or with {@code read.json} the string at that JSON
     * Pointer in what was read (a JSON document stored whole, e.g. by an HTTP upstream).
     */
    public StorageReader reader() {
        StorageReader r = rawReader();
        return read.containsKey("json") ? new JsonValueReader(r, read.get("json")) : r;
    }

    /**
     * A new reader of what the paired control wrote: {@link #reader()}, except for a SQL target, whose control writes
     * another table (or database): {@code control.read-sql} (default {@code read.sql}) on the control's connection.
     */
    public StorageReader controlReader() {
        if (sql == null || control == null) {
            return reader();
        }
        StorageReader r = new JdbcReader(
                Objects.requireNonNull(control.get("jdbc"), "parse checked: a sql target's control has jdbc"),
                control.getOrDefault("user", read.get("user")),
                control.containsKey("user") ? control.get("password") : read.get("password"),
                Objects.requireNonNull(control.getOrDefault("read-sql", read.get("sql")),
                        "parse checked: a sql target has read.jdbc, which needs read.sql"),
                read.getOrDefault("param", "{key}"));
        return read.containsKey("json") ? new JsonValueReader(r, read.get("json")) : r;
    }

    /** The {@code sql} section: the listener's URL, credentials, the statement and its parameters, checked. */
    private static Sql sql(String source, Map<String, Object> raw) {
        known(source, "sql.", raw, Set.of("url", "user", "password", "statement", "params", "metrics"));
        String url = str(raw.get("url"));
        if (url == null || !url.matches("jdbc:postgresql://[^/,?]+/[^?]*(\\?.*)?")) {
            throw new IllegalArgumentException(source + ": sql.url '" + url + "' is not a JDBC URL of one host: "
                    + "jdbc:postgresql://host:port/database[?user=...] (the PostgreSQL listener)");
        }
        if (url.matches("(?i).*[?&]options=.*")) {
            throw new IllegalArgumentException(source + ": sql.url has options=...: leave it out, the suite passes "
                    + "each writer's token there (options=-c stockade.fencing_token=N)");
        }
        String statement = str(raw.get("statement"));
        if (statement == null || statement.isBlank()) {
            throw new IllegalArgumentException(source + ": sql.statement is required: the write, one statement with a"
                    + " ? per sql.params entry, e.g. INSERT INTO jobs (id, state) VALUES (?, ?) ON CONFLICT (id) DO "
                    + "UPDATE SET state = EXCLUDED.state");
        }
        if (!(raw.get("params") instanceof List<?> list) || list.isEmpty()) {
            throw new IllegalArgumentException(source + ": sql.params is a list of the statement's parameters, e.g. "
                    + "[\"{id}\", \"{value}\"]");
        }
        List<String> params = list.stream().map(String::valueOf).toList();
        boolean value = false;
        boolean key = false;
        for (int i = 0; i < params.size(); i++) {
            Template.parse(params.get(i), source + ": sql.params[" + i + "]", Template.BODY, Set.of());
            value |= params.get(i).contains("{value}");
            key |= params.get(i).contains("{key}") || params.get(i).contains("{id}");
        }
        if (!value || !key) {
            throw new IllegalArgumentException(source + ": sql.params " + params + " must bind {value} (the suite "
                    + "finds each write by its value) and {key} or {id} (each run writes a row of its own)");
        }
        return new Sql(url, str(raw.get("user")), str(raw.get("password")), statement, params);
    }

    /** A SQL target reads its database back with a query, and its control writes the database straight. */
    private static void checkSqlReadAndControl(String source, Map<String, String> read,
                                               @Nullable Map<String, String> control) {
        if (!read.containsKey("jdbc")) {
            throw new IllegalArgumentException(source + ": a sql target reads the database back: read.jdbc and "
                    + "read.sql (a query with one ?)");
        }
        if (control == null) {
            return;
        }
        for (String k : control.keySet()) {
            if (!Set.of("jdbc", "user", "password", "sql", "read-sql").contains(k)) {
                throw new IllegalArgumentException(source + ": control." + k + " is not for a sql target; valid: "
                        + "jdbc, user, password, sql, read-sql");
            }
        }
        if (!control.containsKey("jdbc")) {
            throw new IllegalArgumentException(source + ": the control of a sql target needs control.jdbc: the "
                    + "database straight, not the listener (with control.sql, default sql.statement, on a table "
                    + "the fence does not cover, and control.read-sql, default read.sql, to read it back)");
        }
    }

    private StorageReader rawReader() {
        if (read.containsKey("url")) {
            return new HttpReader(trimSlash(read.get("url")), read.getOrDefault("path", "/{key}"));
        }
        if (read.containsKey("directory")) {
            return new DirectoryReader(Path.of(read.get("directory")).toAbsolutePath(),
                    read.getOrDefault("file", "{key}"));
        }
        if (read.containsKey("jdbc")) {
            if (!read.containsKey("sql")) {
                throw new IllegalArgumentException("read.jdbc needs read.sql (a query with one ? for the key)");
            }
            return new JdbcReader(read.get("jdbc"), read.get("user"), read.get("password"), read.get("sql"),
                    read.getOrDefault("param", "{key}"));
        }
        if (read.containsKey("s3")) {
            if (!read.containsKey("bucket") || !read.containsKey("access-key") || !read.containsKey("secret-key")) {
                throw new IllegalArgumentException("read.s3 needs read.bucket, read.access-key and read.secret-key");
            }
            return new S3Reader(trimSlash(read.get("s3")), read.getOrDefault("region", "us-east-1"),
                    read.get("access-key"), read.get("secret-key"), read.get("bucket"),
                    read.getOrDefault("key", "{key}"), !"false".equals(read.getOrDefault("path-style", "true")));
        }
        throw new IllegalArgumentException("read needs 'url' (+ path), 'directory' (+ file), 'jdbc' (+ sql) or "
                + "'s3' (+ bucket)");
    }

    /** Parses {@code 250ms}, {@code 30s}, {@code 2m}. */
    public static Duration duration(String s) {
        String v = s.trim();
        if (v.endsWith("ms")) {
            return Duration.ofMillis(Long.parseLong(v.substring(0, v.length() - 2)));
        }
        long n = Long.parseLong(v.substring(0, v.length() - 1));
        return switch (v.charAt(v.length() - 1)) {
            case 's' -> Duration.ofSeconds(n);
            case 'm' -> Duration.ofMinutes(n);
            case 'h' -> Duration.ofHours(n);
            default -> throw new IllegalArgumentException("bad duration '" + s + "': use 250ms, 30s, 2m or 1h");
        };
    }

    private static String trimSlash(String s) {
        return s.endsWith("/") ? s.substring(0, s.length() - 1) : s;
    }

    /** The text of a YAML value, null for none. */
    private static @Nullable String str(@Nullable Object o) {
        return o == null ? null : String.valueOf(o);
    }

    /**
     * The text of {@code m}'s {@code key}, {@code absent} when the key is not there; a key given no value
     * ({@code key: ~} or nothing after the colon) is an error naming it.
     */
    private static String strOr(String source, String prefix, Map<String, Object> m, String key, String absent) {
        if (!m.containsKey(key)) {
            return absent;
        }
        return String.valueOf(requireValue(source, prefix, key, m.get(key)));
    }

    /** {@code v}, or an error naming the key that was given no value ({@code key: ~}). */
    private static <T> T requireValue(String source, String prefix, Object key, @Nullable T v) {
        if (v == null) {
            throw new IllegalArgumentException(source + ": " + prefix + key + " has no value (~ or nothing after "
                    + "the colon): give one or leave the key out");
        }
        return v;
    }

    /** The mapping at {@code key}, which must be there (with a value). */
    private static Map<String, Object> requiredSection(String source, Map<?, ?> root, String key) {
        Map<String, Object> m = section(source, root, key);
        if (m == null) {
            throw new IllegalArgumentException(source + ": '" + key + "' is required");
        }
        return m;
    }

    /** The mapping at {@code key}, or null when it is absent (or has no value). */
    @SuppressWarnings("unchecked")
    private static @Nullable Map<String, Object> section(String source, Map<?, ?> root, String key) {
        Object v = root.get(key);
        if (v == null) {
            return null;
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(source + ": '" + key + "' is a mapping");
        }
        return (Map<String, Object>) m;
    }

    private static final Set<String> READ_KEYS = Set.of("url", "path", "directory", "file", "jdbc", "user",
            "password", "sql", "param", "s3", "bucket", "key", "region", "access-key", "secret-key", "path-style",
            "json");
    private static final Set<String> CONTROL_KEYS = Set.of("url", "path", "directory", "file", "jdbc", "user",
            "password", "sql", "param", "s3", "bucket", "key", "region", "access-key", "secret-key", "path-style",
            "method", "read-sql");

    private static Object yaml(String yaml, String source) {
        try {
            return new Yaml(new SafeConstructor(new LoaderOptions())).load(yaml);
        } catch (YAMLException e) {
            throw new IllegalArgumentException(source + ": not valid YAML (a template with braces in a {...} mapping "
                    + "needs quotes: path: '/jobs/{id}'): " + e.getMessage(), e);
        }
    }

    private static void checkControl(String source, Map<String, String> control) {
        if (control.containsKey("read-sql")) {
            throw new IllegalArgumentException(source + ": control.read-sql is for a sql target (whose control "
                    + "writes a table the fence does not cover); here the control is read with read");
        }
        if (!control.containsKey("url") && !control.containsKey("directory")
                && !control.containsKey("jdbc") && !control.containsKey("s3")) {
            throw new IllegalArgumentException(source + ": control needs 'url' (+ path), 'directory' (+ file), "
                    + "'jdbc' (+ sql) or 's3' (+ bucket)");
        }
        if (control.containsKey("s3") && (!control.containsKey("bucket")
                || !control.containsKey("access-key") || !control.containsKey("secret-key"))) {
            throw new IllegalArgumentException(source + ": control.s3 needs control.bucket, control.access-key and "
                    + "control.secret-key (the bucket's own credentials: the control writes around the proxy)");
        }
        if (control.containsKey("jdbc") && !control.containsKey("sql")) {
            throw new IllegalArgumentException(source + ": control.jdbc needs control.sql (one statement, two ?: "
                    + "the key as control.param makes it, default read.param or {key}, then the body as sent)");
        }
    }

    /** {@code proxy.method}, {@code proxy.body}, {@code proxy.content-type}, checked. */
    private static Request request(String source, Map<String, Object> proxy) {
        String method = strOr(source, "proxy.", proxy, "method", "PUT").toUpperCase(Locale.ROOT);
        if (!METHODS.contains(method)) {
            throw new IllegalArgumentException(source + ": proxy.method '" + proxy.get("method") + "' is not a write "
                    + "with a body; valid: " + METHODS.stream().sorted().toList());
        }
        String body = strOr(source, "proxy.", proxy, "body", "{value}");
        Template.parse(body, source + ": proxy.body", Template.BODY, Set.of("value"));
        String type = str(proxy.get("content-type"));
        if (type != null && (type.isBlank() || type.chars().anyMatch(c -> c < 0x20 || c == 0x7f))) {
            throw new IllegalArgumentException(source + ": proxy.content-type '" + type + "' is not a header value "
                    + "(e.g. application/json)");
        }
        return new Request(method, body, type);
    }

    /** The key templates of a read or control section ({@code path}, {@code file}, {@code key}, {@code param}). */
    private static void templates(String source, String prefix, Map<String, String> m) {
        for (String k : List.of("path", "file", "key", "param")) {
            if (m.containsKey(k)) {
                Template.parse(m.get(k), source + ": " + prefix + "." + k, Template.KEY, Template.KEY);
            }
        }
        if (m.containsKey("param") && !m.containsKey("jdbc")) {
            throw new IllegalArgumentException(source + ": " + prefix + ".param is the SQL parameter of " + prefix
                    + ".jdbc; without jdbc use path (url), file (directory) or key (s3)");
        }
        if (m.containsKey("json")) {
            try {
                JsonPointer.compile(m.get("json"));
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException(source + ": " + prefix + ".json '" + m.get("json") + "' is not a "
                        + "JSON Pointer (e.g. /value, /job/value): " + e.getMessage(), e);
            }
            if (m.get("json").isEmpty()) {
                throw new IllegalArgumentException(source + ": " + prefix + ".json is empty; leave it out to take "
                        + "what is read as the value, or point at the field, e.g. /value");
            }
        }
        if (m.containsKey("method") && !m.containsKey("url")) {
            throw new IllegalArgumentException(source + ": " + prefix + ".method is for a url control (the storage's "
                    + "own HTTP endpoint); the suite's own directory, jdbc and s3 controls take PUT");
        }
        if (m.containsKey("method") && !METHODS.contains(m.get("method").toUpperCase(Locale.ROOT))) {
            throw new IllegalArgumentException(source + ": " + prefix + ".method '" + m.get("method") + "'; valid: "
                    + METHODS.stream().sorted().toList());
        }
    }

    private static Map<String, String> strings(String source, String prefix, Map<String, Object> m,
                                               Set<String> keys) {
        known(source, prefix + ".", m, keys);
        LinkedHashMap<String, String> out = new LinkedHashMap<>();
        m.forEach((k, v) -> out.put(k, String.valueOf(requireValue(source, prefix + ".", k, v))));
        return Map.copyOf(out);
    }

    private static void known(String source, String prefix, Map<String, Object> m, Set<String> keys) {
        for (String k : m.keySet()) {
            if (!keys.contains(k)) {
                throw new IllegalArgumentException(source + ": unknown key '" + prefix + k + "'; valid: "
                        + keys.stream().sorted().toList());
            }
        }
    }
}
