package io.stockade.policy;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Objects;

import org.jspecify.annotations.Nullable;

/**
 * How a policy checks that a token is genuine before it may raise the fence ({@code fence.verify}).
 * <p>
 * Why: the fence trusts the number a writer sends. A buggy or hostile writer that sends
 * {@code Fencing-Token: 9223372036854775807} would make every honest holder stale forever; {@code max-advance}
 * bounds the jump over an existing highest token and {@code first-token-max} a scope's first token, but only by how
 * far: a forged token within them is taken. A verifier asks the party that
 * issued the token (the lock service), or checks a signature only key holders can make.
 */
public sealed interface TokenVerification {

    /** The header the signed-token verifier reads by default. */
    String DEFAULT_SIGNATURE_HEADER = "Fencing-Token-Signature";
    /** The lease table the client SDK's PostgreSQL provider writes. */
    String DEFAULT_LEASE_TABLE = "stockade_leases";

    /**
     * The token must be the create revision of the lock key that holds the lock {@code prefix + scope} in etcd
     * (the key with the lowest create revision under {@code prefix + scope + "/"}, as etcd's lock API and the
     * client SDK's etcd provider make them; when that key belongs to a nested lock, {@code prefix + scope + "/x/…"},
     * nobody holds this lock and every token is refused).
     *
     * @param endpoints    the etcd client URLs
     * @param prefix       prepended to the scope to give the lock name (empty: the lock is named like the scope)
     * @param timeout      deadline of each lookup; past it the write is refused with 503
     * @param username     etcd user, or {@code null}
     * @param password     the user's password, or {@code null} (see {@code passwordFile}); never in {@link #toString()}
     * @param passwordFile a file whose first line is the password, or {@code null}
     * @param tls          client TLS, or {@code null} for none
     * @param cache        positive verdicts remembered per (scope, token)
     */
    record Etcd(List<URI> endpoints, String prefix, Duration timeout, @Nullable String username,
                @Nullable String password, @Nullable Path passwordFile, @Nullable ClientTls tls, Cache cache)
            implements TokenVerification {
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

        public Etcd {
            endpoints = List.copyOf(endpoints);
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(cache, "cache");
            if (password != null && passwordFile != null) {
                throw new IllegalArgumentException("password and passwordFile exclude each other");
            }
        }

        /** Without TLS or authentication. */
        public Etcd(List<URI> endpoints, String prefix, Duration timeout, Cache cache) {
            this(endpoints, prefix, timeout, null, null, null, null, cache);
        }

        @Override
        public String toString() {
            return "Etcd[endpoints=" + endpoints + ", prefix=" + prefix + ", timeout=" + timeout + ", username="
                    + username + ", password=" + (password == null ? "none" : "***") + ", passwordFile="
                    + passwordFile + ", tls=" + tls + ", cache=" + cache + "]";
        }
    }

    /**
     * The token must be the one the lease table holds for the lease {@code prefix + scope} (the client SDK's
     * PostgreSQL provider: one row per name, the token raised by one on every acquisition).
     *
     * @param datasource the database holding the lease table
     * @param table      the lease table, {@code name text, token bigint, expires_at timestamptz} (default
     *                   {@code stockade_leases})
     * @param prefix     prepended to the scope to give the lease name
     * @param cache      positive verdicts remembered per (scope, token)
     */
    record Postgres(Datasource datasource, String table, String prefix, Cache cache) implements TokenVerification {
        public Postgres {
            Objects.requireNonNull(datasource, "datasource");
            Objects.requireNonNull(table, "table");
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(cache, "cache");
        }
    }

    /**
     * The token must be {@code spec.leaseTransitions} of the Kubernetes {@code coordination.k8s.io/v1} Lease named
     * {@code prefix + scope} in {@code namespace}, as the client SDK's Kubernetes provider keeps it, while the Lease
     * is held: {@code spec.holderIdentity} not empty and {@code spec.renewTime + spec.leaseDurationSeconds +
     * clockSkew} after the proxy's clock. The name is not mapped: {@code prefix + scope} must be a valid Lease name
     * (a DNS subdomain: lower-case letters, digits, '-' and '.', at most 253 characters), otherwise the write is
     * refused.
     *
     * @param apiServer the API server's URL (default {@link #DEFAULT_API_SERVER}, the in-cluster one)
     * @param namespace the namespace of the Leases
     * @param prefix    prepended to the scope to give the Lease name
     * @param tokenFile a file holding the bearer token (default the pod's service-account token), read on every
     *                  lookup so a rotated token is used at once; only its path is in the model
     * @param tls       client TLS to an {@code https://} API server, or {@code null}: then the pod's
     *                  service-account CA ({@link #DEFAULT_CA_FILE}) if that file exists, else the JVM's defaults
     * @param timeout   deadline of each lookup; past it the write is refused with 503
     * @param clockSkew how long after {@code renewTime + leaseDurationSeconds} (by the proxy's clock) the Lease is
     *                  still taken as held: the API server's, the holder's and the proxy's clocks differ
     * @param cache     positive verdicts remembered per (scope, token)
     */
    record Kubernetes(URI apiServer, String namespace, String prefix, Path tokenFile, @Nullable ClientTls tls,
                      Duration timeout, Duration clockSkew, Cache cache) implements TokenVerification {
        public static final URI DEFAULT_API_SERVER = URI.create("https://kubernetes.default.svc");
        public static final Path DEFAULT_TOKEN_FILE = Path.of("/var/run/secrets/kubernetes.io/serviceaccount/token");
        public static final Path DEFAULT_CA_FILE = Path.of("/var/run/secrets/kubernetes.io/serviceaccount/ca.crt");
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
        public static final Duration DEFAULT_CLOCK_SKEW = Duration.ofSeconds(5);

        public Kubernetes {
            Objects.requireNonNull(apiServer, "apiServer");
            Objects.requireNonNull(namespace, "namespace");
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(tokenFile, "tokenFile");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(clockSkew, "clockSkew");
            Objects.requireNonNull(cache, "cache");
        }
    }

    /**
     * The token must be the one held in the value of the Redis key {@code prefix + scope}, as the client SDK's Redis
     * provider writes it ({@code <token>:<nonce>:<holder>}, the key expiring with the lease, deleted on release): the
     * key exists while the lock is held, and its value names the holder's token. One {@code GET} per lookup.
     *
     * @param url          {@code redis://host[:port][/db]} or {@code rediss://…} (TLS); never with credentials
     * @param prefix       prepended to the scope to give the lock key (empty: the key is named like the scope)
     * @param timeout      deadline of each lookup (connecting, and the answer); past it the write is refused with 503
     * @param username     the Redis ACL user, or {@code null} for the default user
     * @param password     the password ({@code AUTH}), or {@code null}; never in {@link #toString()}
     * @param passwordFile a file whose first line is the password, or {@code null}
     * @param tls          client TLS for a {@code rediss://} url, or {@code null} (the JVM's default authorities)
     * @param cache        positive verdicts remembered per (scope, token)
     */
    record Redis(URI url, String prefix, Duration timeout, @Nullable String username, @Nullable String password,
                 @Nullable Path passwordFile, @Nullable ClientTls tls, Cache cache) implements TokenVerification {
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
        public static final int DEFAULT_PORT = 6379;

        public Redis {
            Objects.requireNonNull(url, "url");
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(cache, "cache");
            if (password != null && passwordFile != null) {
                throw new IllegalArgumentException("password and passwordFile exclude each other");
            }
        }

        /** Without TLS or authentication. */
        public Redis(URI url, String prefix, Duration timeout, Cache cache) {
            this(url, prefix, timeout, null, null, null, null, cache);
        }

        /** Whether the url is {@code rediss://}: TLS. */
        public boolean secure() {
            return "rediss".equalsIgnoreCase(url.getScheme());
        }

        /** The port of the url, {@value #DEFAULT_PORT} when it names none. */
        public int port() {
            return url.getPort() < 0 ? DEFAULT_PORT : url.getPort();
        }

        /** The database the url selects ({@code /3}), 0 when it names none. */
        public int database() {
            String path = url.getPath();
            return path == null || path.isEmpty() || path.equals("/") ? 0 : Integer.parseInt(path.substring(1));
        }

        @Override
        public String toString() {
            return "Redis[url=" + url + ", prefix=" + prefix + ", timeout=" + timeout + ", username=" + username
                    + ", password=" + (password == null ? "none" : "***") + ", passwordFile=" + passwordFile
                    + ", tls=" + tls + ", cache=" + cache + "]";
        }
    }

    /**
     * The token must be the creation zxid ({@code czxid}) of the node that holds the ZooKeeper lock
     * {@code prefix + scope}, as Curator's {@code InterProcessMutex} recipe makes it: one ephemeral sequential child
     * per contender ({@code …-lock-0000000007}), the child with the lowest sequence number holds the lock. One
     * {@code sync}, one {@code getChildren} and one {@code exists} per lookup.
     *
     * @param servers {@code host:port} of each ensemble member (port {@value #DEFAULT_PORT} when left out)
     * @param prefix  an absolute znode path prepended to the scope to give the lock path (default {@code /}: the
     *                lock path is {@code /} + scope)
     * @param timeout deadline of each lookup (connecting, and the answers); past it the write is refused with 503
     * @param cache   positive verdicts remembered per (scope, token)
     */
    record ZooKeeper(List<String> servers, String prefix, Duration timeout, Cache cache) implements TokenVerification {
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
        public static final int DEFAULT_PORT = 2181;
        public static final String DEFAULT_PREFIX = "/";

        public ZooKeeper {
            servers = List.copyOf(servers);
            if (servers.isEmpty()) {
                throw new IllegalArgumentException("at least one server");
            }
            Objects.requireNonNull(prefix, "prefix");
            if (!prefix.startsWith("/")) {
                throw new IllegalArgumentException("prefix must start with '/'");
            }
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(cache, "cache");
        }

        /** The ZooKeeper client's connect string: the servers, comma-separated. */
        public String connectString() {
            return String.join(",", servers);
        }
    }

    /**
     * The token must be the {@code ModifyIndex} of the Consul KV key {@code prefix + scope} while a session holds
     * it, as Consul's session + KV lock recipe gives it: the holder acquires the key with
     * {@code PUT /v1/kv/<key>?acquire=<session>} and takes the key's {@code ModifyIndex} right after, the Raft index
     * of the acquiring write (rising across holders, also across a deletion of the key). Releasing the key or
     * invalidating the session is a write too, so a holder that lost the key never matches again. One
     * {@code GET /v1/kv/<key>?consistent} per lookup.
     *
     * @param url       the Consul agent's or server's HTTP API, {@code http://host:8500} or {@code https://…}
     * @param prefix    prepended to the scope to give the KV key (empty: the key is named like the scope)
     * @param token     the ACL token sent as {@code X-Consul-Token}, or {@code null}; never in {@link #toString()}
     * @param tokenFile a file whose first line is the ACL token, read on every lookup, or {@code null}
     * @param tls       client TLS to an {@code https://} url, or {@code null} (the JVM's default authorities)
     * @param timeout   deadline of each lookup; past it the write is refused with 503
     * @param cache     positive verdicts remembered per (scope, token)
     */
    record Consul(URI url, String prefix, @Nullable String token, @Nullable Path tokenFile, @Nullable ClientTls tls,
                  Duration timeout, Cache cache) implements TokenVerification {
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

        public Consul {
            Objects.requireNonNull(url, "url");
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(cache, "cache");
            if (token != null && tokenFile != null) {
                throw new IllegalArgumentException("token and tokenFile exclude each other");
            }
        }

        /** Without TLS or an ACL token. */
        public Consul(URI url, String prefix, Duration timeout, Cache cache) {
            this(url, prefix, null, null, null, timeout, cache);
        }

        @Override
        public String toString() {
            return "Consul[url=" + url + ", prefix=" + prefix + ", token=" + (token == null ? "none" : "***")
                    + ", tokenFile=" + tokenFile + ", tls=" + tls + ", timeout=" + timeout + ", cache=" + cache + "]";
        }
    }

    /**
     * The token must be the {@code token} of the DynamoDB lock item whose partition key {@code key} is
     * {@code prefix + scope}, while that item is held: Stockade's DynamoDB lock recipe (the client SDK's
     * {@code Leases.dynamodb}) raises {@code token} with {@code ADD} in the same conditional write that takes the lock,
     * renews by writing a fresh record version number ({@code rvn}) and releases by setting {@code released} (the
     * item, and so the counter, is never deleted). One strongly consistent {@code GetItem} per lookup. A lock whose
     * {@code rvn} the proxy has seen unchanged for the item's whole {@code leaseDuration}, on its own monotonic clock,
     * is refused as expired: the rule a contender follows before taking it over, so no clock is compared across
     * machines.
     *
     * @param table     the lock table (partition key {@code key}, a string)
     * @param prefix    prepended to the scope to give the item's key (empty: the key is the scope)
     * @param region    the AWS region, e.g. {@code eu-west-1}
     * @param endpoint  another endpoint than the region's ({@code http://127.0.0.1:8000} for DynamoDB Local or
     *                  dynalite, a VPC endpoint), or {@code null}
     * @param accessKey a static access key id, or {@code null}: the AWS SDK's default credentials chain (environment,
     *                  profile, web identity, container or instance role)
     * @param secretKey its secret, with {@code accessKey}; never in {@link #toString()}
     * @param timeout   deadline of each lookup (all of the SDK's attempts); past it the write is refused with 503
     * @param cache     positive verdicts remembered per (scope, token)
     */
    record DynamoDb(String table, String prefix, String region, @Nullable URI endpoint, @Nullable String accessKey,
                    @Nullable String secretKey, Duration timeout, Cache cache) implements TokenVerification {
        public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);

        public DynamoDb {
            Objects.requireNonNull(table, "table");
            Objects.requireNonNull(prefix, "prefix");
            Objects.requireNonNull(region, "region");
            Objects.requireNonNull(timeout, "timeout");
            Objects.requireNonNull(cache, "cache");
            if ((accessKey == null) != (secretKey == null)) {
                throw new IllegalArgumentException("accessKey and secretKey come together");
            }
        }

        /** Static credentials, an endpoint of one's own. */
        public DynamoDb(String table, String prefix, @Nullable URI endpoint, @Nullable String accessKey,
                        @Nullable String secretKey, Duration timeout, Cache cache) {
            this(table, prefix, "us-east-1", endpoint, accessKey, secretKey, timeout, cache);
        }

        @Override
        public String toString() {
            return "DynamoDb[table=" + table + ", prefix=" + prefix + ", region=" + region + ", endpoint=" + endpoint
                    + ", accessKey=" + (accessKey == null ? "default chain" : accessKey) + ", secretKey="
                    + (secretKey == null ? "none" : "***") + ", timeout=" + timeout + ", cache=" + cache + "]";
        }
    }

    /**
     * The request must carry a signature of (scope, token, expiry) made with one of the shared keys, in
     * {@code header}: {@code v1; kid=<id>; exp=<unix seconds>; sig=<base64url HMAC-SHA256>}. For deployments where
     * the proxy cannot reach the lock service; the writers' SDK signs with the same key.
     *
     * @param shared    the keys accepted, by id (several during a rotation)
     * @param header    the header carrying the signature
     * @param clockSkew how long after its expiry a signature is still accepted (clocks of writers and proxy differ)
     */
    record Hmac(List<SharedKey> shared, String header, Duration clockSkew) implements TokenVerification {
        public static final Duration DEFAULT_CLOCK_SKEW = Duration.ofSeconds(5);

        public Hmac {
            shared = List.copyOf(shared);
            if (shared.isEmpty()) {
                throw new IllegalArgumentException("at least one key");
            }
            Objects.requireNonNull(header, "header");
            Objects.requireNonNull(clockSkew, "clockSkew");
        }
    }

    /**
     * One shared HMAC key. Its text (UTF-8) is the key. Never part of {@link #toString()}.
     *
     * @param id      the key id writers name in {@code kid=}
     * @param key     the key text (after {@code ${VAR}} substitution), or {@code null}
     * @param keyFile a file whose first line is the key, or {@code null}; read when the proxy starts, never by
     *                the policy loader
     */
    record SharedKey(String id, @Nullable String key, @Nullable Path keyFile) {
        /** The shortest key accepted: 32 characters (e.g. {@code openssl rand -base64 32} gives 44). */
        public static final int MIN_LENGTH = 32;

        public SharedKey {
            Objects.requireNonNull(id, "id");
            if ((key == null) == (keyFile == null)) {
                throw new IllegalArgumentException("exactly one of key and keyFile");
            }
        }

        @Override
        public String toString() {
            return "SharedKey[id=" + id + ", key=" + (key == null ? "none" : "***") + ", keyFile=" + keyFile + "]";
        }
    }

    /**
     * Positive verdicts of a lock-service verifier remembered per (scope, token), so the lock service is not
     * asked on every write. A remembered verdict outlives the lock by at most {@code ttl}.
     *
     * @param enabled    whether verdicts are remembered
     * @param ttl        how long a verdict is remembered
     * @param maxEntries the most verdicts remembered (least recently used go first)
     */
    record Cache(boolean enabled, Duration ttl, long maxEntries) {
        public static final Cache DEFAULT = new Cache(true, Duration.ofSeconds(10), 100_000);

        public Cache {
            Objects.requireNonNull(ttl, "ttl");
            if (maxEntries < 1) {
                throw new IllegalArgumentException("maxEntries must be positive");
            }
        }
    }
}
