package io.stockade.proxy.verify.redis;

import java.io.IOException;
import java.security.NoSuchAlgorithmException;
import java.time.Duration;
import java.util.Objects;
import java.util.Set;
import java.util.function.Supplier;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLParameters;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.io.SecretFiles;
import io.stockade.proxy.tls.ClientTlsFiles;

import org.apache.commons.pool2.impl.GenericObjectPoolConfig;
import org.jspecify.annotations.Nullable;
import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPool;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisException;

/**
 * The verifier's way to the Redis server of a {@code fence.verify: {kind: redis}} block: the client options (AUTH
 * with the ACL user or the default user, the database, TLS with the policy's {@code tls} files and the server's name
 * always verified against the URL's host), and a reader of one key that works against a standalone server (a pool
 * of connections) and against a Redis Cluster. The reader starts as a pool to the URL's node; a {@code MOVED} answer
 * (the key's slot is served by another node of a cluster) switches it to the cluster client, which follows the
 * cluster's slots from then on. So the verifier needs {@code +get} and {@code +pttl} on the lock keys (without
 * {@code +pttl} a verdict is remembered for the bound of a lock service that reports no time left) and nothing else
 * on a standalone server (and {@code +cluster|slots} in a cluster), and the proxy starts while Redis is down.
 */
final class RedisConnections implements AutoCloseable {

    /**
     * What one lookup read: the key's value ({@code null}: no such key) and how long it had to live.
     *
     * @param pttlMillis the key's {@code PTTL} when it held {@code value} throughout ({@code GET}, {@code PTTL},
     *                   {@code GET} in one pipeline, both reads the same value: a lock value is unique per
     *                   acquisition, so the {@code PTTL} is that holder's); {@code -1} for a key without an
     *                   expiry or a {@code PTTL} the ACL refused; {@code 0} when the key changed in between
     */
    record Lookup(@Nullable String value, long pttlMillis) {
    }

    /** Reads one string key; throws {@link JedisException} on anything but an answer. */
    interface Reader extends AutoCloseable {
        Lookup get(String key, Duration timeout);

        @Override
        void close();
    }

    private final HostAndPort node;
    private final JedisClientConfig config;
    private final Duration timeout;
    private volatile @Nullable Reader reader;
    private volatile boolean closed;

    private RedisConnections(HostAndPort node, JedisClientConfig config, Duration timeout) {
        this.node = node;
        this.config = config;
        this.timeout = timeout;
    }

    /**
     * Reads the files (TLS, password) now, so a bad one stops the start naming it; connects later.
     *
     * @param what the policy field the block comes from, to start messages with
     */
    static RedisConnections open(TokenVerification.Redis c, String what) throws IOException {
        int millis = (int) Math.min(Integer.MAX_VALUE, c.timeout().toMillis());
        DefaultJedisClientConfig.Builder b = DefaultJedisClientConfig.builder()
                .connectionTimeoutMillis(millis)
                .socketTimeoutMillis(millis)
                .database(c.database())
                // no CLIENT SETNAME / SETINFO: the verifier's ACL user needs +get, +pttl and nothing else
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                // the server's own protocol, no HELLO: and Jedis does not warn that it cannot negotiate RESP3
                .serverDefaultProtocol();
        String password = c.passwordFile() != null ? SecretFiles.password(c.passwordFile(), what + ".password-file")
                : c.password();
        if (password != null) {
            b.password(password);
            if (c.username() != null) {
                b.user(c.username());
            }
        }
        if (c.secure()) {
            SSLContext context;
            try {
                context = c.tls() == null ? SSLContext.getDefault()
                        : ClientTlsFiles.read(c.tls(), what + ".tls").sslContext();
            } catch (NoSuchAlgorithmException e) {
                throw new IOException(what + ".tls: " + e.getMessage(), e);
            }
            SSLParameters parameters = new SSLParameters();
            parameters.setEndpointIdentificationAlgorithm("HTTPS"); // the server's name against the URL's host
            b.ssl(true).sslSocketFactory(context.getSocketFactory()).sslParameters(parameters);
        }
        return new RedisConnections(new HostAndPort(c.url().getHost(), c.port()), b.build(), c.timeout());
    }

    /** The reader: a pool to the URL's node, or the cluster client once a {@code MOVED} said it is a cluster. */
    Reader reader() {
        Reader r = reader;
        if (r != null) {
            return r;
        }
        synchronized (this) {
            if (closed) {
                throw new JedisException("verifier closed");
            }
            Reader now = reader;
            if (now == null) {
                now = standalone();
                reader = now;
            }
            return now;
        }
    }

    /** After a {@code MOVED}: from now on through the cluster client (built once). */
    Reader cluster(Reader seen) {
        synchronized (this) {
            if (closed) {
                throw new JedisException("verifier closed");
            }
            if (reader == seen) {
                GenericObjectPoolConfig<redis.clients.jedis.Connection> pool = new GenericObjectPoolConfig<>();
                pool.setMaxTotal(32);
                pool.setMaxWait(timeout);
                JedisCluster client = new JedisCluster(Set.of(node), config, 2, timeout, pool);
                Reader before = reader;
                reader = new Reader() {
                    @Override
                    public Lookup get(String key, Duration deadline) {
                        String value = client.get(key);
                        Long pttl = value == null ? null : pttl(() -> client.pttl(key));
                        return lookup(value, pttl, value == null ? null : client.get(key));
                    }

                    @Override
                    public void close() {
                        client.close();
                    }
                };
                if (before != null) {
                    before.close();
                }
            }
            // seen came from reader(), and only close() (refused above, under this lock) clears the field
            return Objects.requireNonNull(reader, "reader");
        }
    }

    private Reader standalone() {
        GenericObjectPoolConfig<Jedis> poolConfig = new GenericObjectPoolConfig<>();
        poolConfig.setMaxTotal(32);
        poolConfig.setMaxIdle(8);
        poolConfig.setMaxWait(timeout);
        JedisPool pool = new JedisPool(poolConfig, node, config);
        return new Reader() {
            @Override
            public Lookup get(String key, Duration deadline) {
                try (Jedis jedis = pool.getResource()) {
                    jedis.getConnection().setSoTimeout((int) Math.clamp(deadline.toMillis(), 1, Integer.MAX_VALUE));
                    Pipeline p = jedis.pipelined();
                    Response<String> value = p.get(key);
                    Response<Long> pttl = p.pttl(key);
                    Response<String> again = p.get(key);
                    p.sync();
                    return lookup(value.get(), pttl(pttl), again.get());
                }
            }

            @Override
            public void close() {
                pool.close();
            }
        };
    }

    /** The lookup of {@code value} read before a {@code PTTL} and {@code again} after it (see {@link Lookup}). */
    private static Lookup lookup(@Nullable String value, @Nullable Long pttl, @Nullable String again) {
        if (value == null) {
            return new Lookup(null, 0);
        }
        long millis = pttl == null ? -1 : pttl;
        if (!value.equals(again) || millis == -2) {
            return new Lookup(value, 0);
        }
        return new Lookup(value, millis < 0 ? -1 : millis);
    }

    /** The {@code PTTL} answer, {@code null} when the server refused it (NOPERM: an ACL of {@code +get} only). */
    private static @Nullable Long pttl(Supplier<Long> read) {
        try {
            return read.get();
        } catch (JedisAccessControlException e) {
            return null;
        }
    }

    /** {@code host:port} for messages. */
    String where() {
        return node.toString();
    }

    @Override
    public synchronized void close() {
        closed = true;
        Reader r = reader;
        if (r != null) {
            r.close();
            reader = null;
        }
    }

    /**
     * A failure in one line for a 503 answer and the log, with the TLS reason when the handshake failed (Jedis says
     * only "Failed to connect" or "SSL peer shut down incorrectly"; the operator needs the why).
     */
    static String describe(Throwable e) {
        String message = e.getMessage() == null ? e.getClass().getSimpleName() : e.getMessage().lines().findFirst()
                .orElse("");
        for (Throwable t = e.getCause(); t != null; t = t.getCause()) {
            if (t instanceof SSLException) {
                Throwable root = t;
                while (root.getCause() != null) {
                    root = root.getCause();
                }
                return message.contains(String.valueOf(root.getMessage())) ? message
                        : message + " (TLS: " + root.getMessage() + ")";
            }
            if (t.getCause() == null && t.getMessage() != null && !message.contains(t.getMessage())) {
                return message + " (" + t.getMessage() + ")";
            }
        }
        return message;
    }
}
