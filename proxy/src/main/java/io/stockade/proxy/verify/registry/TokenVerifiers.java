package io.stockade.proxy.verify.registry;

import java.io.IOException;
import java.time.Clock;
import java.util.Collection;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.cache.RememberingVerifier;
import io.stockade.proxy.verify.consul.ConsulLockVerifier;
import io.stockade.proxy.verify.dynamodb.DynamoDbLockVerifier;
import io.stockade.proxy.verify.etcd.EtcdLockVerifier;
import io.stockade.proxy.verify.hmac.HmacVerifier;
import io.stockade.proxy.verify.kubernetes.KubernetesLeaseVerifier;
import io.stockade.proxy.verify.postgres.PostgresLeaseVerifier;
import io.stockade.proxy.verify.redis.RedisLockVerifier;
import io.stockade.proxy.verify.zookeeper.ZooKeeperLockVerifier;

import org.jspecify.annotations.Nullable;

/**
 * The open verifiers, one per distinct {@code fence.verify} block: policies with equal blocks share one (and its
 * cache), and a reload keeps the verifiers whose block did not change. One line per verifier kind in
 * {@link #openOne}.
 */
public final class TokenVerifiers implements AutoCloseable {
    private static final Logger LOG = Logger.getLogger(TokenVerifiers.class.getName());
    private final ConcurrentHashMap<TokenVerification, TokenVerifier> open = new ConcurrentHashMap<>();
    private final Clock clock;

    public TokenVerifiers(Clock clock) {
        this.clock = clock;
    }

    /**
     * Opens the verifiers the policies need and do not have yet (at start, and before a reload is put in force).
     *
     * @throws IOException if one cannot be opened (a key file unreadable, a key too short)
     */
    public synchronized void open(Collection<Policy> policies) throws IOException {
        for (Policy policy : policies) {
            TokenVerification config = policy.fence().verify();
            if (config != null && !open.containsKey(config)) {
                open.put(config, openOne(config, "policies '" + policy.name() + "' fence.verify"));
            }
        }
    }

    /**
     * Opens (or shares, for an equal block) the verifier of a {@code fence.verify} block that belongs to no HTTP
     * policy (the SQL listener's policies).
     *
     * @param what where the block is, for messages
     */
    public synchronized TokenVerifier open(TokenVerification config, String what) throws IOException {
        TokenVerifier verifier = open.get(config);
        if (verifier == null) {
            verifier = openOne(config, what);
            open.put(config, verifier);
        }
        return verifier;
    }

    /** The verifier of a policy, or {@code null} when it takes every token as sent. */
    public @Nullable TokenVerifier of(Policy policy) {
        TokenVerification config = policy.fence().verify();
        if (config == null) {
            return null;
        }
        TokenVerifier verifier = open.get(config);
        if (verifier == null) {
            throw new IllegalStateException("verifier of policy '" + policy.name() + "' was not opened");
        }
        return verifier;
    }

    private TokenVerifier openOne(TokenVerification config, String what) throws IOException {
        return switch (config) {
            case TokenVerification.Hmac hmac -> HmacVerifier.open(hmac, clock);
            case TokenVerification.Etcd etcd -> RememberingVerifier.wrap(EtcdLockVerifier.open(etcd, what),
                    etcd.cache());
            case TokenVerification.Postgres pg -> RememberingVerifier.wrap(PostgresLeaseVerifier.open(pg), pg.cache());
            case TokenVerification.Kubernetes k8s -> RememberingVerifier.wrap(
                    KubernetesLeaseVerifier.open(k8s, clock, what), k8s.cache());
            case TokenVerification.Redis redis -> RememberingVerifier.wrap(RedisLockVerifier.open(redis, what),
                    redis.cache());
            case TokenVerification.ZooKeeper zk -> RememberingVerifier.wrap(ZooKeeperLockVerifier.open(zk, what),
                    zk.cache());
            case TokenVerification.Consul consul -> RememberingVerifier.wrap(ConsulLockVerifier.open(consul, what),
                    consul.cache());
            case TokenVerification.DynamoDb dynamo -> RememberingVerifier.wrap(DynamoDbLockVerifier.open(dynamo,
                    what), dynamo.cache());
        };
    }

    /**
     * Closes the verifiers no policy of {@code inForce} uses (after a reload removed or changed their block, and
     * requests that started before it are done). A verifier whose block came back in the meantime is kept.
     *
     * @return how many were closed
     */
    public synchronized int closeUnused(Collection<Policy> inForce) {
        Set<TokenVerification> used = new HashSet<>();
        for (Policy policy : inForce) {
            if (policy.fence().verify() != null) {
                used.add(policy.fence().verify());
            }
        }
        int closed = 0;
        for (var it = open.entrySet().iterator(); it.hasNext(); ) {
            var entry = it.next();
            if (!used.contains(entry.getKey())) {
                it.remove();
                closed++;
                try {
                    entry.getValue().close();
                } catch (RuntimeException e) {
                    LOG.log(Level.WARNING, "closing an unused " + entry.getValue().kind() + " verifier failed", e);
                }
            }
        }
        return closed;
    }

    @Override
    public synchronized void close() {
        open.values().forEach(TokenVerifier::close);
        open.clear();
    }
}
