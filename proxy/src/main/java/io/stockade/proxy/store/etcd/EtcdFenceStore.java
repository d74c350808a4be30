package io.stockade.proxy.store.etcd;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Consumer;
import java.util.logging.Logger;

import io.stockade.policy.StoreConfig;
import io.stockade.proxy.etcd.EtcdClients;
import io.stockade.proxy.fence.Advance;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.FenceStore;
import io.stockade.proxy.fence.RunRecords;
import io.stockade.proxy.fence.StoreUnavailableException;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import io.etcd.jetcd.ByteSequence;
import io.etcd.jetcd.Client;
import io.etcd.jetcd.KV;
import io.etcd.jetcd.KeyValue;
import io.etcd.jetcd.Txn;
import io.etcd.jetcd.kv.GetResponse;
import io.etcd.jetcd.kv.TxnResponse;
import io.etcd.jetcd.op.Cmp;
import io.etcd.jetcd.op.CmpTarget;
import io.etcd.jetcd.op.Op;
import io.etcd.jetcd.options.DeleteOption;
import io.etcd.jetcd.options.GetOption;
import io.etcd.jetcd.options.PutOption;
import org.jspecify.annotations.Nullable;

/**
 * Fence state in etcd, shared by every proxy replica with the same endpoints and prefix.
 * <p>
 * Layout under the configured prefix {@code P}:
 * <pre>
 *   P s/&lt;scope&gt;    the scope's token as 20 zero-padded decimal digits, then "\n" and the version if one is known
 *   P f/&lt;prefix&gt;   a prefix floor (20 digits)
 *   P floors        the floors' epoch: rewritten whenever a floor changes; only its mod revision matters
 *   P runs          the registry of runs is kept ({@link EtcdRunRecords})
 *   P runs/&lt;id&gt;    a run's record, rewritten every second while it runs
 * </pre>
 * Zero-padded tokens make etcd's byte order the numeric order (for people and range reads); the decisions
 * themselves are compare-and-set transactions on <em>mod revisions</em>: an accept commits only if neither the
 * scope's key nor the floors' epoch changed since the state the decision was computed from. When the compare
 * fails the same transaction returns the fresh state (its {@code Else} branch) and the decision is made again:
 * a bounded retry whose outcome is known. Anything else — a deadline passed, a lost leader, a connection error,
 * an answer of unknown outcome — is a {@link StoreUnavailableException} (the engine answers 503), never an accept.
 * <p>
 * The store remembers the last state it saw per scope (bounded), so the common case — this replica wrote the
 * scope last — is one round trip. A remembered state is only used to make a guess that etcd then checks, or to
 * refuse a token below it (tokens never go down, so that refusal is true now).
 */
public final class EtcdFenceStore implements FenceStore, FenceAdmin {
    /** Compare failures (another writer won the race) before a decision gives up with 503. */
    static final int MAX_ATTEMPTS = 32;
    private static final int PAGE = 1000;
    private static final FenceState NEVER_SEEN = new FenceState(-1, null);

    /** What this replica last saw of a scope; {@code rev} 0 = absent. */
    private record Known(long token, @Nullable String version, long rev) {
        static final Known ABSENT = new Known(-1, null, 0);
    }

    /** The floors as last seen; {@code epochRev} -1 = not known yet (forces a refresh). */
    private record Floors(List<Floor> floors, long epochRev) {
    }

    private final Client client;
    private final KV kv;
    private final Duration timeout;
    private final String prefix;
    private final ByteSequence scopesPrefix;
    private final ByteSequence floorsPrefix;
    private final ByteSequence epochKey;
    private final Cache<String, Known> known;
    private volatile Floors floors = new Floors(List.of(), -1);
    private volatile boolean closed;

    private static final Logger LOG =
            Logger.getLogger(EtcdFenceStore.class.getName());

    EtcdFenceStore(Client client, StoreConfig.Etcd config) {
        this.client = client;
        this.kv = client.getKVClient();
        this.timeout = config.timeout();
        this.prefix = config.prefix();
        this.scopesPrefix = bytes(prefix + "s/");
        this.floorsPrefix = bytes(prefix + "f/");
        this.epochKey = bytes(prefix + "floors");
        this.known = Caffeine.newBuilder().maximumSize(100_000).build();
    }

    /** How long a start waits for etcd's first answer (the client's first call sets up its channel: ~2 s). */
    static final Duration WARM_UP = Duration.ofSeconds(10);

    /**
     * Connects to the cluster and waits, up to {@link #WARM_UP}, for its first answer (a read of the floors), so
     * that the first write after the listener opens is not the one that pays for the client's connection set-up
     * (a first write used to time out at 2 s while /health/ready already said UP). While etcd is unreachable every
     * decision is refused (503) and the proxy still starts.
     *
     * @throws IOException when a TLS file or the password file cannot be read
     */
    public static EtcdFenceStore open(StoreConfig.Etcd config) throws IOException {
        EtcdFenceStore store = new EtcdFenceStore(EtcdClients.open(config.endpoints(), config.timeout(), config.tls(),
                config.username(), config.password(), config.passwordFile(), "store"), config);
        store.warmUp();
        return store;
    }

    private void warmUp() {
        try {
            kv.get(epochKey).get(WARM_UP.toMillis(), TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            LOG.warning("etcd fence store: no answer within " + WARM_UP.toSeconds() + " s at start ("
                    + EtcdClients.describe(e instanceof ExecutionException && e.getCause() != null ? e.getCause() : e)
                    + "); writes answer 503 until it answers");
        }
    }

    /** The registry of runs under this store's prefix ({@link EtcdRunRecords}). */
    public RunRecords runs() {
        return new EtcdRunRecords(kv, prefix, timeout);
    }

    // ---- FenceStore ----

    @Override
    public Advance advance(String scope, long token, boolean acceptEqual) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
        ByteSequence key = scopeKey(scope);
        Known k = Objects.requireNonNullElse(known.getIfPresent(scope), Known.ABSENT);
        Floors f = floors;
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            long floor = FenceAdmin.floorOf(f.floors(), scope);
            long highest = Math.max(k.token(), floor);
            if (f.epochRev() >= 0 && FenceRule.stale(token, highest, acceptEqual)) {
                // Both values were committed in etcd and tokens only rise: the token is below a taken one now.
                return new Advance.Stale(highest, floor > k.token());
            }
            boolean raise = token > k.token();
            TxnResponse r = commit(kv.txn()
                    .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(k.rev())),
                            new Cmp(epochKey, Cmp.Op.EQUAL, CmpTarget.modRevision(f.epochRev())))
                    .Then(raise ? new Op[]{Op.put(key, encode(token, null), PutOption.DEFAULT)} : new Op[0])
                    .Else(Op.get(key, GetOption.DEFAULT), Op.get(epochKey, GetOption.DEFAULT),
                            Op.get(floorsPrefix, prefixOption(floorsPrefix))));
            if (r.isSucceeded()) {
                FenceState previous = k.rev() == 0 ? NEVER_SEEN : new FenceState(k.token(), k.version());
                if (raise) {
                    known.put(scope, new Known(token, null, r.getHeader().getRevision()));
                }
                return new Advance.Accepted(previous);
            }
            k = fromGet(r.getGetResponses().get(0));
            f = floorsFrom(r.getGetResponses().get(1), r.getGetResponses().get(2));
            known.put(scope, k);
            floors = f;
        }
        throw new StoreUnavailableException("etcd: scope '" + scope + "' changed under " + MAX_ATTEMPTS
                + " attempts in a row; refusing rather than guessing");
    }

    @Override
    public Optional<FenceState> get(String scope) throws StoreUnavailableException {
        Known k = read(scope);
        return k.rev() == 0 ? Optional.empty() : Optional.of(new FenceState(k.token(), k.version()));
    }

    @Override
    public boolean recordVersion(String scope, long token, @Nullable String version) throws StoreUnavailableException {
        Objects.requireNonNull(scope, "scope");
        ByteSequence key = scopeKey(scope);
        Known k = Objects.requireNonNullElse(known.getIfPresent(scope), Known.ABSENT);
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            if (k.token() > token) {
                return false;  // tokens never go down: another token is the highest for good
            }
            if (k.token() < token || k.rev() == 0) {
                k = read(scope);  // our view is older than the token being recorded
                if (k.token() != token) {
                    return false;
                }
            }
            TxnResponse r = commit(kv.txn()
                    .If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(k.rev())))
                    .Then(Op.put(key, encode(token, version), PutOption.DEFAULT))
                    .Else(Op.get(key, GetOption.DEFAULT)));
            if (r.isSucceeded()) {
                known.put(scope, new Known(token, version, r.getHeader().getRevision()));
                return true;
            }
            k = fromGet(r.getGetResponses().get(0));
            known.put(scope, k);
            if (k.token() != token) {
                return false;
            }
        }
        throw new StoreUnavailableException("etcd: scope '" + scope + "' changed under " + MAX_ATTEMPTS
                + " attempts in a row");
    }

    // ---- FenceAdmin ----

    @Override
    public Optional<ScopeEntry> scope(String scope) throws StoreUnavailableException {
        GetResponse r = await(kv.get(scopeKey(scope)));
        return r.getKvs().stream().findFirst().map(this::entry);
    }

    @Override
    public List<ScopeEntry> scopes(String scopePrefix, int limit) throws StoreUnavailableException {
        ByteSequence from = scopeKey(scopePrefix);
        GetResponse r = await(kv.get(from, GetOption.builder().withRange(prefixEnd(from)).withLimit(limit)
                .withSortField(GetOption.SortTarget.MOD).withSortOrder(GetOption.SortOrder.DESCEND).build()));
        return r.getKvs().stream().map(this::entry).toList();
    }

    @Override
    public boolean listsByActivity() {
        return true;  // by the mod revision of each scope's key: its last raise or recorded version
    }

    @Override
    public void forEachScope(Consumer<ScopeEntry> sink) throws StoreUnavailableException {
        ByteSequence end = prefixEnd(scopesPrefix);
        ByteSequence from = scopesPrefix;
        while (true) {
            GetResponse r = await(kv.get(from, GetOption.builder().withRange(end).withLimit(PAGE)
                    .withSortField(GetOption.SortTarget.KEY).withSortOrder(GetOption.SortOrder.ASCEND).build()));
            r.getKvs().forEach(kv -> sink.accept(entry(kv)));
            if (!r.isMore() || r.getKvs().isEmpty()) {
                return;
            }
            byte[] last = r.getKvs().getLast().getKey().getBytes();
            from = ByteSequence.from(Arrays.copyOf(last, last.length + 1));  // the next key after it
        }
    }

    @Override
    public List<Floor> floors() throws StoreUnavailableException {
        TxnResponse r = commit(kv.txn().Then(Op.get(epochKey, GetOption.DEFAULT),
                Op.get(floorsPrefix, prefixOption(floorsPrefix))));
        Floors f = floorsFrom(r.getGetResponses().get(0), r.getGetResponses().get(1));
        floors = f;
        return f.floors();
    }

    @Override
    public long raise(String scope, long token) throws StoreUnavailableException {
        checkToken(token);
        ByteSequence key = scopeKey(scope);
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            Known k = read(scope);
            if (k.token() >= token) {
                return k.token();
            }
            TxnResponse r = commit(kv.txn().If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(k.rev())))
                    .Then(Op.put(key, encode(token, null), PutOption.DEFAULT)));
            if (r.isSucceeded()) {
                known.put(scope, new Known(token, null, r.getHeader().getRevision()));
                return token;
            }
        }
        throw new StoreUnavailableException("etcd: scope '" + scope + "' kept changing; raise not done");
    }

    @Override
    public long raiseFloor(String floorPrefix, long token) throws StoreUnavailableException {
        checkToken(token);
        ByteSequence key = floorKey(floorPrefix);
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            GetResponse g = await(kv.get(key));
            long rev = 0;
            if (!g.getKvs().isEmpty()) {
                KeyValue current = g.getKvs().getFirst();
                long have = decode(current.getValue()).token();
                if (have >= token) {
                    return have;
                }
                rev = current.getModRevision();
            }
            TxnResponse r = commit(kv.txn().If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(rev)))
                    .Then(Op.put(key, encode(token, null), PutOption.DEFAULT),
                            Op.put(epochKey, bytes(Long.toString(token)), PutOption.DEFAULT)));
            if (r.isSucceeded()) {
                floors = new Floors(List.of(), -1);  // refresh on the next decision
                return token;
            }
        }
        throw new StoreUnavailableException("etcd: floor '" + floorPrefix + "' kept changing; raise not done");
    }

    @Override
    public long reset(String scope, long expected, long token) throws StoreUnavailableException {
        checkToken(token);
        ByteSequence key = scopeKey(scope);
        Known k = read(scope);
        if (k.rev() == 0 || k.token() != expected) {
            return k.rev() == 0 ? -1 : k.token();
        }
        TxnResponse r = commit(kv.txn().If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(k.rev())))
                .Then(Op.put(key, encode(token, null), PutOption.DEFAULT)));
        if (r.isSucceeded()) {
            known.put(scope, new Known(token, null, r.getHeader().getRevision()));
            return expected;
        }
        Known now = read(scope);
        return now.rev() == 0 ? -1 : now.token();
    }

    @Override
    public Retired retire(String scope) throws StoreUnavailableException {
        ByteSequence key = scopeKey(scope);
        for (int attempt = 0; attempt < MAX_ATTEMPTS; attempt++) {
            // One consistent read of the scope and every floor.
            TxnResponse snap = commit(kv.txn().Then(Op.get(key, GetOption.DEFAULT),
                    Op.get(floorsPrefix, prefixOption(floorsPrefix))));
            Known k = fromGet(snap.getGetResponses().get(0));
            if (k.rev() == 0) {
                return Retired.NOT_FOUND;
            }
            List<Floor> fl = floorList(snap.getGetResponses().get(1));
            if (FenceAdmin.floorOf(fl, scope) < k.token()) {
                return Retired.NOT_COVERED;
            }
            // Floors only rise, so the covering floor still covers at commit; the compare pins the scope's token.
            TxnResponse r = commit(kv.txn().If(new Cmp(key, Cmp.Op.EQUAL, CmpTarget.modRevision(k.rev())))
                    .Then(Op.delete(key, DeleteOption.DEFAULT)));
            if (r.isSucceeded()) {
                known.invalidate(scope);
                return Retired.RETIRED;
            }
        }
        throw new StoreUnavailableException("etcd: scope '" + scope + "' kept changing; not retired");
    }

    @Override
    public void close() {
        closed = true;
        client.close();
    }

    // ---- helpers ----

    private Known read(String scope) throws StoreUnavailableException {
        Known k = fromGet(await(kv.get(scopeKey(scope))));
        known.put(scope, k);
        return k;
    }

    private ScopeEntry entry(KeyValue kv) {
        String scope = kv.getKey().toString(StandardCharsets.UTF_8).substring(prefix.length() + 2);
        FenceState s = decode(kv.getValue());
        return new ScopeEntry(scope, s.token(), s.version(), kv.getModRevision());
    }

    private static Known fromGet(GetResponse g) {
        if (g.getKvs().isEmpty()) {
            return Known.ABSENT;
        }
        KeyValue kv = g.getKvs().getFirst();
        FenceState s = decode(kv.getValue());
        return new Known(s.token(), s.version(), kv.getModRevision());
    }

    private Floors floorsFrom(GetResponse epoch, GetResponse range) {
        long epochRev = epoch.getKvs().isEmpty() ? 0 : epoch.getKvs().getFirst().getModRevision();
        return new Floors(floorList(range), epochRev);
    }

    private List<Floor> floorList(GetResponse range) {
        List<Floor> out = new ArrayList<>();
        int skip = prefix.length() + 2;
        for (KeyValue kv : range.getKvs()) {
            out.add(new Floor(kv.getKey().toString(StandardCharsets.UTF_8).substring(skip),
                    decode(kv.getValue()).token()));
        }
        return List.copyOf(out);
    }

    private TxnResponse commit(Txn txn) throws StoreUnavailableException {
        if (closed) {
            throw new StoreUnavailableException("fence store closed");
        }
        return await(txn.commit(), true);
    }

    /** Waits for an etcd answer within the timeout; anything but an answer is a {@link StoreUnavailableException}. */
    private <T> T await(CompletableFuture<T> call) throws StoreUnavailableException {
        return await(call, false);
    }

    /**
     * @param change whether the call may change the store (a transaction): a timeout then leaves it unknown whether
     *               the fence moved; a read's timeout only that the answer did not come
     */
    private <T> T await(CompletableFuture<T> call, boolean change) throws StoreUnavailableException {
        if (closed) {
            call.cancel(true);
            throw new StoreUnavailableException("fence store closed");
        }
        try {
            return call.get(timeout.toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            call.cancel(true);
            throw new StoreUnavailableException("etcd did not answer within " + timeout.toMillis() + " ms"
                    + (change ? " (whether the fence moved is unknown; nothing was forwarded)" : ""), e);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            throw new StoreUnavailableException("etcd: " + EtcdClients.describe(cause), cause);
        } catch (InterruptedException e) {
            call.cancel(true);
            Thread.currentThread().interrupt();
            throw new StoreUnavailableException("interrupted while waiting for etcd", e);
        } catch (RuntimeException e) {
            throw new StoreUnavailableException("etcd client: " + e, e);
        }
    }

    private ByteSequence scopeKey(String scope) {
        return bytes(prefix + "s/" + scope);
    }

    private ByteSequence floorKey(String floorPrefix) {
        return bytes(prefix + "f/" + floorPrefix);
    }

    private static GetOption prefixOption(ByteSequence p) {
        return GetOption.builder().withRange(prefixEnd(p)).build();
    }

    /** The smallest key greater than every key starting with {@code p} (etcd's range end for a prefix). */
    static ByteSequence prefixEnd(ByteSequence p) {
        byte[] b = p.getBytes();
        for (int i = b.length - 1; i >= 0; i--) {
            if (b[i] != (byte) 0xff) {
                byte[] end = Arrays.copyOf(b, i + 1);
                end[i]++;
                return ByteSequence.from(end);
            }
        }
        return ByteSequence.from(new byte[]{0});  // all keys
    }

    /** 20 zero-padded digits (byte order = numeric order), then "\n" and the version when known. */
    static ByteSequence encode(long token, @Nullable String version) {
        String t = String.format("%020d", token);
        return bytes(version == null ? t : t + "\n" + version);
    }

    static FenceState decode(ByteSequence value) {
        String s = value.toString(StandardCharsets.UTF_8);
        int nl = s.indexOf('\n');
        return nl < 0 ? new FenceState(Long.parseLong(s), null)
                : new FenceState(Long.parseLong(s.substring(0, nl)), s.substring(nl + 1));
    }

    private static void checkToken(long token) {
        if (token < 0) {
            throw new IllegalArgumentException("negative token " + token);
        }
    }

    private static ByteSequence bytes(String s) {
        return ByteSequence.from(s, StandardCharsets.UTF_8);
    }
}
