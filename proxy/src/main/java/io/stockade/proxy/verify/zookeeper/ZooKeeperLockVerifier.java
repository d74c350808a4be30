package io.stockade.proxy.verify.zookeeper;

import java.io.IOException;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.logging.Level;
import java.util.logging.Logger;
import java.util.regex.Pattern;

import io.stockade.policy.TokenVerification;
import io.stockade.proxy.verify.TokenVerifier;

import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.common.PathUtils;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * A token is genuine when it is the creation zxid ({@code czxid}) of the node that holds the ZooKeeper lock
 * {@code prefix + scope}. Curator's {@code InterProcessMutex} recipe (and the client SDK's ZooKeeper provider, which
 * follows it) puts one ephemeral sequential child per contender under the lock path, {@code [_c_<uuid>-]lock-<10
 * digits>}, and the holder is the first child when the children are sorted by what follows their last
 * {@code lock-} (the sequence number). The verifier sorts the same way, so its holder is the recipe's: when the
 * first child is not a lock node (a nested lock's path, {@code /locks/x/y} under {@code /locks/x}), every contender
 * of the recipe waits behind it and nobody holds the lock.
 * <p>
 * One lookup is a {@code sync} (the server the session is on catches up with the leader, so a lagging follower does
 * not answer with a holder that already lost the lock), a {@code getChildren} pipelined behind it, and an
 * {@code exists} on the first child for its {@code czxid}. zxids only grow, and a contender's node is created before
 * it can hold the lock, so each holder's token is above every earlier holder's.
 * <p>
 * No child (nobody holds the lock), no lock path, a first child of another holder and a lock path ZooKeeper cannot
 * name are {@link Refused}. Any doubt — ZooKeeper unreachable, no answer within the timeout, the session expired
 * mid-lookup — is {@link Unavailable}, never a pass. A connection loss or an expired session is retried on the
 * (re)connected client while time is left, since the lookup only reads.
 */
public final class ZooKeeperLockVerifier implements TokenVerifier {
    private static final Logger LOG = Logger.getLogger(ZooKeeperLockVerifier.class.getName());
    /** The name Curator's lock recipe gives each contender's node before the sequence number. */
    static final String LOCK_NAME = "lock-";
    private static final Pattern LOCK_NODE = Pattern.compile(".*" + LOCK_NAME + "-?[0-9]{10}");
    /**
     * The verifier's own session: it holds no ephemeral node, so its length only says how long the ensemble keeps
     * it across a disconnection (the server clamps it to its own bounds).
     */
    static final int SESSION_TIMEOUT_MS = 30_000;
    private static final long RETRY_PAUSE_MS = 50;

    private final String servers;
    private final String prefix;
    private final long timeoutNanos;
    private final Object lock = new Object();
    private @Nullable ZooKeeper zk; // guarded by lock; null until the first lookup, after expiry and close
    private volatile boolean closed;

    private ZooKeeperLockVerifier(TokenVerification.ZooKeeper config) {
        this.servers = config.connectString();
        this.prefix = config.prefix();
        this.timeoutNanos = config.timeout().toNanos();
    }

    /**
     * Connects at the first lookup, so while ZooKeeper is unreachable every verdict is {@link Unavailable} and the
     * proxy starts.
     *
     * @param what the policy field the block comes from, to start messages with
     */
    public static ZooKeeperLockVerifier open(TokenVerification.ZooKeeper config, String what) {
        return new ZooKeeperLockVerifier(config);
    }

    @Override
    public Verdict verify(Claim claim) {
        if (closed) {
            return new Unavailable("verifier closed");
        }
        String lockPath = prefix + claim.scope();
        try {
            PathUtils.validatePath(lockPath);
        } catch (IllegalArgumentException e) {
            return new Refused("nobody holds the ZooKeeper lock '" + lockPath + "': not a valid ZooKeeper path ("
                    + e.getMessage() + ")");
        }
        long sent = System.nanoTime();
        long deadline = sent + timeoutNanos;
        KeeperException last = null;
        while (true) {
            try {
                return lookup(lockPath, claim.token(), sent, deadline);
            } catch (TimeoutException e) {
                return new Unavailable("ZooKeeper at " + servers + " did not answer within "
                        + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms"
                        + (last == null ? "" : " (" + describe(last) + ")"));
            } catch (KeeperException e) {
                KeeperException.Code code = e.code();
                boolean retry = code == KeeperException.Code.CONNECTIONLOSS
                        || code == KeeperException.Code.SESSIONEXPIRED
                        || code == KeeperException.Code.SESSIONMOVED
                        || code == KeeperException.Code.OPERATIONTIMEOUT;
                last = e;
                if (!retry || deadline - System.nanoTime() <= TimeUnit.MILLISECONDS.toNanos(RETRY_PAUSE_MS)) {
                    return new Unavailable("ZooKeeper at " + servers + ": " + describe(e));
                }
                try {
                    Thread.sleep(RETRY_PAUSE_MS); // the client reconnects (or a new session opens) meanwhile
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    return new Unavailable("interrupted while waiting for ZooKeeper");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return new Unavailable("interrupted while waiting for ZooKeeper");
            } catch (IOException | RuntimeException e) {
                return new Unavailable("ZooKeeper client: " + e);
            }
        }
    }

    /** One lookup: {@code sync}, {@code getChildren}, {@code exists} of the first child; a vanished holder again. */
    private Verdict lookup(String lockPath, long token, long sent, long deadline)
            throws KeeperException, TimeoutException, InterruptedException, IOException {
        while (true) {
            ZooKeeper client = client();
            CompletableFuture<Void> synced = new CompletableFuture<>();
            CompletableFuture<List<String>> children = new CompletableFuture<>();
            // pipelined on one session: the server answers getChildren after the sync
            client.sync(lockPath, (rc, path, ctx) -> complete(synced, rc, path, null), null);
            client.getChildren(lockPath, false, (rc, path, ctx, names) -> complete(children, rc, path, names), null);
            List<String> names;
            try {
                await(synced, deadline, client);
                names = await(children, deadline, client);
            } catch (KeeperException.NoNodeException e) {
                return new Refused("nobody holds the ZooKeeper lock '" + lockPath + "' (no such node)");
            }
            String first = first(names);
            if (first == null) {
                return new Refused("nobody holds the ZooKeeper lock '" + lockPath + "' (no contender)");
            }
            if (!LOCK_NODE.matcher(first).matches()) {
                // Curator's recipe makes every contender wait behind a child that is not a lock node
                return new Refused("nobody holds the ZooKeeper lock '" + lockPath + "' (its first child '" + first
                        + "' is not a lock node)");
            }
            String node = lockPath + "/" + first;
            CompletableFuture<Stat> exists = new CompletableFuture<>();
            client.exists(node, false, (rc, path, ctx, stat) -> complete(exists, rc, path, stat), null);
            Stat stat;
            try {
                stat = await(exists, deadline, client);
            } catch (KeeperException.NoNodeException e) {
                stat = null;
            }
            if (stat == null) {
                if (deadline - System.nanoTime() <= 0) {
                    throw new TimeoutException();
                }
                continue; // the holder released (or lost) the lock between the two reads: ask again
            }
            if (stat.getCzxid() != token) {
                // the holder's token stays out of the client's answer: a forger would send it back
                return new Refused("not the token of the holder of the ZooKeeper lock '" + lockPath + "'",
                        "the holder has token " + stat.getCzxid());
            }
            // ZooKeeper reports no time left for the holder's session: remembered for the cache's bound
            return Genuine.noTimeLeftKnown(sent);
        }
    }

    /** The holder's child as Curator's lock recipe sorts them (by what follows the last {@code lock-}); null: none. */
    static @Nullable String first(List<String> names) {
        String first = null;
        String firstKey = null;
        for (String name : names) {
            String key = sortKey(name);
            if (first == null || key.compareTo(firstKey) < 0) {
                first = name;
                firstKey = key;
            }
        }
        return first;
    }

    /** Curator's {@code StandardLockInternalsDriver.fixForSorting}. */
    private static String sortKey(String name) {
        int index = name.lastIndexOf(LOCK_NAME);
        return index < 0 ? name : name.substring(index + LOCK_NAME.length());
    }

    private static <T> void complete(CompletableFuture<T> future, int rc, String path, @Nullable T value) {
        if (rc == KeeperException.Code.OK.intValue()) {
            future.complete(value);
        } else {
            future.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc), path));
        }
    }

    private <T> T await(CompletableFuture<T> future, long deadline, ZooKeeper client)
            throws KeeperException, TimeoutException, InterruptedException {
        try {
            return future.get(Math.max(1, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof KeeperException ke) {
                if (ke.code() == KeeperException.Code.SESSIONEXPIRED) {
                    forget(client);
                }
                throw ke;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** The client, a new one when there is none or the last one's session expired or it was closed. */
    private ZooKeeper client() throws IOException {
        synchronized (lock) {
            if (closed) {
                throw new IllegalStateException("verifier closed");
            }
            if (zk == null || !zk.getState().isAlive()) {
                if (zk != null) {
                    closeQuietly(zk);
                }
                ZKClientConfig config = new ZKClientConfig();
                // no SASL unless a deployment asks for it through the JVM's JAAS configuration
                config.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY,
                        System.getProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false"));
                zk = new ZooKeeper(servers, SESSION_TIMEOUT_MS, event -> { }, config);
            }
            return zk;
        }
    }

    private void forget(ZooKeeper expired) {
        synchronized (lock) {
            if (zk == expired) {
                closeQuietly(expired);
                zk = null;
            }
        }
    }

    private static void closeQuietly(ZooKeeper client) {
        try {
            client.close(1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            LOG.log(Level.FINE, "closing a ZooKeeper client", e);
        }
    }

    private static @Nullable String describe(KeeperException e) {
        return switch (e.code()) {
            case CONNECTIONLOSS -> "connection lost (no server reachable, or it went away mid-lookup)";
            case SESSIONEXPIRED -> "the verifier's session expired (a new one is opened at the next lookup)";
            case NOAUTH -> "not allowed to read the lock path (check its ACL: the verifier reads anonymously)";
            default -> e.getMessage();
        };
    }

    @Override
    public String kind() {
        return "zookeeper";
    }

    @Override
    public void close() {
        closed = true;
        synchronized (lock) {
            if (zk != null) {
                closeQuietly(zk);
                zk = null;
            }
        }
    }
}
