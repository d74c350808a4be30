package io.stockade.conformance;

import io.stockade.conformance.storage.DirectoryReader;
import io.stockade.conformance.storage.HttpReader;
import io.stockade.conformance.storage.JdbcReader;
import io.stockade.conformance.storage.StorageReader;
import org.yaml.snakeyaml.LoaderOptions;
import org.yaml.snakeyaml.Yaml;
import org.yaml.snakeyaml.constructor.SafeConstructor;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the suite tests: a proxy, and the storage behind it read back directly. See {@code conformance/README.md}
 * for the file format. {@code {key}} in a path is replaced by the resource key of each run
 * ({@code conformance/<run>/<scenario>}, plus {@code -control} for the control).
 *
 * @param name        the label in reports (the "backend" column)
 * @param proxyUrl    {@code http://host:port} of a running proxy; null when {@code launch} is given
 * @param proxyPath   the request path written through the proxy, with {@code {key}}
 * @param header      the fencing header
 * @param launch      the command that starts the proxy (it must print {@code Stockade listening on http://H:P}),
 *                    or null; needed by {@link Scenario#PROXY_RESTART}
 * @param read        how to read the storage directly: {@code url}+{@code path}, {@code directory}+{@code file},
 *                    or {@code jdbc}+{@code sql} (+{@code user}, {@code password})
 * @param control     how to write the storage without the proxy: {@code url}+{@code path},
 *                    {@code directory}+{@code file}, or {@code jdbc}+{@code sql} (+{@code user}, {@code password}:
 *                    the same upsert run over JDBC, unfenced); null: no control (every scenario is then
 *                    inconclusive)
 * @param ttl         the lease TTL of the built-in counter
 * @param writers     how many writer processes
 * @param leaseProvider {@code counter} (built in) or {@code class:<Name>:<argument>}
 */
public record Target(String name, String proxyUrl, String proxyPath, String header, List<String> launch,
                     Map<String, String> read, Map<String, String> control, Duration ttl, int writers,
                     String leaseProvider) {

    /** Loads a target file. */
    public static Target load(Path file) throws IOException {
        return parse(Files.readString(file, StandardCharsets.UTF_8), file.toString());
    }

    /** Parses a target document; {@code source} names it in errors. */
    @SuppressWarnings("unchecked")
    public static Target parse(String yaml, String source) {
        Object doc = new Yaml(new SafeConstructor(new LoaderOptions())).load(yaml);
        if (!(doc instanceof Map<?, ?> root)) {
            throw new IllegalArgumentException(source + ": a target file is a YAML mapping");
        }
        known(source, "", (Map<String, Object>) root, Set.of("name", "proxy", "read", "control", "lease", "writers"));
        Map<String, Object> proxy = section(source, root, "proxy", true);
        known(source, "proxy.", proxy, Set.of("url", "path", "header", "launch"));
        Map<String, String> read = strings(source, "read", section(source, root, "read", true));
        Map<String, Object> controlRaw = section(source, root, "control", false);
        Map<String, String> control = controlRaw == null ? null : strings(source, "control", controlRaw);
        Map<String, Object> lease = section(source, root, "lease", false);
        if (lease != null) {
            known(source, "lease.", lease, Set.of("ttl", "provider"));
        }
        List<String> launch = null;
        if (proxy.get("launch") instanceof List<?> l) {
            launch = l.stream().map(String::valueOf).toList();
        } else if (proxy.get("launch") != null) {
            throw new IllegalArgumentException(source + ": proxy.launch is a list: [program, arg, ...]");
        }
        String url = str(proxy.get("url"));
        if (url == null && launch == null) {
            throw new IllegalArgumentException(source + ": proxy needs 'url' or 'launch'");
        }
        String path = str(proxy.getOrDefault("path", "/{key}"));
        Target t = new Target(str(root.get("name")) == null ? "target" : str(root.get("name")),
                url == null ? null : trimSlash(url), path, str(proxy.getOrDefault("header", "Fencing-Token")),
                launch, read, control,
                duration(lease == null ? "1s" : str(lease.getOrDefault("ttl", "1s"))),
                root.get("writers") == null ? 2 : Integer.parseInt(str(root.get("writers"))),
                lease == null ? "counter" : str(lease.getOrDefault("provider", "counter")));
        t.reader();   // validates the read section
        if (control != null && !control.containsKey("url") && !control.containsKey("directory")
                && !control.containsKey("jdbc")) {
            throw new IllegalArgumentException(source + ": control needs 'url' (+ path), 'directory' (+ file) or "
                    + "'jdbc' (+ sql)");
        }
        if (control != null && control.containsKey("jdbc") && !control.containsKey("sql")) {
            throw new IllegalArgumentException(source + ": control.jdbc needs control.sql (one statement, two ?: "
                    + "the key, then the body)");
        }
        if (t.writers < 2) {
            throw new IllegalArgumentException(source + ": writers must be at least 2 (a handoff needs two)");
        }
        return t;
    }

    /** A new reader for {@link #read}. */
    public StorageReader reader() {
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
            return new JdbcReader(read.get("jdbc"), read.get("user"), read.get("password"), read.get("sql"));
        }
        throw new IllegalArgumentException("read needs 'url' (+ path), 'directory' (+ file) or 'jdbc' (+ sql); "
                + "S3 targets are not supported yet");
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

    private static String str(Object o) {
        return o == null ? null : String.valueOf(o);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> section(String source, Map<?, ?> root, String key, boolean required) {
        Object v = root.get(key);
        if (v == null) {
            if (required) {
                throw new IllegalArgumentException(source + ": '" + key + "' is required");
            }
            return null;
        }
        if (!(v instanceof Map<?, ?> m)) {
            throw new IllegalArgumentException(source + ": '" + key + "' is a mapping");
        }
        return (Map<String, Object>) m;
    }

    private static Map<String, String> strings(String source, String prefix, Map<String, Object> m) {
        known(source, prefix + ".", m, Set.of("url", "path", "directory", "file", "jdbc", "user", "password", "sql"));
        java.util.LinkedHashMap<String, String> out = new java.util.LinkedHashMap<>();
        m.forEach((k, v) -> out.put(k, str(v)));
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
