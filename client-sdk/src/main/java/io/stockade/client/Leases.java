package io.stockade.client;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.URI;
import java.net.http.HttpClient;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.security.cert.Certificate;
import java.security.cert.CertificateFactory;
import java.sql.DriverManager;
import java.time.Duration;
import java.util.Objects;
import java.util.UUID;
import java.util.function.IntConsumer;
import javax.net.ssl.SSLContext;
import javax.net.ssl.TrustManagerFactory;
import javax.sql.DataSource;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

/**
 * Entry point: builds a {@link LeaseProvider} for one lock service.
 *
 * <pre>{@code
 * LeaseProvider leases = Leases.newBuilder()
 *         .holderIdentity("report-writer-1")      // default: host, pid and a random suffix
 *         .exitOnLoss(75)                          // optional: stop the process when a lease is lost
 *         .etcd("http://127.0.0.1:2379");          // or .postgres(dataSource), .kubernetes(...), .redis(url)
 * }</pre>
 *
 * <h2>Providers and their tokens</h2>
 * <ul>
 *   <li><b>etcd</b> ({@link Builder#etcd(String...)}, needs {@code io.etcd:jetcd-core} 0.8.5): an etcd lease plus
 *       the lock API; the token is the <em>create revision</em> of the lock key, which etcd's single global revision
 *       counter makes higher for every later holder. Caveat: the token is shared by all names (it jumps).</li>
 *   <li><b>Kubernetes</b> ({@link Builder#kubernetes(URI, String, String)}): a {@code coordination.k8s.io/v1}
 *       Lease; the token is {@code spec.leaseTransitions}, raised by one on <em>every</em> acquisition, also when the
 *       same identity takes the lease again (client-go does not do that). Caveat: deleting the Lease object
 *       forgets the count.</li>
 *   <li><b>PostgreSQL</b> ({@link Builder#postgres(DataSource)}, needs {@code org.postgresql:postgresql}): a row in
 *       {@code stockade_leases}; expiry uses the database's clock ({@code now()}), and the token is a per-name
 *       counter raised by every acquisition. Caveat: never delete the rows.</li>
 *   <li><b>Redis</b> ({@link Builder#redis(String)}, needs {@code redis.clients:jedis} 8): a key set with
 *       {@code NX PX ttl} by a Lua script that also raises a per-name counter key (never expiring) and stores the
 *       token in the lock's value; renewal and release compare that value. The token is the counter, never below
 *       the server's clock in milliseconds, so it also rises across a failover that lost the last acquisition.
 *       Optionally {@code WAIT} for replicas ({@link Builder#redisReplicas}). Caveat: never delete the
 *       {@code stockade:token:} keys.</li>
 *   <li><b>ZooKeeper</b> ({@link Builder#zookeeper(String, String)}, needs {@code org.apache.zookeeper:zookeeper}
 *       3.9): Curator's {@code InterProcessMutex} recipe, one session per lease; the token is the lock node's
 *       creation zxid. A disconnection ends the lease at once. Caveat: tokens jump by about 2^32 at every leader
 *       election (the zxid's high half is the epoch).</li>
 *   <li><b>Consul</b> ({@link Builder#consul(URI, String, String)}, HTTP API, no library): a session with the ttl
 *       as its TTL (10s..24h) and a KV key acquired with it; the token is the key's {@code ModifyIndex} right after
 *       the acquiring write. Renewal renews the session and checks the key still names it. Caveat: tested against
 *       a stand-in of Consul's HTTP API, not a real Consul.</li>
 *   <li><b>DynamoDB</b> ({@link Builder#dynamodb}, needs {@code software.amazon.awssdk:dynamodb} 2): a lock item
 *       taken and kept by conditional writes; the token is a counter raised by {@code ADD} in the acquiring write;
 *       an abandoned lock is taken over after its record version stood still for its lease duration, measured on
 *       the contender's monotonic clock. Caveat: never delete the items (the counter would start again); tested
 *       against dynalite, not AWS.</li>
 * </ul>
 *
 * <h2>Renewal</h2>
 * The watchdog renews every lease every {@code ttl × renewFraction} (default 1/3) by compare-and-set on its token.
 * A refused or failed renewal ends the lease at once; so does a watchdog that runs later than
 * {@code ttl × renewDeadline} (default 2/3) after the last renewal was sent. The three must satisfy the
 * leader-election arithmetic {@code ttl > renewDeadline > renewInterval × 1.2}.
 */
public final class Leases {

    /** client-go's JitterFactor: a retry may come up to 1.2 × the retry period late. */
    static final double JITTER = 1.2;

    private Leases() {
    }

    /**
     * A new builder with the defaults: renew every 1/3 of the ttl, renew deadline 2/3 of the ttl, the system
     * ticker, a unique holder identity, no process exit on loss.
     *
     * @return a new builder
     */
    public static Builder newBuilder() {
        return new Builder();
    }

    /** Options shared by every provider, fixed when a provider is built. */
    record Settings(String holder, double renewFraction, double renewDeadlineFraction, Ticker ticker,
                    @Nullable Integer exitStatus, IntConsumer exiter) {

        static Duration scale(Duration d, double fraction) {
            return Duration.ofNanos((long) (d.toNanos() * fraction));
        }
    }

    /**
     * Checks the leader-election arithmetic: {@code leaseDuration > renewDeadline > retryPeriod × 1.2}.
     *
     * @throws IllegalArgumentException naming the inequality that does not hold
     */
    static void checkArithmetic(Duration leaseDuration, Duration renewDeadline, Duration retryPeriod) {
        if (leaseDuration.compareTo(renewDeadline) <= 0) {
            throw new IllegalArgumentException("lease duration " + leaseDuration + " must be greater than the renew "
                    + "deadline " + renewDeadline);
        }
        double jittered = retryPeriod.toNanos() * JITTER;
        if (renewDeadline.toNanos() <= jittered) {
            throw new IllegalArgumentException("renew deadline " + renewDeadline + " must be greater than the retry "
                    + "period " + retryPeriod + " × jitter factor " + JITTER + " = "
                    + Duration.ofNanos((long) jittered));
        }
    }

    /**
     * Builds a {@link LeaseProvider}. The options apply to the provider built by the terminal method
     * ({@link #etcd}, {@link #postgres}, {@link #kubernetes}, {@link #redis}); a builder may build several.
     */
    public static final class Builder {

        private @Nullable String holder;
        private double renewFraction = 1.0 / 3;
        private double renewDeadlineFraction = 2.0 / 3;
        private Ticker ticker = Ticker.system();
        private @Nullable Integer exitStatus;
        private IntConsumer exiter = status -> Runtime.getRuntime().halt(status);
        private RedisLeaseService.@Nullable Replicas redisReplicas;
        private @Nullable SSLContext redisTls;
        private @Nullable String redisUser;
        private @Nullable String redisPassword;

        private Builder() {
        }

        /**
         * Sets who holds the leases (stored in the lock service, shown to operators). Leases of the same name taken
         * under the same identity replace each other (with a new token), which lets a restarted process take its
         * lease back at once; give every process its own identity.
         *
         * @param identity a non-empty identity
         * @return this builder
         * @throws IllegalArgumentException if {@code identity} is empty
         */
        public Builder holderIdentity(String identity) {
            Objects.requireNonNull(identity, "identity");
            if (identity.isBlank()) {
                throw new IllegalArgumentException("holder identity must not be blank");
            }
            this.holder = identity;
            return this;
        }

        /**
         * Sets how often the watchdog renews, as a fraction of the ttl (the retry period). Default 1/3.
         *
         * @param fraction in (0, 1)
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder renewFraction(double fraction) {
            if (!(fraction > 0 && fraction < 1)) {
                throw new IllegalArgumentException("renew fraction must be in (0, 1), was " + fraction);
            }
            this.renewFraction = fraction;
            return this;
        }

        /**
         * Sets the renew deadline as a fraction of the ttl: a lease whose last successful renewal was sent longer
         * ago than this is given up ({@link LossReason#EXPIRED}). Default 2/3. Must satisfy
         * {@code 1 > deadline > renewFraction × 1.2}, checked when a provider is built.
         *
         * @param fraction in (0, 1)
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder renewDeadline(double fraction) {
            if (!(fraction > 0 && fraction < 1)) {
                throw new IllegalArgumentException("renew deadline must be in (0, 1) of the ttl, was " + fraction);
            }
            this.renewDeadlineFraction = fraction;
            return this;
        }

        /**
         * Sets the monotonic time source (tests advance their own).
         *
         * @param ticker the ticker
         * @return this builder
         */
        public Builder ticker(Ticker ticker) {
            this.ticker = Objects.requireNonNull(ticker, "ticker");
            return this;
        }

        /**
         * Stops the whole process with {@code status} when a lease is lost (not when it is released): the listeners
         * run first (that is the hook to cancel work and log), then {@link Runtime#halt(int)}. Shutdown hooks do not
         * run, because a hook that writes is exactly what must not happen any more. This is the {@code os.Exit(1)}
         * in client-go's {@code OnStoppedLeading}: the surest way to stop every thread that might still write.
         *
         * @param status the exit status, 1..255 (75, EX_TEMPFAIL, is a good choice)
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder exitOnLoss(int status) {
            if (status < 1 || status > 255) {
                throw new IllegalArgumentException("exit status must be 1..255, was " + status);
            }
            this.exitStatus = status;
            return this;
        }

        /**
         * Redis only: after every acquisition and renewal, {@code WAIT replicas timeout} on the same connection. An
         * acquisition that fewer replicas acknowledged is not granted (it is released on the primary and
         * {@code acquire} throws); a renewal that fewer acknowledged ends the lease
         * ({@link LossReason#CONNECTION_LOST}). It narrows the failover window (a replica promoted without the
         * lock), it does not close it: see the locks guide. The renewal's {@code WAIT} gets at most the time left
         * before the lease would expire.
         *
         * @param replicas how many replicas must acknowledge, at least 1
         * @param timeout  how long Redis may wait for them (positive; {@code WAIT 0} would wait forever)
         * @return this builder
         * @throws IllegalArgumentException if out of range
         */
        public Builder redisReplicas(int replicas, Duration timeout) {
            if (replicas < 1) {
                throw new IllegalArgumentException("replicas must be at least 1, was " + replicas);
            }
            if (timeout.toMillis() < 1) {
                throw new IllegalArgumentException("the replica timeout must be at least 1 ms, was " + timeout);
            }
            this.redisReplicas = new RedisLeaseService.Replicas(replicas, timeout);
            return this;
        }

        /**
         * Redis only: the TLS context for a {@code rediss://} URL (the CA to trust, a client certificate for a server
         * with {@code tls-auth-clients yes}). Without it, the JVM's default context. The server's name is always
         * verified against the URL's host.
         *
         * @param context the context
         * @return this builder
         */
        public Builder redisTls(SSLContext context) {
            this.redisTls = Objects.requireNonNull(context, "context");
            return this;
        }

        /**
         * Redis only: the credentials ({@code AUTH user password}, or {@code AUTH password} for the default user when
         * {@code user} is null), instead of putting them in the URL.
         *
         * @param user     the ACL user, or null for the default user
         * @param password the password
         * @return this builder
         */
        public Builder redisCredentials(@Nullable String user, String password) {
            this.redisUser = user;
            this.redisPassword = Objects.requireNonNull(password, "password");
            return this;
        }

        /** Tests replace {@link Runtime#halt(int)}. */
        Builder exiter(IntConsumer exiter) {
            this.exiter = exiter;
            return this;
        }

        /**
         * An etcd provider (jetcd-core 0.8.5 on the class path). Token: the create revision of the lock key.
         *
         * @param endpoints etcd client URLs, e.g. {@code http://127.0.0.1:2379}
         * @return the provider
         * @throws IllegalArgumentException if no endpoint is given or the renewal fractions break the arithmetic
         */
        public LeaseProvider etcd(String... endpoints) {
            if (endpoints.length == 0) {
                throw new IllegalArgumentException("at least one etcd endpoint is needed");
            }
            Settings s = settings();
            return new WatchdogProvider(new EtcdLeaseService(endpoints, s.ticker()), s);
        }

        /**
         * A PostgreSQL provider over {@code dataSource}; creates the table {@code stockade_leases} if missing.
         * Token: a per-name counter raised by every acquisition. Use a pool: every renewal borrows a connection.
         *
         * @param dataSource connections to the database holding the lease table
         * @return the provider
         * @throws IllegalStateException if the table cannot be created
         */
        public LeaseProvider postgres(DataSource dataSource) {
            Objects.requireNonNull(dataSource, "dataSource");
            Settings s = settings();
            return new WatchdogProvider(new PostgresLeaseService(dataSource::getConnection, s.ticker()), s);
        }

        /**
         * A PostgreSQL provider that opens a connection per call from {@code jdbcUrl} (for the command line and
         * small jobs; prefer {@link #postgres(DataSource)} with a pool).
         *
         * @param jdbcUrl e.g. {@code jdbc:postgresql://127.0.0.1:5432/app?user=app}
         * @return the provider
         * @throws IllegalStateException if the table cannot be created
         */
        public LeaseProvider postgres(String jdbcUrl) {
            Objects.requireNonNull(jdbcUrl, "jdbcUrl");
            String url = PostgresPooling.url(jdbcUrl);
            Settings s = settings();
            return new WatchdogProvider(
                    new PostgresLeaseService(() -> DriverManager.getConnection(url), s.ticker()), s);
        }

        /**
         * A Redis provider (jedis 8 on the class path): the lock is the key named like the lease, its value
         * {@code <token>:<nonce>:<holder>}; the token counter is the key {@code stockade:token:{NAME}}. Works with a
         * standalone server (or a Sentinel-managed primary: give the primary's address) and with a Redis Cluster
         * (found out at the first connection). Connects at the first {@code acquire}.
         *
         * @param url {@code redis://host:port[/db]}, {@code rediss://host:port} (TLS, see {@link #redisTls}), with
         *            {@code user:password@} or {@code :password@} before the host, or see {@link #redisCredentials}
         * @return the provider
         * @throws IllegalArgumentException if the URL is not a Redis URL, or the renewal fractions break the
         *                                  arithmetic
         */
        public LeaseProvider redis(String url) {
            Settings s = settings();
            RedisLeaseService.Target target = RedisLeaseService.Target.parse(url, redisUser, redisPassword, redisTls);
            return new WatchdogProvider(new RedisLeaseService(target, redisReplicas, s.ticker()), s);
        }

        /**
         * A ZooKeeper provider (org.apache.zookeeper:zookeeper 3.9 on the class path): Curator's
         * {@code InterProcessMutex} recipe under the path {@code "/" + name}, one session per lease with the ttl as
         * its session timeout. Token: the lock node's creation zxid. See {@link #zookeeper(String, String)}.
         *
         * @param servers {@code host:port[,host:port…]}
         * @return the provider
         */
        public LeaseProvider zookeeper(String servers) {
            return zookeeper(servers, "/");
        }

        /**
         * A ZooKeeper provider (org.apache.zookeeper:zookeeper 3.9 on the class path). Acquire creates an ephemeral
         * sequential node {@code prefix + name + "/_c_<uuid>-lock-<seq>"} and waits until it has the lowest
         * sequence number (Curator's {@code InterProcessMutex} recipe: both take turns on the same path); the token
         * is that node's creation zxid ({@code czxid}), which every later holder's node exceeds. Each lease has its
         * own session, whose timeout is the lease's ttl (the servers must allow it: between their min and max
         * session timeout, by default 2 and 20 {@code tickTime}; a shorter one granted fails the acquisition). The
         * lease is lost when a renewal finds the node gone or not ours, when the session expires, and — at once —
         * when the client is disconnected (Curator's {@code SUSPENDED}): the session may already have expired.
         *
         * @param servers {@code host:port[,host:port…]}, no chroot
         * @param prefix  an absolute path the lease name is appended to, e.g. {@code /locks/} (the proxy's
         *                {@code fence.verify} {@code prefix})
         * @return the provider
         * @throws IllegalArgumentException if no server is given, the prefix is not absolute, or the renewal
         *                                  fractions break the arithmetic
         */
        public LeaseProvider zookeeper(String servers, String prefix) {
            Settings s = settings();
            return new WatchdogProvider(new ZooKeeperLeaseService(servers, prefix, s.ticker()), s);
        }

        /**
         * A Consul provider (its HTTP API over {@code java.net.http}; no Consul library). Acquire creates a session
         * ({@code TTL} = the lease's ttl rounded up to seconds, which Consul bounds to 10s..24h; {@code LockDelay}
         * 15s; {@code Behavior} release) and acquires the KV key {@code prefix + name} with it, polling while another
         * session holds the key or its lock-delay runs. Token: the key's {@code ModifyIndex} read with
         * {@code ?consistent} right after the acquire. The watchdog renews the session and checks the key still
         * names it; a renewal answered 404 (the session was invalidated) ends the lease ({@link LossReason#REVOKED}).
         * Release: {@code ?release} with the session, then destroy it. Tested against an in-process stand-in of
         * Consul's HTTP API, not against a real Consul.
         *
         * @param url      the Consul agent's HTTP API, e.g. {@code http://127.0.0.1:8500}
         * @param prefix   prepended to the lease name to give the KV key, e.g. {@code locks/} (the proxy's
         *                 {@code fence.verify} {@code prefix}); must not start with '/'
         * @param aclToken the ACL token sent as {@code X-Consul-Token} ({@code session:write}, {@code key:write} on
         *                 the keys), or null for none
         * @return the provider
         * @throws IllegalArgumentException if the URL is not http(s), the prefix starts with '/', or the renewal
         *                                  fractions break the arithmetic
         */
        public LeaseProvider consul(URI url, String prefix, @Nullable String aclToken) {
            return consul(url, prefix, aclToken, HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5))
                    .version(HttpClient.Version.HTTP_1_1).build());
        }

        LeaseProvider consul(URI url, String prefix, @Nullable String aclToken, HttpClient http) {
            Objects.requireNonNull(url, "url");
            Objects.requireNonNull(prefix, "prefix");
            Settings s = settings();
            return new WatchdogProvider(new ConsulLeaseService(url, prefix, aclToken, http, s.ticker()), s);
        }

        /**
         * A DynamoDB provider (software.amazon.awssdk:dynamodb 2.x on the class path; the caller builds the client,
         * with its region, credentials and HTTP client, and closes it). Each lease is an item of {@code table}
         * (partition key {@code key} = {@code prefix + name}; make the table with {@link DynamoDbLockTable#create}
         * or your infrastructure code) taken and kept by conditional writes. Token: the item's {@code token}, raised
         * by one with {@code ADD} in the acquiring write itself. A held lock is taken over only once this process has
         * read the same record version number ({@code rvn}) for the holder's whole lease duration on its own
         * monotonic clock (no clock is compared across machines). Renewal writes a new {@code rvn} on the condition
         * that ours is still there (else {@link LossReason#RENEWAL_REFUSED}, or {@link LossReason#REVOKED} when the
         * item was released or deleted); release marks the item released (it is never deleted: that would start
         * the counter again). Tested against dynalite, a third-party implementation of the DynamoDB API.
         *
         * @param client the DynamoDB client (not closed by the provider)
         * @param table  the lock table, e.g. {@code stockade-locks}
         * @param prefix prepended to the lease name to give the item's key, e.g. {@code locks/} (the proxy's
         *               {@code fence.verify} {@code prefix}); may be empty
         * @return the provider
         * @throws IllegalArgumentException if the table name is not one DynamoDB allows, or the renewal fractions
         *                                  break the arithmetic
         */
        public LeaseProvider dynamodb(DynamoDbClient client, String table,
                                      String prefix) {
            Objects.requireNonNull(client, "client");
            Objects.requireNonNull(prefix, "prefix");
            Settings s = settings();
            return new WatchdogProvider(new DynamoDbLeaseService(client, table, prefix, s.ticker()), s);
        }

        /**
         * A Kubernetes provider using {@code coordination.k8s.io/v1} Leases through the API server's REST API.
         * Token: {@code spec.leaseTransitions}, raised on every acquisition. The ttl becomes
         * {@code leaseDurationSeconds} (rounded up).
         *
         * @param apiServer   the API server, e.g. {@code https://kubernetes.default.svc}
         * @param namespace   the namespace of the Lease objects
         * @param bearerToken a service-account token, or null for none
         * @return the provider
         */
        public LeaseProvider kubernetes(URI apiServer, String namespace, @Nullable String bearerToken) {
            return kubernetes(apiServer, namespace, bearerToken,
                    HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build());
        }

        /**
         * A Kubernetes provider for a pod: the API server from {@code KUBERNETES_SERVICE_HOST}/{@code _PORT}, the
         * namespace, token and CA from {@code /var/run/secrets/kubernetes.io/serviceaccount/}. The service account
         * needs get, create and update on {@code leases} in {@code coordination.k8s.io}.
         *
         * @param namespace the namespace of the Lease objects, or null for the pod's own
         * @return the provider
         * @throws IllegalStateException if not running in a pod
         */
        public LeaseProvider kubernetesInCluster(@Nullable String namespace) {
            Path sa = Path.of("/var/run/secrets/kubernetes.io/serviceaccount");
            String host = System.getenv("KUBERNETES_SERVICE_HOST");
            String port = System.getenv("KUBERNETES_SERVICE_PORT");
            if (host == null || port == null || !Files.isDirectory(sa)) {
                throw new IllegalStateException("not in a Kubernetes pod: KUBERNETES_SERVICE_HOST/PORT or " + sa
                        + " missing");
            }
            try (InputStream ca = Files.newInputStream(sa.resolve("ca.crt"))) {
                KeyStore trust = KeyStore.getInstance(KeyStore.getDefaultType());
                trust.load(null, null);
                int i = 0;
                for (Certificate c : CertificateFactory.getInstance("X.509").generateCertificates(ca)) {
                    trust.setCertificateEntry("ca" + i++, c);
                }
                TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
                tmf.init(trust);
                SSLContext ssl = SSLContext.getInstance("TLS");
                ssl.init(null, tmf.getTrustManagers(), null);
                String ns = namespace != null ? namespace
                        : Files.readString(sa.resolve("namespace"), StandardCharsets.UTF_8).strip();
                String token = Files.readString(sa.resolve("token"), StandardCharsets.UTF_8).strip();
                String h = host.contains(":") ? "[" + host + "]" : host;
                return kubernetes(URI.create("https://" + h + ":" + port), ns, token, HttpClient.newBuilder()
                        .sslContext(ssl).connectTimeout(Duration.ofSeconds(5)).build());
            } catch (IOException | GeneralSecurityException e) {
                throw new IllegalStateException("cannot read the service account in " + sa + ": " + e, e);
            }
        }

        LeaseProvider kubernetes(URI apiServer, String namespace, @Nullable String bearerToken, HttpClient http) {
            Objects.requireNonNull(apiServer, "apiServer");
            Objects.requireNonNull(namespace, "namespace");
            Settings s = settings();
            return new WatchdogProvider(
                    new KubernetesLeaseService(apiServer, namespace, bearerToken, http, s.ticker()), s);
        }

        Settings settings() {
            if (renewDeadlineFraction <= renewFraction * JITTER) {
                throw new IllegalArgumentException("renew deadline " + renewDeadlineFraction + " of the ttl must be "
                        + "greater than the renew fraction " + renewFraction + " × jitter factor " + JITTER);
            }
            return new Settings(holder == null ? defaultIdentity() : holder, renewFraction, renewDeadlineFraction,
                    ticker, exitStatus, exiter);
        }

        private static String defaultIdentity() {
            String host;
            try {
                host = InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                host = "unknown-host";
            }
            return host + "-" + ProcessHandle.current().pid() + "-"
                    + UUID.randomUUID().toString().substring(0, 8);
        }
    }

}
