package io.stockade.policy.yaml;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

import io.stockade.policy.AdminConfig;
import io.stockade.policy.ClientTls;
import io.stockade.policy.Datasource;
import io.stockade.policy.StoreConfig;

import org.jspecify.annotations.Nullable;

/** Reads the {@code store} block (one method and key list per store type) and the {@code admin} block. */
final class StoreReader {

    private StoreReader() {
    }

    static Optional<StoreConfig> read(Field field) {
        return field.mapping().flatMap(store -> store
                .required("type", type -> Values.keyword(type, "store type", Vocabulary.STORE_TYPES))
                .flatMap(type -> switch (type) {
                    case "etcd" -> etcd(store);
                    case "postgres" -> postgres(store);
                    default -> memory(store);
                }));
    }

    private static Optional<StoreConfig> postgres(Mapping store) {
        store.allowOnly(Vocabulary.POSTGRES_STORE_KEYS);
        Optional<Datasource> datasource = store.required("datasource", DatasourceReader::read);
        Optional<Boolean> migrate = store.optional("migrate", Values::bool, true);
        Optional<StoreConfig.Cache> cache = store.optional("cache", StoreReader::cache, StoreConfig.Cache.DEFAULT);
        if (!Values.allPresent(datasource, migrate, cache)) {
            return Optional.empty();
        }
        return Optional.of(new StoreConfig.Postgres(datasource.get(), migrate.get(), cache.get()));
    }

    private static Optional<StoreConfig> memory(Mapping store) {
        store.allowOnly(Vocabulary.MEMORY_STORE_KEYS);
        Optional<Path> journal = store.required("journal", Values::path);
        Optional<Long> compactAfter = store.optional("compact-after", Values::size,
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES);
        Optional<Long> maxScopes = store.optional("max-scopes",
                f -> Values.longInteger(f, 1, Long.MAX_VALUE, "whole number"), StoreConfig.Memory.UNLIMITED_SCOPES);
        Optional<StoreConfig.ScopeMemory> memory = store.optional("max-scope-memory", StoreReader::scopeMemory,
                StoreConfig.ScopeMemory.DEFAULT);
        Optional<Duration> healWithin = store.optional("heal-within", Values::duration,
                StoreConfig.Memory.DEFAULT_HEAL_WITHIN);
        if (!Values.allPresent(journal, compactAfter, maxScopes, memory, healWithin)) {
            return Optional.empty();
        }
        return Optional.of(new StoreConfig.Memory(journal.get(), compactAfter.get(), maxScopes.get(),
                memory.get(), healWithin.get()));
    }

    /** {@code 50%} of the maximum heap (1..90 %), or a size ({@code 512MiB}). */
    private static Optional<StoreConfig.ScopeMemory> scopeMemory(Field field) {
        Optional<String> text = field.text();
        if (text.isPresent() && text.get().endsWith("%")) {
            String number = text.get().substring(0, text.get().length() - 1).strip();
            try {
                int percent = Integer.parseInt(number);
                if (percent >= 1 && percent <= 90) {
                    return Optional.of(new StoreConfig.ScopeMemory(0, percent));
                }
            } catch (NumberFormatException e) {
                // refused below
            }
            field.error("expected a share of the heap from 1% to 90%, or a size (e.g. 512MiB), got '" + text.get()
                    + "'");
            return Optional.empty();
        }
        return Values.size(field, 1L << 20, Long.MAX_VALUE).map(bytes -> new StoreConfig.ScopeMemory(bytes, 0));
    }

    private static Optional<StoreConfig> etcd(Mapping store) {
        store.allowOnly(Vocabulary.ETCD_STORE_KEYS);
        Optional<List<URI>> endpoints = store.required("endpoints", StoreReader::endpoints);
        Optional<String> prefix = store.optional("prefix", Values::text, StoreConfig.Etcd.DEFAULT_PREFIX);
        Optional<Duration> timeout = store.optional("timeout", StoreReader::etcdTimeout,
                StoreConfig.Etcd.DEFAULT_TIMEOUT);
        Optional<EtcdAccess> access = etcdAccess(store, endpoints);
        Optional<StoreConfig.Cache> cache = store.optional("cache", StoreReader::cache, StoreConfig.Cache.DEFAULT);
        if (!Values.allPresent(endpoints, prefix, timeout, access, cache)) {
            return Optional.empty();
        }
        EtcdAccess a = access.get();
        return Optional.of(new StoreConfig.Etcd(endpoints.get(), prefix.get(), timeout.get(), a.username(),
                a.password(), a.passwordFile(), a.tls(), cache.get()));
    }

    /** How a client authenticates to etcd and protects the connection (the etcd store's and verifier's keys). */
    record EtcdAccess(@Nullable String username, @Nullable String password, @Nullable Path passwordFile,
                      @Nullable ClientTls tls) {
    }

    /**
     * Reads {@code username}, {@code password}, {@code password-file} and {@code tls} of an etcd client (the store
     * and {@code fence.verify} with {@code kind: etcd}). The client speaks TLS to every member or to none, so
     * {@code tls} with an {@code http://} endpoint, and endpoints mixing {@code http://} and {@code https://}, are
     * errors.
     */
    static Optional<EtcdAccess> etcdAccess(Mapping m, Optional<List<URI>> endpoints) {
        Optional<Optional<String>> username = m.optional("username", Values::text);
        Optional<Optional<String>> password = m.optional("password", Values::text);
        Optional<Optional<Path>> passwordFile = m.optional("password-file", Values::path);
        Optional<Optional<ClientTls>> tls = m.optional("tls", f -> ClientTlsReader.read(f).flatMap(t -> {
            Optional<URI> plain = endpoints.orElse(List.of()).stream()
                    .filter(u -> !u.getScheme().equalsIgnoreCase("https")).findFirst();
            if (plain.isPresent()) {
                f.error("tls applies to https:// endpoints, but " + plain.get() + " is not: write https:// or"
                        + " remove tls");
                return Optional.empty();
            }
            return Optional.of(Optional.of(t));
        }), Optional.empty());
        if (!Values.allPresent(username, password, passwordFile, tls)) {
            return Optional.empty();
        }
        List<String> schemes = endpoints.orElse(List.of()).stream()
                .map(u -> u.getScheme().toLowerCase(Locale.ROOT)).distinct().toList();
        if (schemes.size() > 1) {
            m.required("endpoints").ifPresent(f -> f.error("endpoints mix http:// and https://: the client speaks"
                    + " TLS to every member or to none"));
            return Optional.empty();
        }
        if (password.get().isPresent() && passwordFile.get().isPresent()) {
            m.required("password").ifPresent(f -> f.error("give either password or password-file, not both"));
            return Optional.empty();
        }
        if (username.get().isEmpty() && (password.get().isPresent() || passwordFile.get().isPresent())) {
            m.required("username").ifPresent(f -> { });
            return Optional.empty();
        }
        return Optional.of(new EtcdAccess(username.get().orElse(null), password.get().orElse(null),
                passwordFile.get().orElse(null), tls.get().orElse(null)));
    }

    /**
     * The deadline of an etcd call (the etcd store's and the etcd verifier's {@code timeout}): a duration of at least
     * {@link StoreConfig.Etcd#MIN_TIMEOUT}. Shorter, a healthy cluster could not commit a write in time, and the
     * client needs room to derive its retry delay below the deadline.
     */
    static Optional<Duration> etcdTimeout(Field field) {
        return Values.duration(field).flatMap(timeout -> {
            if (timeout.compareTo(StoreConfig.Etcd.MIN_TIMEOUT) < 0) {
                field.error("an etcd timeout must be at least " + StoreConfig.Etcd.MIN_TIMEOUT.toMillis() + "ms, got '"
                        + timeout.toMillis() + "ms'");
                return Optional.empty();
            }
            return Optional.of(timeout);
        });
    }

    /** A list of URLs, or one value of comma-separated URLs (so {@code ${ETCD_ENDPOINTS}} works). */
    static Optional<List<URI>> endpoints(Field field) {
        if (field.isScalar()) {
            return Values.text(field).flatMap(text -> {
                List<URI> uris = new ArrayList<>();
                // limit 0 drops trailing empty strings: a trailing comma is ignored, an empty entry elsewhere is not
                for (String part : text.split(",", 0)) {
                    Optional<URI> uri = Values.httpUrl(part.strip(), field);
                    if (uri.isEmpty()) {
                        return Optional.empty();
                    }
                    uris.add(uri.get());
                }
                return Optional.of(uris);
            });
        }
        return field.items().flatMap(items -> {
            if (items.isEmpty()) {
                field.error("list at least one endpoint, e.g. http://127.0.0.1:2379");
                return Optional.empty();
            }
            List<URI> uris = new ArrayList<>();
            boolean ok = true;
            for (Field item : items) {
                Optional<URI> uri = Values.httpUrl(item);
                ok &= uri.isPresent();
                uri.ifPresent(uris::add);
            }
            return ok ? Optional.of(uris) : Optional.empty();
        });
    }

    private static Optional<StoreConfig.Cache> cache(Field field) {
        return field.mapping().flatMap(cache -> {
            cache.allowOnly(Vocabulary.CACHE_KEYS);
            Optional<Boolean> enabled = cache.optional("enabled", Values::bool, true);
            Optional<Integer> maxScopes = cache.optional("max-scopes",
                    f -> Values.integer(f, 1, Integer.MAX_VALUE, "number of scopes"),
                    (int) StoreConfig.Cache.DEFAULT_MAX_SCOPES);
            if (!Values.allPresent(enabled, maxScopes)) {
                return Optional.empty();
            }
            return Optional.of(new StoreConfig.Cache(enabled.get(), maxScopes.get()));
        });
    }

    /** The {@code admin} block. */
    static Optional<AdminConfig> admin(Field field) {
        return field.mapping().flatMap(admin -> {
            admin.allowOnly(Vocabulary.ADMIN_KEYS);
            Optional<Optional<String>> token = admin.optional("token", Values::text);
            Optional<Optional<Path>> tokenFile = admin.optional("token-file", Values::path);
            if (!Values.allPresent(token, tokenFile)) {
                return Optional.empty();
            }
            if (token.get().isPresent() == tokenFile.get().isPresent()) {
                field.error("give exactly one of token (e.g. ${STOCKADE_ADMIN_TOKEN}) and token-file");
                return Optional.empty();
            }
            return Optional.of(new AdminConfig(token.get().orElse(null), tokenFile.get().orElse(null)));
        });
    }
}
