package io.stockade.client;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.HexFormat;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.jspecify.annotations.Nullable;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.Connection;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisMovedDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;
import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Redis: the lock is one key named like the lease, set with {@code NX PX ttl} by a Lua script that, only when it
 * takes the lock, raises a per-lock counter key that never expires and stores the new token in the lock's value
 * with a random nonce and the holder's identity ({@code <token>:<nonce>:<holder>}). Renewal is a compare-and-
 * {@code PEXPIRE} on that exact value, release a compare-and-{@code DEL}: neither ever touches another acquisition's
 * lock. Optionally every acquisition and renewal is followed by {@code WAIT n timeout} on the same connection, and
 * is refused (not granted, or lost) when fewer than {@code n} replicas acknowledged it.
 * <p>
 * <b>The token.</b> The counter, but never below the Redis server's clock in milliseconds ({@code TIME}): the counter
 * alone rises across holders, expiries and restarts with persistence, but a failover to a replica that never
 * received the last acquisition (or a crash that lost the last second of an {@code everysec} AOF) loses the counter's
 * last step together with the lock, and the next holder would get <em>the same</em> token — two holders the fence
 * cannot tell apart. With the clock as a floor the next token is higher as long as the new primary's clock is ahead
 * of the old one's at the lost acquisition, i.e. the clocks differ by less than the failover took (seconds).
 * <p>
 * <b>Keys.</b> The lock key is the lease name; the counter is {@code stockade:token:{NAME}} (or
 * {@code stockade:token:NAME} when the name has a hash tag of its own), so in a Redis Cluster both keys hash to the
 * same slot and the script can touch both. A name that cannot share a slot with any counter key (a {@code '}'} but no
 * hash tag) is refused in cluster mode; names starting with {@code stockade:token:} are refused everywhere.
 */
final class RedisLeaseService implements LeaseService {

    /** Where the counters live. */
    static final String COUNTER_PREFIX = "stockade:token:";

    /**
     * KEYS[1] lock, KEYS[2] counter; ARGV[1] ttl ms, ARGV[2] holder, ARGV[3] nonce. Returns {1, token} or {0, pttl}.
     */
    static final String ACQUIRE = """
            local held = redis.call('GET', KEYS[1])
            if held and string.match(held, '^%d+:%x+:(.*)$') ~= ARGV[2] then
              return {0, redis.call('PTTL', KEYS[1])}
            end
            local clock = redis.call('TIME')
            local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
            local token = redis.call('INCR', KEYS[2])
            if token < now then
              token = redis.call('INCRBY', KEYS[2], now - token)
            end
            redis.call('SET', KEYS[1], string.format('%d:%s:%s', token, ARGV[3], ARGV[2]), 'PX', ARGV[1],
                       held and 'XX' or 'NX')
            return {1, token}
            """;

    /** KEYS[1] lock; ARGV[1] our value, ARGV[2] ttl ms. Returns 1 renewed, -1 another value, 0 no lock. */
    static final String RENEW = """
            local held = redis.call('GET', KEYS[1])
            if held == ARGV[1] then
              redis.call('PEXPIRE', KEYS[1], ARGV[2])
              return 1
            end
            if held then
              return -1
            end
            return 0
            """;

    /** KEYS[1] lock; ARGV[1] our value. Returns 1 deleted, 0 not ours (or gone). */
    static final String RELEASE = """
            if redis.call('GET', KEYS[1]) == ARGV[1] then
              return redis.call('DEL', KEYS[1])
            end
            return 0
            """;

    /** The longest a single call may take, besides a {@code WAIT}. */
    private static final Duration RPC_TIMEOUT = Duration.ofSeconds(5);
    private static final SecureRandom RANDOM = new SecureRandom();

    /**
     * Where Redis is and how to log in.
     *
     * @param host     host name or address
     * @param port     port
     * @param database the database ({@code SELECT})
     * @param tls      whether to speak TLS ({@code rediss://})
     * @param user     the ACL user, or null for the default user
     * @param password the password, or null for none
     * @param ssl      the TLS context (trust, client certificate), or null for the JVM's default
     */
    record Target(String host, int port, int database, boolean tls, @Nullable String user, @Nullable String password,
                  @Nullable SSLContext ssl) {

        /**
         * Parses {@code redis://[[user]:password@]host[:port][/db]} or {@code rediss://…} (TLS). As with
         * {@code redis-cli -u}, a user info without ':' is the default user's password. {@code user} and
         * {@code password}, when not null, replace what the URL says.
         *
         * @throws IllegalArgumentException naming what is wrong with the URL
         */
        static Target parse(String url, @Nullable String user, @Nullable String password, @Nullable SSLContext ssl) {
            URI uri;
            try {
                uri = new URI(Objects.requireNonNull(url, "url"));
            } catch (URISyntaxException e) {
                throw new IllegalArgumentException("not a Redis URL (" + e.getMessage() + ")");
            }
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            if (!scheme.equals("redis") && !scheme.equals("rediss")) {
                throw new IllegalArgumentException("a Redis URL is redis://host:port or rediss://host:port (TLS), not '"
                        + redact(uri) + "'");
            }
            if (uri.getHost() == null) {
                throw new IllegalArgumentException("Redis URL '" + redact(uri) + "' has no host");
            }
            int db = 0;
            String path = uri.getPath();
            if (path != null && !path.isEmpty() && !path.equals("/")) {
                if (!path.matches("/(0|[1-9][0-9]{0,4})")) {
                    throw new IllegalArgumentException("the path of Redis URL '" + redact(uri) + "' must be a"
                            + " database number, e.g. redis://host:6379/0");
                }
                db = Integer.parseInt(path.substring(1));
            }
            String u = null;
            String p = null;
            if (uri.getUserInfo() != null) {
                String info = uri.getUserInfo();
                int colon = info.indexOf(':');
                if (colon < 0) {
                    p = info;
                } else {
                    u = info.substring(0, colon).isEmpty() ? null : info.substring(0, colon);
                    p = info.substring(colon + 1).isEmpty() ? null : info.substring(colon + 1);
                }
            }
            if (user != null) {
                u = user;
            }
            if (password != null) {
                p = password;
            }
            if (u != null && p == null) {
                throw new IllegalArgumentException("Redis user '" + u + "' needs a password (in the URL, or"
                        + " Leases.Builder.redisCredentials)");
            }
            if (ssl != null && !scheme.equals("rediss")) {
                throw new IllegalArgumentException("a TLS context was given for '" + redact(uri)
                        + "': write rediss://");
            }
            return new Target(uri.getHost(), uri.getPort() < 0 ? 6379 : uri.getPort(), db, scheme.equals("rediss"),
                    u, p, ssl);
        }

        private static String redact(URI uri) {
            String s = uri.toString();
            return uri.getRawUserInfo() == null ? s : s.replace(uri.getRawUserInfo() + "@", "…@");
        }

        @Override
        public String toString() {
            return (tls ? "rediss://" : "redis://") + new HostAndPort(host, port) + "/" + database;
        }

        JedisClientConfig config() {
            int millis = (int) RPC_TIMEOUT.toMillis();
            DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                    .connectionTimeoutMillis(millis)
                    .socketTimeoutMillis(millis)
                    .database(database)
                    .clientName("stockade-lease")
                    .clientSetInfoConfig(ClientSetInfoConfig.DISABLED) // one command less for the ACL
                    // the server's own protocol, no HELLO: and Jedis does not warn that it cannot negotiate RESP3
                    .serverDefaultProtocol();
            if (password != null) {
                b.password(password);
                if (user != null) {
                    b.user(user);
                }
            }
            if (tls) {
                SSLContext context = ssl;
                if (context == null) {
                    try {
                        context = SSLContext.getDefault();
                    } catch (NoSuchAlgorithmException e) {
                        throw new IllegalStateException(e);
                    }
                }
                SSLParameters parameters = new SSLParameters();
                parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the server's name against the URL's host
                b.ssl(true).sslSocketFactory(context.getSocketFactory()).sslParameters(parameters);
            }
            return b.build();
        }
    }

    /**
     * {@code WAIT count timeout} after every acquisition and renewal.
     *
     * @param count   replicas that must acknowledge the write
     * @param timeout how long Redis may wait for them
     */
    record Replicas(int count, Duration timeout) {
    }

    private record Handle(String value) {
    }

    /** A script and its SHA-1, for {@code EVALSHA} with {@code EVAL} when the server does not know it yet. */
    private record Script(String text, String sha) {
        static Script of(String text) {
            try {
                return new Script(text, HexFormat.of().formatHex(MessageDigest.getInstance("SHA-1")
                        .digest(text.getBytes(StandardCharsets.UTF_8))));
            } catch (NoSuchAlgorithmException e) {
                throw new IllegalStateException(e);
            }
        }

        Object run(Jedis jedis, List<String> keys, List<String> args) {
            try {
                return jedis.evalsha(sha, keys, args);
            } catch (JedisNoScriptException e) {
                return jedis.eval(text, keys, args);
            }
        }
    }

    private static final Script ACQUIRE_SCRIPT = Script.of(ACQUIRE);
    private static final Script RENEW_SCRIPT = Script.of(RENEW);
    private static final Script RELEASE_SCRIPT = Script.of(RELEASE);

    /** Connections to the node serving a key: one pool (a standalone server) or the cluster's per-node pools. */
    private interface Nodes extends AutoCloseable {
        Jedis forKey(String key);

        boolean cluster();

        /** After a {@code MOVED}: learn the cluster's slots again. */
        void refresh();

        @Override
        void close();
    }

    private final Target target;
    private final @Nullable Replicas replicas;
    private final Ticker ticker;
    /**
     * Runs each call, so that the caller gets its answer within the call's budget whatever the socket does: a
     * stopped Redis accepts connections (the kernel does) and never answers, and the pool's validation, the
     * connection's handshake and the command each wait for a socket timeout of their own.
     */
    private final ExecutorService calls = Executors.newCachedThreadPool(r -> {
        Thread t = new Thread(r, "stockade-redis-call");
        t.setDaemon(true);
        return t;
    });
    private @Nullable Nodes nodes; // guarded by this; connected at first use

    RedisLeaseService(Target target, @Nullable Replicas replicas, Ticker ticker) {
        this.target = target;
        this.replicas = replicas;
        this.ticker = ticker;
    }

    /**
     * {@code body} on a pool thread, answered within {@code budget} or a {@link TimeoutException}. An abandoned call
     * ends by its own socket timeout; what it may still do is harmless: a late renewal or release compares the value,
     * and a late acquisition takes a lock that expires unless someone renews it.
     */
    private <T> T within(Duration budget, Callable<T> body) throws Exception {
        Future<T> call = calls.submit(body);
        try {
            return call.get(Math.max(1, budget.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            throw new TimeoutException(target + " did not answer within " + budget);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof Exception cause) {
                throw cause;
            }
            throw e;
        }
    }

    /** The counter key of a lock: {@code stockade:token:{NAME}}, or {@code stockade:token:NAME} with a hash tag. */
    static String counterKey(String name) {
        return COUNTER_PREFIX + (hasHashTag(name) ? name : "{" + name + "}");
    }

    /** Whether a key has a non-empty hash tag (Redis Cluster hashes only what is between its first '{' and '}'). */
    static boolean hasHashTag(String key) {
        int open = key.indexOf('{');
        return open >= 0 && key.indexOf('}', open + 1) > open + 1;
    }

    /** The counter key of {@code name}, refusing names that cannot be locks here. */
    private String keys(String name, boolean cluster) {
        if (name.startsWith(COUNTER_PREFIX)) {
            throw new IllegalArgumentException("lease name '" + name + "': names starting with '" + COUNTER_PREFIX
                    + "' are the token counters' (" + target + ")");
        }
        String counter = counterKey(name);
        if (cluster && JedisClusterCRC16.getSlot(name) != JedisClusterCRC16.getSlot(counter)) {
            throw new IllegalArgumentException("lease name '" + name + "' cannot share a Redis Cluster slot with its"
                    + " token counter '" + counter + "' (" + target + " is a cluster): a name with a '}' needs a hash"
                    + " tag, e.g. '{" + name.replace("{", "").replace("}", "") + "}' — the lock key is the lease"
                    + " name, and a Lua script may only touch keys of one slot");
        }
        return counter;
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        long deadline = ticker.read() + timeout.toNanos();
        String ttlMillis = Long.toString(millisUp(ttl));
        long poll = LeaseService.pollNanos(ttl);
        String nonce = HexFormat.of().formatHex(bytes(16));
        while (true) {
            Grant grant;
            long[] pttl = {0};
            try {
                Nodes n = within(RPC_TIMEOUT, this::nodes);
                String counter = keys(name, n.cluster());
                Duration budget = replicas == null ? RPC_TIMEOUT : RPC_TIMEOUT.plus(replicas.timeout());
                grant = within(budget, () -> onNode(n, name, jedis -> {
                    long sent = ticker.read();
                    List<?> answer = (List<?>) ACQUIRE_SCRIPT.run(jedis, List.of(name, counter),
                            List.of(ttlMillis, holder, nonce));
                    if (((Long) answer.get(0)) != 1) {
                        pttl[0] = (Long) answer.get(1);
                        return null;
                    }
                    long token = (Long) answer.get(1);
                    String value = token + ":" + nonce + ":" + holder;
                    if (replicas != null) {
                        long acked = waitReplicas(jedis, replicas.count(), replicas.timeout());
                        if (acked < replicas.count()) {
                            RELEASE_SCRIPT.run(jedis, List.of(name), List.of(value));
                            throw new NotReplicated("lease '" + name + "' (token " + token + ") was taken on "
                                    + target + " but reached " + acked + " of the " + replicas.count()
                                    + " replicas required within " + replicas.timeout() + ": not granted (released"
                                    + " on the primary)");
                        }
                    }
                    return new Grant(token, sent, new Handle(value));
                }));
            } catch (NotReplicated e) {
                throw new IOException(e.getMessage());
            } catch (JedisException e) {
                throw new IOException(target + ": " + describe(e), e);
            } catch (TimeoutException e) {
                throw new IOException(e.getMessage(), e); // Redis did not answer: not "held by another holder"
            }
            if (grant != null) {
                return grant;
            }
            long left = deadline - ticker.read();
            if (left <= 0) {
                throw new TimeoutException("lease '" + name + "' is held by another holder; not acquired within "
                        + timeout);
            }
            long untilFree = pttl[0] > 0 ? TimeUnit.MILLISECONDS.toNanos(pttl[0]) : poll;
            TimeUnit.NANOSECONDS.sleep(Math.max(TimeUnit.MILLISECONDS.toNanos(1), Math.min(left,
                    Math.min(poll, untilFree))));
        }
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        long deadline = ticker.read() + timeout.toNanos();
        String value = ((Handle) grant.handle()).value();
        try {
            return within(timeout, () -> onNode(nodes(), name, jedis -> {
                jedis.getConnection().setSoTimeout(millisLeft(deadline));
                long answer = (Long) RENEW_SCRIPT.run(jedis, List.of(name), List.of(value,
                        Long.toString(millisUp(ttl))));
                if (answer == 0) {
                    return Renewal.REVOKED;
                }
                if (answer < 0) {
                    return Renewal.REFUSED;
                }
                if (replicas != null) {
                    long left = deadline - ticker.read();
                    Duration wait = Duration.ofNanos(Math.max(TimeUnit.MILLISECONDS.toNanos(1),
                            Math.min(left, replicas.timeout().toNanos())));
                    long acked = waitReplicas(jedis, replicas.count(), wait);
                    if (acked < replicas.count()) {
                        throw new NotReplicated("the renewal reached " + acked + " of the " + replicas.count()
                                + " replicas required within " + wait + " (" + target + ")");
                    }
                }
                return Renewal.RENEWED;
            }));
        } catch (NotReplicated e) {
            throw new IOException(e.getMessage());
        } catch (JedisException e) {
            throw new IOException(target + ": " + describe(e), e);
        }
    }

    @Override
    public void release(String name, String holder, Grant grant) throws Exception {
        String value = ((Handle) grant.handle()).value();
        try {
            within(RPC_TIMEOUT, () -> onNode(nodes(), name, jedis -> RELEASE_SCRIPT.run(jedis, List.of(name),
                    List.of(value))));
        } catch (JedisException e) {
            throw new IOException(target + ": " + describe(e), e);
        }
    }

    @Override
    public synchronized void close() {
        calls.shutdownNow();
        if (nodes != null) {
            nodes.close();
            nodes = null;
        }
    }

    /** {@code WAIT} on the connection that made the write (it waits for this client's writes only). */
    private static long waitReplicas(Jedis jedis, int count, Duration timeout) {
        long millis = Math.max(1, timeout.toMillis()); // WAIT 0 would wait forever
        jedis.getConnection().setSoTimeout((int) Math.min(Integer.MAX_VALUE, millis + RPC_TIMEOUT.toMillis()));
        return jedis.waitReplicas(count, millis);
    }

    /** Not enough replicas acknowledged a write. */
    private static final class NotReplicated extends RuntimeException {
        NotReplicated(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Runs {@code body} on a connection to the node serving {@code key} (its socket timeout reset to the call
     * timeout). In a cluster, a {@code MOVED} answer (the slot moved; nothing was done) makes the client learn the
     * slots again and run the body once more.
     */
    private static <T> T onNode(Nodes nodes, String key, Function<Jedis, T> body) {
        for (int attempt = 1; ; attempt++) {
            try (Jedis jedis = nodes.forKey(key)) {
                jedis.getConnection().setSoTimeout((int) RPC_TIMEOUT.toMillis());
                return body.apply(jedis);
            } catch (JedisMovedDataException e) {
                if (!nodes.cluster() || attempt > 1) {
                    throw e;
                }
                nodes.refresh();
            }
        }
    }

    private synchronized Nodes nodes() {
        if (nodes == null) {
            nodes = connect();
        }
        return nodes;
    }

    private Nodes connect() {
        JedisClientConfig config = target.config();
        HostAndPort node = new HostAndPort(target.host(), target.port());
        boolean cluster;
        try (Jedis probe = new Jedis(node, config)) {
            cluster = probe.info("cluster").contains("cluster_enabled:1");
        }
        if (cluster) {
            GenericObjectPoolConfig<Connection> pool = new GenericObjectPoolConfig<>();
            pool.setMaxTotal(8);
            pool.setMaxWait(RPC_TIMEOUT);
            pool.setTestOnBorrow(true);
            JedisCluster client = new JedisCluster(Set.of(node), config, 2, RPC_TIMEOUT, pool);
            return new Nodes() {
                @Override
                public Jedis forKey(String key) {
                    return new Jedis(client.getConnectionFromSlot(JedisClusterCRC16.getSlot(key)));
                }

                @Override
                public boolean cluster() {
                    return true;
                }

                @Override
                public void refresh() {
                    client.refreshClusterTopology();
                }

                @Override
                public void close() {
                    client.close();
                }
            };
        }
        GenericObjectPoolConfig<Jedis> poolConfig = new GenericObjectPoolConfig<>();
        poolConfig.setMaxTotal(8);
        poolConfig.setMaxWait(RPC_TIMEOUT);
        // a pooled connection Redis closed (a restart, a failover) is found out before a renewal is sent on it
        poolConfig.setTestOnBorrow(true);
        JedisPool pool = new JedisPool(poolConfig, node, config);
        return new Nodes() {
            @Override
            public Jedis forKey(String key) {
                return pool.getResource();
            }

            @Override
            public boolean cluster() {
                return false;
            }

            @Override
            public void refresh() {
            }

            @Override
            public void close() {
                pool.close();
            }
        };
    }

    private static String describe(JedisException e) {
        String m = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage();
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            if (t instanceof SSLException && !m.contains(String.valueOf(t.getMessage()))) {
                return m + " (TLS: " + t.getMessage() + ")";
            }
        }
        return e instanceof JedisMovedDataException ? m + " (the cluster's slots moved)" : m;
    }

    private int millisLeft(long deadline) {
        return (int) Math.clamp(TimeUnit.NANOSECONDS.toMillis(deadline - ticker.read()), 1, Integer.MAX_VALUE);
    }

    /** Whole milliseconds, rounded up: the server's TTL is never shorter than ours. */
    private static long millisUp(Duration d) {
        return Math.max(1, (d.toNanos() + 999_999) / 1_000_000);
    }

    private static byte[] bytes(int n) {
        byte[] b = new byte[n];
        RANDOM.nextBytes(b);
        return b;
    }
}
