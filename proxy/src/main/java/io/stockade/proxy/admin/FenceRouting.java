package io.stockade.proxy.admin;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.StringJoiner;
import java.util.function.Predicate;

import io.stockade.policy.Datasource;
import io.stockade.policy.Policy;
import io.stockade.policy.ScopeTemplate;
import io.stockade.policy.SqlConfig;
import io.stockade.policy.StoreConfig;
import io.stockade.proxy.backend.BackendType;
import io.stockade.proxy.backend.FencePlace;
import io.stockade.proxy.backend.ScopeShape;
import io.stockade.proxy.backend.registry.BackendTypes;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.problem.ProblemType;

import org.jspecify.annotations.Nullable;

/**
 * Where the fence of a scope is kept, for the fence-state operations: each call acts on the fence that the writes
 * of the scope are checked against, or is refused with the reason.
 * <ul>
 *   <li><b>The proxy's store</b> keeps the fence of every policy whose backend the engine fences (http, file, s3
 *   with {@code fence-scope: prefix} or without conditional writes): the serialized and conditional classes.</li>
 *   <li><b>A postgres backend's database</b> ({@code fence: table}) keeps its own fence in its
 *   {@code stockade_fences} and {@code stockade_floors}, which its {@code stockade_fence} reads in each write's
 *   transaction; the store is never consulted for it. The operations run on that database with the store's own
 *   statements. A backend whose datasource is the postgres store's (same URL and user) shares the store's
 *   table: it is the store.</li>
 *   <li><b>The SQL listener's database</b> keeps the fence of every {@code sql} policy in its
 *   {@code <schema>.stockade_fences} and {@code stockade_floors}, which the triggers read in each writing
 *   transaction; the operations run there with the store's own statements, through {@code sql.admin-datasource} (a
 *   login that is a member of the fence role, which cannot log in itself). Without that login the SQL policies are
 *   elsewhere: refused, naming {@code stockade sql fence}.</li>
 *   <li><b>Elsewhere</b>: a postgres backend with {@code fence: column} keeps the token in the user's own rows,
 *   and the atomic s3 class ({@code fence-scope: object} with conditional writes) in each object's metadata. The
 *   proxy holds no fence for them that it could show, raise or retire; every operation on them is refused
 *   ({@link ProblemType#NOT_SUPPORTED}) with the reason and what to do instead.</li>
 * </ul>
 * A call names its policy ({@code policy}), or is routed by the scope templates: the policies whose template can
 * make the scope (a prefix: some scope starting with it). None: the store. One place: that place. Several places:
 * refused, the call must name the policy. Listings, floors and the export without a policy cover the store and
 * every postgres backend's database.
 */
public final class FenceRouting {

    /** The fence-state operations on a postgres backend's database ({@code fence: table}). */
    @FunctionalInterface
    public interface Databases {
        /**
         * The fence-state operations on the database of {@code policy}'s backend.
         *
         * @param policy a policy whose postgres backend keeps its fence in its database
         * @throws StoreUnavailableException when the database cannot be reached now
         */
        FenceAdmin of(Policy policy) throws StoreUnavailableException;
    }

    /** The operations of the proxy's store, opened when a call first reaches it. */
    @FunctionalInterface
    public interface StoreAdmin {
        /**
         * Opens the store's fence-state operations.
         *
         * @return the store's operations, or {@code null} when its type has none
         * @throws StoreUnavailableException when it cannot be opened or reached now
         */
        @Nullable FenceAdmin open() throws StoreUnavailableException;
    }

    /** The fence-state operations on the SQL listener's fence table ({@code sql.admin-datasource}). */
    public interface SqlFence {
        /**
         * Why the proxy cannot reach the fence table, as a sentence on what keeps it out (the admin API: no
         * {@code sql.admin-datasource}; the offline command: not its job), or {@code null} when it can.
         */
        @Nullable String unreachable();

        /** What to do instead, when {@link #unreachable()}. */
        String instead();

        /**
         * The operations on the fence table, opened when a call first reaches it.
         *
         * @throws StoreUnavailableException when the database cannot be reached now
         */
        FenceAdmin open() throws StoreUnavailableException;
    }

    /** Where one policy keeps its fence. */
    private sealed interface Place {
    }

    /** The SQL listener's database: every {@code sql} policy's fence, in one table. */
    private record SqlTable() implements Place {
    }

    private record Store() implements Place {
    }

    /** A postgres backend's database, by its URL and user (two policies on one database share one). */
    private record Database(String url, String user) implements Place {
    }

    /** A fence the proxy cannot reach: why, and what to do instead. */
    private record Elsewhere(String reason, String instead) implements Place {
    }

    /**
     * The fence one call acts on.
     *
     * @param admin  its operations
     * @param policy the policy whose backend keeps it, or {@code null} for the proxy's store
     */
    public record Target(FenceAdmin admin, @Nullable String policy, Keeper keeper) {
        /**
         * How answers and export lines name the keeper: {@code ,"keeper":"store"}, or {@code "backend"} or
         * {@code "sql"} with the policy.
         */
        public String json() {
            return policy == null ? ",\"keeper\":\"store\""
                    : ",\"keeper\":\"" + keeper.json + "\",\"policy\":" + JsonWriter.quote(policy);
        }
    }

    /** Who keeps a fence, as answers and export lines name it ({@code "keeper"}). */
    public enum Keeper {
        /** The proxy's store. */
        STORE("store"),
        /** A postgres backend's database. */
        BACKEND("backend"),
        /** The SQL listener's database. */
        SQL("sql");

        final String json;

        Keeper(String json) {
            this.json = json;
        }

        /** The keeper a {@code "keeper"} value names, or {@code null}. */
        static @Nullable Keeper of(@Nullable Object json) {
            for (Keeper k : values()) {
                if (k.json.equals(json)) {
                    return k;
                }
            }
            return null;
        }
    }

    /**
     * A policy as routing sees it: its name, the scopes it can make (an HTTP policy's template; a SQL policy's
     * tables' templates), where its fence is, and the HTTP policy itself (null for a SQL policy).
     */
    private record Fenced(String name, List<ScopeShape> shapes, String template, Place place,
                          @Nullable Policy policy) {
        boolean matches(String scope) {
            return shapes.stream().anyMatch(s -> s.matches(scope));
        }

        boolean overlaps(String prefix) {
            return shapes.stream().anyMatch(s -> s.overlaps(prefix));
        }
    }

    private final List<Fenced> fenced;
    private final StoreAdmin store;
    private final StoreConfig storeConfig;
    private final Databases databases;
    private final @Nullable SqlFence sqlFence;

    /**
     * @param policies    the policies in force
     * @param storeConfig the proxy's store
     * @param store       its operations
     * @param databases   the operations on a postgres backend's database
     */
    public FenceRouting(List<Policy> policies, StoreConfig storeConfig, StoreAdmin store, Databases databases) {
        this(policies, null, null, storeConfig, store, databases);
    }

    /**
     * @param sql      the file's {@code sql} section, or {@code null}
     * @param sqlFence the operations on its fence table (with {@code sql}), reachable or saying why not
     */
    public FenceRouting(List<Policy> policies, @Nullable SqlConfig sql, @Nullable SqlFence sqlFence,
                        StoreConfig storeConfig,
                        StoreAdmin store, Databases databases) {
        this.storeConfig = Objects.requireNonNull(storeConfig, "storeConfig");
        this.store = Objects.requireNonNull(store, "store");
        this.databases = Objects.requireNonNull(databases, "databases");
        this.sqlFence = sql == null ? null : Objects.requireNonNull(sqlFence, "sqlFence");
        List<Fenced> all = new ArrayList<>();
        for (Policy p : policies) {
            BackendType type = BackendTypes.of(p);
            ScopeShape shape = type.scopes();
            all.add(new Fenced(p.name(), List.of(shape), shape.described(), placeOf(type.fencePlace()), p));
        }
        if (sql != null) {
            SqlFence fence = Objects.requireNonNull(sqlFence, "sqlFence"); // required above when sql is given
            String unreachable = fence.unreachable();
            Place place = unreachable == null ? new SqlTable() : new Elsewhere(unreachable, fence.instead());
            for (SqlConfig.SqlPolicy p : sql.policies()) {
                List<ScopeTemplate> templates = p.tables().stream().map(SqlConfig.FencedTable::scope).toList();
                all.add(new Fenced(p.name(), templates.stream().map(ScopeShape::of).toList(),
                        String.join("', '", templates.stream().map(ScopeTemplate::toString).toList()), place, null));
            }
        }
        this.fenced = List.copyOf(all);
    }

    /** The fence of {@code scope}: the named policy's, or the one its scope templates lead to. */
    public Target forScope(@Nullable String policy, String scope)
            throws FenceOperations.Refused, StoreUnavailableException {
        return route(policy, "scope '" + scope + "'", "make", p -> p.matches(scope));
    }

    /**
     * The policies whose writes the fence of {@code scope} judges: the named one, or every policy whose scope
     * template can make the scope (none: a scope no policy makes now).
     */
    public List<Policy> policiesFor(@Nullable String policy, String scope) throws FenceOperations.Refused {
        if (policy != null) {
            Policy named = policy(policy).policy();
            return named == null ? List.of() : List.of(named); // a SQL policy has no HTTP policy behind it
        }
        return fenced.stream().filter(p -> p.policy() != null && p.matches(scope)).map(Fenced::policy).toList();
    }

    /** Where a floor on {@code prefix} goes: the named policy's fence, or the one the templates lead to. */
    public Target forPrefix(@Nullable String policy, String prefix)
            throws FenceOperations.Refused, StoreUnavailableException {
        return route(policy, "prefix '" + prefix + "'", "make a scope starting with", p -> p.overlaps(prefix));
    }

    /**
     * The fence an import line names: its policy's ({@code policy}: no template check, an export names the first
     * policy of a database for every scope in it), the store ({@code keeper: store}), else by the templates.
     */
    Target forLine(@Nullable String policy, boolean store, @Nullable String scope, @Nullable String prefix)
            throws FenceOperations.Refused,
            StoreUnavailableException {
        if (policy != null) {
            return target(policy(policy));
        }
        if (store) {
            return storeTarget();
        }
        return scope != null ? forScope(null, scope)
                : forPrefix(null, Objects.requireNonNull(prefix, "a line names a scope or a prefix"));
    }

    /**
     * Every fence a listing covers: the named policy's (whose template must be able to make a scope starting with
     * {@code prefix}); else the store and each postgres backend's database with a policy that can.
     *
     * @param prefix the listing's prefix, or {@code null} for every scope (floors, export)
     */
    public List<Target> every(@Nullable String policy, @Nullable String prefix) throws FenceOperations.Refused,
            StoreUnavailableException {
        if (policy != null) {
            if (prefix == null) {
                return List.of(target(policy(policy)));
            }
            return List.of(forPrefix(policy, prefix));
        }
        List<Target> out = new ArrayList<>();
        FenceAdmin storeAdmin = store.open();
        if (storeAdmin != null) {
            out.add(new Target(storeAdmin, null, Keeper.STORE));
        }
        Map<Place, Fenced> seen = new LinkedHashMap<>();
        for (Fenced p : fenced) {
            if ((p.place() instanceof Database || p.place() instanceof SqlTable) && !seen.containsKey(p.place())
                    && (prefix == null || p.overlaps(prefix))) {
                seen.put(p.place(), p);
                out.add(target(p));
            }
        }
        if (out.isEmpty()) {
            throw noStoreOperations();
        }
        return out;
    }

    /**
     * The policies a listing of {@code prefix} without a policy cannot cover (their fence is elsewhere), with the
     * reason: for an honest answer.
     */
    public Map<String, String> notCovered(@Nullable String prefix) {
        Map<String, String> out = new LinkedHashMap<>();
        for (Fenced p : fenced) {
            if (p.place() instanceof Elsewhere e && (prefix == null || p.overlaps(prefix))) {
                out.put(p.name(), e.reason());
            }
        }
        return out;
    }

    private Target route(@Nullable String policy, String subject, String verb, Predicate<Fenced> fits)
            throws FenceOperations.Refused, StoreUnavailableException {
        if (policy != null) {
            Fenced p = policy(policy);
            if (!fits.test(p)) {
                throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "policy '" + p.name() + "' cannot "
                        + verb + " " + subject + ": its scopes are made by the template '" + p.template() + "'");
            }
            return target(p);
        }
        Map<Place, List<Fenced>> byPlace = new LinkedHashMap<>();
        for (Fenced p : fenced) {
            if (fits.test(p)) {
                byPlace.computeIfAbsent(p.place(), k -> new ArrayList<>()).add(p);
            }
        }
        if (byPlace.isEmpty()) {
            return storeTarget();
        }
        if (byPlace.size() > 1) {
            StringJoiner places = new StringJoiner("; ");
            byPlace.forEach((place, ps) -> places.add(String.join(", ", ps.stream().map(Fenced::name).toList())
                    + " (" + describe(place) + ")"));
            throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, subject + " may belong to policies whose "
                    + "fences are kept in different places: " + places + ". Name the policy: \"policy\" (admin API) "
                    + "or --policy NAME (fence command)");
        }
        return target(byPlace.values().iterator().next().getFirst());
    }

    private Target target(Fenced p) throws FenceOperations.Refused, StoreUnavailableException {
        return switch (p.place()) {
            case Store s -> storeTarget();
            case Database d -> new Target(databases.of(Objects.requireNonNull(p.policy(),
                    "a database place is an HTTP policy's (placeOf)")), p.name(), Keeper.BACKEND);
            case SqlTable t -> new Target(Objects.requireNonNull(sqlFence, "a SQL table place needs the SQL fence")
                    .open(), p.name(), Keeper.SQL);
            case Elsewhere e -> throw new FenceOperations.Refused(ProblemType.NOT_SUPPORTED, "policy '" + p.name()
                    + "' " + e.reason() + ". " + e.instead());
        };
    }

    private Target storeTarget() throws FenceOperations.Refused, StoreUnavailableException {
        FenceAdmin admin = store.open();
        if (admin == null) {
            throw noStoreOperations();
        }
        return new Target(admin, null, Keeper.STORE);
    }

    private FenceOperations.Refused noStoreOperations() {
        return new FenceOperations.Refused(ProblemType.NOT_SUPPORTED, "the " + storeConfig.type()
                + " store has no fence-state operations");
    }

    private Fenced policy(String name) throws FenceOperations.Refused {
        for (Fenced p : fenced) {
            if (p.name().equals(name)) {
                return p;
            }
        }
        throw new FenceOperations.Refused(ProblemType.NO_POLICY, "no policy named '" + name + "'; the policies are: "
                + String.join(", ", fenced.stream().map(Fenced::name).toList()));
    }

    private String describe(Place place) {
        return switch (place) {
            case Store s -> "the proxy's " + storeConfig.type() + " store";
            case Database d -> "the stockade_fences table of their postgres backend's database";
            case SqlTable t -> "the fence table of the SQL listener's database";
            case Elsewhere e -> "not kept by the proxy";
        };
    }

    /** Where a policy keeps its fence, as its backend type says: the store's own database is the store. */
    private Place placeOf(FencePlace place) {
        return switch (place) {
            case FencePlace.ProxyStore s -> new Store();
            case FencePlace.Database d -> sameAsStore(d.datasource()) ? new Store()
                    : new Database(d.datasource().url(), Objects.requireNonNullElse(d.datasource().user(), ""));
            case FencePlace.Elsewhere e -> new Elsewhere(e.reason(), e.instead());
        };
    }

    private boolean sameAsStore(Datasource ds) {
        return storeConfig instanceof StoreConfig.Postgres pg && pg.datasource().url().equals(ds.url())
                && Objects.equals(pg.datasource().user(), ds.user());
    }
}
