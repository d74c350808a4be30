package io.stockade.proxy.verify.redis;

import java.io.IOException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;

import redis.clients.jedis.exceptions.JedisAccessControlException;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisMovedDataException;

/**
 * A token is genuine when the Redis key {@code prefix + scope} exists and its value holds exactly this token. The
 * client SDK's Redis provider writes the lock key as {@code SET key "<token>:<nonce>:<holder>" NX PX ttl} (in one
 * script with the token counter), renews it by compare-and-{@code PEXPIRE} and deletes it by compare-and-delete on
 * release: the key exists exactly while a holder has the lock, and names that holder's token. One pipeline per
 * lookup: {@code GET}, {@code PTTL} (how long the holder's lock remains, so a remembered verdict ends before it),
 * {@code GET} again (the same value: the {@code PTTL} was that holder's).
 * <p>
 * A missing key (expired, released, never taken), a value of another holder, and a key that is not a Stockade lock
 * (another value, another type) are {@link Refused}. Any doubt — Redis down or too slow, a refused {@code AUTH}, a
 * failed TLS handshake, an ACL that forbids the read — is {@link Unavailable}, never a pass.
 * <p>
 * What this cannot see: a Redis failover that lost the lock key (the promoted replica never had it). Then the key
 * is missing and the old holder is refused (as it should be), or a second holder took it on the new primary and
 * only that holder's token is genuine. The verifier never admits a token the current primary does not hold.
 */
public final class RedisLockVerifier implements TokenVerifier {
    /** The SDK's value: the token in decimal, then ':' and what makes the value unique (nonce, holder). */
    private static final Pattern VALUE = Pattern.compile("(0|[1-9][0-9]{0,18}):.*", Pattern.DOTALL);

    private final RedisConnections redis;
    private final String prefix;
    private final Duration timeout;
    private volatile boolean closed;

    private RedisLockVerifier(RedisConnections redis, TokenVerification.Redis config) {
        this.redis = redis;
        this.prefix = config.prefix();
        this.timeout = config.timeout();
    }

    /**
     * Reads the TLS and password files now; connects at the first lookup, so while Redis is unreachable (or TLS or
     * authentication fails) every verdict is {@link Unavailable} and the proxy starts.
     *
     * @param what the policy field the block comes from, to start messages with
     * @throws IOException when a TLS file or the password file cannot be read
     */
    public static RedisLockVerifier open(TokenVerification.Redis config, String what) throws IOException {
        return new RedisLockVerifier(RedisConnections.open(config, what), config);
    }

    @Override
    public Verdict verify(Claim claim) {
        if (closed) {
            return new Unavailable("verifier closed");
        }
        String key = prefix + claim.scope();
        long sent = System.nanoTime();
        long deadline = sent + timeout.toNanos();
        RedisConnections.Lookup lookup;
        try {
            lookup = read(key, deadline);
        } catch (JedisAccessControlException e) {
            return new Unavailable("Redis at " + redis.where() + " refused the verifier: "
                    + RedisConnections.describe(e)
                    + " (check username, password and the user's ACL: it needs +get and +pttl on the lock keys, and"
                    + " +cluster|slots in a Redis Cluster)");
        } catch (JedisDataException e) {
            if (String.valueOf(e.getMessage()).startsWith("WRONGTYPE")) {
                return new Refused("the Redis key '" + key + "' is not a Stockade lock (not a string)");
            }
            return new Unavailable("Redis at " + redis.where() + ": " + RedisConnections.describe(e));
        } catch (JedisException e) {
            return new Unavailable("Redis at " + redis.where() + ": " + RedisConnections.describe(e));
        } catch (RuntimeException e) {
            return new Unavailable("Redis client: " + e);
        }
        String value = lookup.value();
        if (value == null) {
            return new Refused("nobody holds the Redis lock '" + key + "' (no such key: never taken, expired or"
                    + " released)");
        }
        Matcher m = VALUE.matcher(value);
        if (!m.matches()) {
            return new Refused("the Redis key '" + key + "' is not a Stockade lock (its value is not"
                    + " <token>:<nonce>:<holder>)");
        }
        long holderToken = Long.parseLong(m.group(1));
        if (holderToken != claim.token()) {
            // the holder's token stays out of the client's answer: a forger would send it back
            return new Refused("not the token of the holder of the Redis lock '" + key + "'",
                    "the holder has token " + holderToken);
        }
        return lookup.pttlMillis() < 0 ? Genuine.noTimeLeftKnown(sent)
                : Genuine.leaseLeft(sent, TimeUnit.MILLISECONDS.toNanos(lookup.pttlMillis()));
    }

    /**
     * One {@code GET} within the deadline. A pooled connection that Redis closed while it sat idle (a restart, an
     * idle timeout) fails at once; the read is retried once on a new connection while time is left, since a
     * {@code GET} can be repeated. A {@code MOVED} answer says the server is a Redis Cluster node that does not serve
     * the key's slot: the read goes through the cluster client from then on.
     */
    private RedisConnections.Lookup read(String key, long deadline) {
        RedisConnections.Reader reader = redis.reader();
        try {
            return reader.get(key, left(deadline));
        } catch (JedisMovedDataException moved) {
            return redis.cluster(reader).get(key, left(deadline));
        } catch (JedisConnectionException first) {
            if (deadline - System.nanoTime() <= 0) {
                throw first;
            }
            try {
                return redis.reader().get(key, left(deadline));
            } catch (JedisConnectionException again) {
                again.addSuppressed(first);
                throw again;
            }
        }
    }

    private static Duration left(long deadline) {
        return Duration.ofNanos(Math.max(1_000_000, deadline - System.nanoTime()));
    }

    @Override
    public String kind() {
        return "redis";
    }

    @Override
    public void close() {
        closed = true;
        redis.close();
    }
}
