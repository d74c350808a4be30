package io.stockade.client;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.BiConsumer;

import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.ZooKeeper;
import org.apache.zookeeper.client.ZKClientConfig;
import org.apache.zookeeper.common.PathUtils;
import org.apache.zookeeper.data.Stat;
import org.jspecify.annotations.Nullable;

/**
 * ZooKeeper: Curator's {@code InterProcessMutex} recipe on the plain ZooKeeper client, one session per lease whose
 * session timeout is the lease's ttl. Acquire creates an ephemeral sequential node
 * {@code prefix + name + "/_c_<uuid>-lock-<seq>"} (parents as container nodes) and waits, watching the node just
 * before it, until it is the first when sorted by sequence number. Token: the node's creation zxid ({@code czxid}).
 * Renewal: the session's own heartbeats keep it alive; the watchdog's renewal reads the node ({@code exists}) and
 * checks it is still this session's, with this czxid. Loss: besides a failed renewal, the session's watcher
 * reports a disconnection (Curator's {@code SUSPENDED}: the session may already have expired) and an expiry
 * (Curator's {@code LOST}) at once. Release: delete the node, close the session.
 * <p>
 * Interoperates with Curator's {@code InterProcessMutex} on the same path: the node names and the order are the
 * recipe's.
 */
final class ZooKeeperLeaseService implements LeaseService {

    /** What Curator's lock recipe puts before the sequence number. */
    static final String LOCK_NAME = "lock-";
    /** Our own round trips always get this long, whatever the caller's timeout for waiting on another holder. */
    private static final Duration MIN_WAIT = Duration.ofSeconds(5);
    private static final Duration RELEASE_TIMEOUT = Duration.ofSeconds(5);
    private static final Comparator<String> RECIPE_ORDER = Comparator.comparing(ZooKeeperLeaseService::sortKey);

    private final String servers;
    private final String prefix;
    private final Ticker ticker;
    private final Set<Session> open = ConcurrentHashMap.newKeySet();

    /** What renewal and release need: the session and our lock node's path. */
    record Handle(Session session, String path) {
        /** The session's client (tests end the session at the server with its id and password). */
        ZooKeeper zk() {
            return session.zk;
        }
    }

    /**
     * @param servers a ZooKeeper connect string, {@code host:port[,host:port…]}
     * @param prefix  an absolute path the lease name is appended to (e.g. {@code /locks/})
     */
    ZooKeeperLeaseService(String servers, String prefix, Ticker ticker) {
        if (servers == null || servers.isBlank()) {
            throw new IllegalArgumentException("at least one ZooKeeper server (host:port) is needed");
        }
        if (servers.contains("/")) {
            throw new IllegalArgumentException("ZooKeeper servers '" + servers + "': host:port only, no scheme and no"
                    + " chroot path (give the path as the prefix)");
        }
        if (prefix == null || !prefix.startsWith("/")) {
            throw new IllegalArgumentException("the ZooKeeper prefix must be an absolute path such as /locks/, got '"
                    + prefix + "'");
        }
        this.servers = servers;
        this.prefix = prefix;
        this.ticker = ticker;
    }

    @Override
    public Grant acquire(String name, String holder, Duration ttl, Duration timeout) throws Exception {
        String lockPath = prefix + name;
        try {
            PathUtils.validatePath(lockPath);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("lease '" + name + "': '" + lockPath + "' is not a ZooKeeper path: "
                    + e.getMessage(), e);
        }
        long deadline = ticker.read() + timeout.toNanos();
        long ownDeadline = Math.max(deadline, ticker.read() + MIN_WAIT.toNanos());
        Session session = connect(ttl, ownDeadline);
        boolean done = false;
        String ours = null;
        try {
            ours = create(session.zk, lockPath, holder);
            String ourName = ours.substring(lockPath.length() + 1);
            Stat ourStat = session.zk.exists(ours, false);
            if (ourStat == null) {
                throw new IllegalStateException("lock node " + ours + " vanished right after it was created");
            }
            while (true) {
                session.forgetLoss(); // a disconnection before the grant is harmless: validity starts below
                long sent = ticker.read();
                List<String> children = session.zk.getChildren(lockPath, false);
                children.sort(RECIPE_ORDER);
                int index = children.indexOf(ourName);
                if (index < 0) {
                    throw new IllegalStateException("lock node " + ours + " is gone (the session expired?)");
                }
                if (index == 0) {
                    done = true;
                    return new Grant(ourStat.getCzxid(), sent, new Handle(session, ours));
                }
                CountDownLatch changed = new CountDownLatch(1);
                Stat before = session.zk.exists(lockPath + "/" + children.get(index - 1), event -> changed.countDown());
                if (before == null) {
                    continue;
                }
                long left = deadline - ticker.read();
                if (left <= 0 || !changed.await(left, TimeUnit.NANOSECONDS)) {
                    throw new TimeoutException("lease '" + name + "' is held by another holder; not acquired within "
                            + timeout);
                }
            }
        } finally {
            if (!done) {
                if (ours != null) {
                    deleteQuietly(session, ours);
                }
                session.close();
                open.remove(session);
            }
        }
    }

    /** A new session, connected, whose negotiated timeout is at least the ttl. */
    private Session connect(Duration ttl, long deadline) throws Exception {
        int requested = (int) Math.min(Integer.MAX_VALUE, Math.max(1, ttl.toMillis()));
        Session session = new Session();
        ZKClientConfig config = new ZKClientConfig();
        config.setProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY,
                System.getProperty(ZKClientConfig.ENABLE_CLIENT_SASL_KEY, "false"));
        session.zk = new ZooKeeper(servers, requested, session, false, config);
        open.add(session);
        try {
            long budget = Math.max(1, deadline - ticker.read());
            if (!session.connected.await(budget, TimeUnit.NANOSECONDS)) {
                // the time it waited, not what is left of it afterwards (that printed "within -1318 ms")
                throw new TimeoutException("no ZooKeeper server of " + servers + " answered within "
                        + Math.max(1, Duration.ofNanos(budget).toMillis()) + " ms");
            }
            int negotiated = session.zk.getSessionTimeout();
            if (negotiated < ttl.toMillis()) {
                // the ensemble would delete our node before our local validity ran out: never hold such a lease
                throw new IllegalArgumentException("ZooKeeper granted a session timeout of " + negotiated
                        + " ms, shorter than the lease ttl " + ttl + ": use a ttl the servers allow (their"
                        + " minSessionTimeout..maxSessionTimeout, by default 2..20 tickTime)");
            }
            return session;
        } catch (Exception | Error e) {
            session.close();
            open.remove(session);
            throw e;
        }
    }

    /** Creates our ephemeral sequential node (parents as containers, made again if the server removed them). */
    private static String create(ZooKeeper zk, String lockPath, String holder) throws Exception {
        String node = lockPath + "/_c_" + UUID.randomUUID() + "-" + LOCK_NAME;
        byte[] data = holder.getBytes(StandardCharsets.UTF_8);
        for (int attempt = 0; ; attempt++) {
            try {
                return zk.create(node, data, ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.EPHEMERAL_SEQUENTIAL);
            } catch (KeeperException.NoNodeException missingParent) {
                if (attempt >= 3) {
                    throw missingParent;
                }
                createParents(zk, lockPath);
            }
        }
    }

    private static void createParents(ZooKeeper zk, String path) throws Exception {
        int from = 1;
        while (true) {
            int slash = path.indexOf('/', from);
            String part = slash < 0 ? path : path.substring(0, slash);
            try {
                zk.create(part, new byte[0], ZooDefs.Ids.OPEN_ACL_UNSAFE, CreateMode.CONTAINER);
            } catch (KeeperException.NodeExistsException exists) {
                // made by another contender, or an earlier attempt
            }
            if (slash < 0) {
                return;
            }
            from = slash + 1;
        }
    }

    @Override
    public Renewal renew(String name, String holder, Grant grant, Duration ttl, Duration timeout) throws Exception {
        Handle h = (Handle) grant.handle();
        CompletableFuture<Stat> read = new CompletableFuture<>();
        h.session.zk.exists(h.path, false, (rc, path, ctx, stat) -> {
            if (rc == KeeperException.Code.OK.intValue()) {
                read.complete(stat);
            } else if (rc == KeeperException.Code.NONODE.intValue()) {
                read.complete(null);
            } else {
                read.completeExceptionally(KeeperException.create(KeeperException.Code.get(rc), path));
            }
        }, null);
        Stat stat;
        try {
            stat = read.get(Math.max(1, timeout.toNanos()), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            throw new TimeoutException("ZooKeeper did not answer the renewal within " + timeout.toMillis() + " ms");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof KeeperException.SessionExpiredException) {
                return Renewal.REVOKED;
            }
            throw e.getCause() instanceof Exception c ? c : e;
        }
        if (stat == null) {
            return Renewal.REVOKED;
        }
        return stat.getCzxid() == grant.token() && stat.getEphemeralOwner() == h.session.zk.getSessionId()
                ? Renewal.RENEWED : Renewal.REFUSED;
    }

    @Override
    public void release(String name, String holder, Grant grant) {
        Handle h = (Handle) grant.handle();
        deleteQuietly(h.session, h.path); // our own node only: its name is unique to this acquisition
        h.session.close();                // ends the session: the ensemble deletes the node if the delete failed
        open.remove(h.session);
    }

    @Override
    public void watch(Grant grant, BiConsumer<LossReason, String> onLoss) {
        ((Handle) grant.handle()).session.watch(onLoss);
    }

    @Override
    public void close() {
        open.forEach(Session::close);
        open.clear();
    }

    private static void deleteQuietly(Session session, String path) {
        CompletableFuture<Integer> deleted = new CompletableFuture<>();
        try {
            session.zk.delete(path, -1, (rc, p, ctx) -> deleted.complete(rc), null);
            deleted.get(RELEASE_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (Exception e) {
            // closing the session (or its expiry) deletes the node
        }
    }

    /** Curator's {@code StandardLockInternalsDriver.fixForSorting}: what follows the last {@code lock-}. */
    static String sortKey(String name) {
        int index = name.lastIndexOf(LOCK_NAME);
        return index < 0 ? name : name.substring(index + LOCK_NAME.length());
    }

    /** One ZooKeeper session and what its watcher learned. */
    static final class Session implements Watcher {
        final CountDownLatch connected = new CountDownLatch(1);
        // set by connect() as soon as the client exists: the client takes this Session as its watcher, so the
        // Session is made first; nothing reads zk before connect() returns the Session
        @SuppressWarnings("NullAway.Init")
        volatile ZooKeeper zk;
        private final Object lock = new Object();
        private @Nullable LossReason loss;                          // guarded by lock
        private @Nullable String lossDetail;                        // guarded by lock
        private @Nullable BiConsumer<LossReason, String> onLoss;    // guarded by lock

        @Override
        public void process(WatchedEvent event) {
            if (event.getType() != Event.EventType.None) {
                return;
            }
            switch (event.getState()) {
                case SyncConnected -> connected.countDown();
                case Disconnected -> lost(LossReason.CONNECTION_LOST, "disconnected from ZooKeeper (Curator's"
                        + " SUSPENDED): the session, and the lock with it, may already have expired");
                case Expired -> lost(LossReason.REVOKED, "the ZooKeeper session expired (Curator's LOST): the"
                        + " ensemble deleted the lock node");
                case AuthFailed -> lost(LossReason.CONNECTION_LOST, "ZooKeeper refused the client's authentication");
                default -> { }
            }
        }

        /** Forgets a disconnection seen while acquiring, before the grant's validity starts. */
        void forgetLoss() {
            synchronized (lock) {
                if (loss == LossReason.CONNECTION_LOST) {
                    loss = null;
                    lossDetail = null;
                }
            }
        }

        void watch(BiConsumer<LossReason, String> sink) {
            LossReason reason;
            String detail;
            synchronized (lock) {
                onLoss = sink;
                reason = loss;
                detail = lossDetail;
            }
            if (reason != null) {
                report(sink, reason, detail);
            }
        }

        private void lost(LossReason reason, String detail) {
            BiConsumer<LossReason, String> sink;
            synchronized (lock) {
                if (loss != null) {
                    return;
                }
                loss = reason;
                lossDetail = detail;
                sink = onLoss;
            }
            if (sink != null) {
                report(sink, reason, detail);
            }
        }

        /** Off the ZooKeeper event thread: the loss releases the lease, which talks to ZooKeeper. */
        private static void report(BiConsumer<LossReason, String> sink, LossReason reason, @Nullable String detail) {
            Thread.ofPlatform().daemon().name("stockade-zookeeper-loss").start(() -> sink.accept(reason, detail));
        }

        void close() {
            ZooKeeper client = zk;
            if (client != null) {
                try {
                    client.close(1000);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        }
    }
}
