package io.stockade.proxy.admin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.StringJoiner;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.proxy.backend.registry.BackendTypes;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.registry.TokenVerifiers;

import org.jspecify.annotations.Nullable;

/**
 * The fence-state operations, shared by the {@code fence} command and the admin endpoints: each takes plain
 * arguments and answers JSON. None lowers a token but {@link #reset}, the operator's repair, and only where no
 * holder's lease on the scope can be valid (see {@link FenceAdmin}). Each acts on the fence that keeps the scope,
 * wherever that is ({@link FenceRouting}: the proxy's store, a postgres backend's database, or the SQL listener's),
 * or is refused with the reason; every answer says which ({@code "keeper":"store"}, or {@code "keeper":"backend"}
 * or {@code "sql"} with the {@code "policy"}).
 * <p>
 * Export format, one JSON object per line: first every floor
 * {@code {"kind":"floor","prefix":"p/","token":9,"keeper":"store"}}, then every scope
 * {@code {"kind":"scope","scope":"p/a","token":7,"keeper":"backend","policy":"orders"}}. Versions (upstream ETags)
 * are not exported: an imported scope's version is unknown and the next writer reads it afresh. Import applies each
 * line with {@link FenceAdmin#raiseFloor} or {@link FenceAdmin#raise} on the fence it names:
 * {@code max(existing, imported)}.
 */
public final class FenceOperations {
    /** Most scopes one list answers. */
    public static final int MAX_LIST = 10_000;

    /** A refusal with an HTTP status (the command maps it to an exit code). */
    public static final class Refused extends Exception {
        private final ProblemType kind;

        Refused(ProblemType kind, String message) {
            super(message);
            this.kind = kind;
        }

        /** The refusal's message: every refusal is made with one. */
        @Override
        public String getMessage() {
            return Objects.requireNonNull(super.getMessage(), "a refusal is made with its message");
        }

        public int status() {
            return kind.status();
        }

        public String type() {
            return kind.type();
        }

        public ProblemType kind() {
            return kind;
        }
    }

    /** What a policy's verifier says of a scope's token as its lease holder's, for {@link #reset}. */
    @FunctionalInterface
    public interface Leases {
        /** No verifier anywhere: every reset needs force. */
        Leases NONE = (policy, scope, token) -> null;

        /**
         * The verdict of {@code policy}'s verifier on {@code token} as the token of {@code scope}'s lease holder,
         * or null when the policy has no verifier that can tell (none; or hmac, which judges a signature that a
         * reset does not have).
         */
        TokenVerifier.@Nullable Verdict holder(Policy policy, String scope, long token);

        /**
         * What the policies' verifiers say: each asked about the token as a write of it would ask (a claim
         * without headers); null for a policy without one, or with hmac.
         */
        static Leases of(TokenVerifiers verifiers) {
            return (policy, scope, token) -> {
                TokenVerifier verifier;
                try {
                    verifier = verifiers.of(policy);
                } catch (IllegalStateException e) {
                    return new TokenVerifier.Unavailable("its verifier is not open (a reload is replacing it)");
                }
                if (verifier == null || verifier.kind().equals("hmac")) {
                    return null;
                }
                return verifier.verify(new TokenVerifier.Claim(scope, token, name -> List.of()));
            };
        }
    }

    private static final Logger LOG = Logger.getLogger(FenceOperations.class.getName());

    private final FenceRouting routing;
    private final Leases leases;

    /** The operations on the fences {@code routing} leads to; a reset always needs force. */
    public FenceOperations(FenceRouting routing) {
        this(routing, Leases.NONE);
    }

    /** The operations on the fences {@code routing} leads to; a reset asks {@code leases}. */
    public FenceOperations(FenceRouting routing, Leases leases) {
        this.routing = routing;
        this.leases = leases;
    }

    /**
     * A scope's own token, the highest floor covering it and the effective highest (what a writer must reach), as
     * the fence that keeps it has them.
     *
     * @param policy the policy whose fence to read, or {@code null}: the one the scope templates lead to
     */
    public String show(@Nullable String policy, @Nullable String scope) throws StoreUnavailableException, Refused {
        scope = requireText(scope, "scope");
        FenceRouting.Target target = routing.forScope(policy, scope);
        FenceAdmin admin = target.admin();
        Optional<FenceAdmin.ScopeEntry> entry = admin.scope(scope);
        long floor = FenceAdmin.floorOf(admin.floors(), scope);
        if (entry.isEmpty() && floor < 0) {
            throw new Refused(ProblemType.UNKNOWN_SCOPE, "no token was ever accepted for scope '" + scope
                    + "' and no floor covers it" + where(target));
        }
        long token = entry.map(FenceAdmin.ScopeEntry::token).orElse(-1L);
        return "{\"scope\":" + JsonWriter.quote(scope)
                + ",\"token\":" + (entry.isPresent() ? token : "null")
                + ",\"version\":" + JsonWriter.quote(entry.map(FenceAdmin.ScopeEntry::version).orElse(null))
                + ",\"floor\":" + (floor < 0 ? "null" : floor)
                + ",\"effective\":" + Math.max(token, floor) + target.json() + "}";
    }

    /**
     * Scopes starting with {@code prefix}: in the named policy's fence, else in the store and every postgres
     * backend's database that may hold such scopes (the store's first; most recently active first within one).
     */
    public String list(@Nullable String policy, @Nullable String prefix, int limit)
            throws StoreUnavailableException, Refused {
        if (limit < 1 || limit > MAX_LIST) {
            throw new Refused(ProblemType.BAD_REQUEST, "limit must be 1.." + MAX_LIST + ", was " + limit);
        }
        String p = prefix == null ? "" : prefix;
        List<FenceRouting.Target> targets = routing.every(policy, p);
        StringJoiner j = new StringJoiner(",", "[", "]");
        int left = limit;
        boolean byActivity = targets.size() == 1;
        for (FenceRouting.Target target : targets) {
            if (left == 0) {
                break;
            }
            byActivity &= target.admin().listsByActivity();
            for (FenceAdmin.ScopeEntry e : target.admin().scopes(p, left)) {
                j.add("{\"scope\":" + JsonWriter.quote(e.scope()) + ",\"token\":" + e.token() + ",\"activity\":"
                        + e.activity() + target.json() + "}");
                left--;
            }
        }
        return "{\"orderedByActivity\":" + byActivity + ",\"scopes\":" + j
                + elsewhere(policy == null ? routing.notCovered(p) : Map.of()) + "}";
    }

    /** The prefix floors of the named policy's fence, else of the store and every postgres backend's database. */
    public String floors(@Nullable String policy) throws StoreUnavailableException, Refused {
        StringJoiner j = new StringJoiner(",", "[", "]");
        for (FenceRouting.Target target : routing.every(policy, null)) {
            for (FenceAdmin.Floor f : target.admin().floors()) {
                j.add("{\"prefix\":" + JsonWriter.quote(f.prefix()) + ",\"token\":" + f.token() + target.json()
                        + "}");
            }
        }
        return "{\"floors\":" + j + elsewhere(policy == null ? routing.notCovered(null) : Map.of()) + "}";
    }

    /**
     * Writes every floor, then every scope, one JSON line each, of the named policy's fence, else of the store and
     * of every postgres backend's database; each line says whose it is. Answers the number of lines.
     */
    public long export(@Nullable String policy, Writer out) throws StoreUnavailableException, IOException, Refused {
        List<FenceRouting.Target> targets = routing.every(policy, null);
        long[] n = {0};
        for (FenceRouting.Target target : targets) {
            for (FenceAdmin.Floor f : target.admin().floors()) {
                out.write("{\"kind\":\"floor\",\"prefix\":" + JsonWriter.quote(f.prefix()) + ",\"token\":"
                        + f.token() + target.json() + "}\n");
                n[0]++;
            }
        }
        for (FenceRouting.Target target : targets) {
            try {
                target.admin().forEachScope(e -> {
                    try {
                        out.write("{\"kind\":\"scope\",\"scope\":" + JsonWriter.quote(e.scope()) + ",\"token\":"
                                + e.token() + target.json() + "}\n");
                        n[0]++;
                    } catch (IOException io) {
                        throw new UncheckedIOException(io);
                    }
                });
            } catch (UncheckedIOException e) {
                throw e.getCause();
            }
        }
        out.flush();
        return n[0];
    }

    /**
     * Applies an export: each line raises a floor or a scope to at least its token, in the fence the line names
     * ({@code "policy"}: that policy's; {@code "keeper":"store"}: the store's; neither: the one the scope
     * templates lead to). Stops at the first bad or refused line (lines before it are applied: each is safe on its
     * own).
     */
    public String importLines(BufferedReader in) throws StoreUnavailableException, IOException, Refused {
        long lines = 0;
        long raised = 0;
        long kept = 0;
        String line;
        while ((line = in.readLine()) != null) {
            lines++;
            if (line.isBlank()) {
                continue;
            }
            String at = "line " + lines + ": ";
            String applied = " (applied " + (raised + kept) + " lines before it)";
            Map<String, Object> o;
            try {
                o = FlatJson.parse(line);
            } catch (IllegalArgumentException e) {
                throw new Refused(ProblemType.BAD_REQUEST, at + e.getMessage() + applied);
            }
            for (String key : o.keySet()) {
                if (!LINE_KEYS.contains(key)) {
                    throw new Refused(ProblemType.BAD_REQUEST, at + "unknown field '" + key + "'; a line has "
                            + String.join(", ", LINE_KEYS) + applied);
                }
            }
            long token = token(o.get("token"), at);
            Object kind = o.get("kind");
            FenceRouting.Keeper keeper = FenceRouting.Keeper.of(o.get("keeper"));
            String policy = o.get("policy") instanceof String s ? s : null;
            if ((o.containsKey("policy") && policy == null) || (o.get("keeper") != null && keeper == null)
                    || (keeper != null && keeper != FenceRouting.Keeper.STORE && policy == null)) {
                throw new Refused(ProblemType.BAD_REQUEST, at + "\"keeper\" is \"store\", or \"backend\" or \"sql\""
                        + " with the \"policy\"" + applied);
            }
            boolean store = policy == null && keeper == FenceRouting.Keeper.STORE;
            long after;
            try {
                if ("floor".equals(kind) && o.get("prefix") instanceof String p && !o.containsKey("scope")) {
                    after = routing.forLine(policy, store, null, p).admin().raiseFloor(p, token);
                } else if ("scope".equals(kind) && o.get("scope") instanceof String s && !s.isEmpty()
                        && !o.containsKey("prefix")) {
                    after = routing.forLine(policy, store, s, null).admin().raise(s, token);
                } else {
                    throw new Refused(ProblemType.BAD_REQUEST, at + "expected {\"kind\":\"floor\",\"prefix\":...}"
                            + " or {\"kind\":\"scope\",\"scope\":...} with a token" + applied);
                }
            } catch (Refused e) {
                throw e.getMessage().startsWith(at) ? e : new Refused(e.kind(), at + e.getMessage() + applied);
            }
            if (after > token) {
                kept++;
            } else {
                raised++;
            }
        }
        return "{\"lines\":" + lines + ",\"raised\":" + raised + ",\"keptHigher\":" + kept + "}";
    }

    /** Raises one scope to at least {@code token}, in the fence that keeps it. */
    public String raiseScope(@Nullable String policy, @Nullable String scope, long token)
            throws StoreUnavailableException, Refused {
        scope = requireText(scope, "scope");
        checkToken(token);
        FenceRouting.Target target = routing.forScope(policy, scope);
        long after = target.admin().raise(scope, token);
        return "{\"scope\":" + JsonWriter.quote(scope) + ",\"requested\":" + token + ",\"token\":" + after
                + ",\"raised\":" + (after == token) + target.json() + "}";
    }

    /**
     * Raises the floor of a prefix to at least {@code token}, in the fence that keeps the scopes under it; applies
     * to scopes that do not exist yet too.
     */
    public String raiseFloor(@Nullable String policy, @Nullable String prefix, long token)
            throws StoreUnavailableException, Refused {
        if (prefix == null) {
            throw new Refused(ProblemType.BAD_REQUEST, "prefix is required (\"\" covers every scope)");
        }
        checkToken(token);
        FenceRouting.Target target = routing.forPrefix(policy, prefix);
        long after = target.admin().raiseFloor(prefix, token);
        return "{\"prefix\":" + JsonWriter.quote(prefix) + ",\"requested\":" + token + ",\"floor\":" + after
                + ",\"raised\":" + (after == token) + target.json() + "}";
    }

    /** Retires a scope that a floor at or above its token covers; refuses (409) any other. */
    public String retire(@Nullable String policy, @Nullable String scope) throws StoreUnavailableException, Refused {
        scope = requireText(scope, "scope");
        FenceRouting.Target target = routing.forScope(policy, scope);
        return switch (target.admin().retire(scope)) {
            case RETIRED -> "{\"scope\":" + JsonWriter.quote(scope) + ",\"retired\":true" + target.json() + "}";
            case NOT_FOUND -> throw new Refused(ProblemType.UNKNOWN_SCOPE, "scope '" + scope + "' is not stored"
                    + where(target));
            case NOT_COVERED -> throw new Refused(ProblemType.SCOPE_NOT_COVERED, "scope '" + scope + "' is not covered "
                    + "by a prefix floor at or above its token; removing it would let lower tokens in. Raise a "
                    + "floor over it first (raise --prefix P --token N with N >= its token)" + where(target));
        };
    }

    /**
     * Lowers a scope's own token from what it is to {@code token}: the repair of a scope a forged token took (a
     * first token far above its holder's, on a policy that bounds none). Refused (nothing changed) unless no
     * holder's lease on the scope can be valid, as far as the proxy can tell:
     * <ul>
     *     <li>each policy whose writes the scope's fence judges has a verifier of a lock service: reset when every
     *     one says the scope's token is no valid lease holder's (a forged token is nobody's); refused
     *     ({@code lease-valid}) when one says it is; 503 when one cannot answer. Afterwards every token the fence
     *     admits is still verified, so no earlier holder's token gets in;</li>
     *     <li>otherwise (no verifier, hmac, or no policy makes the scope now) the proxy cannot see leases:
     *     {@code force} with a {@code reason} states that no holder of a lease on the scope can still write (every
     *     writer with a token below the current one stopped, or its lease expired); without them,
     *     {@code force-required}.</li>
     * </ul>
     * The token must be below the scope's and not below a prefix floor covering it (floors only rise). The reset
     * is a compare-and-set on the token the checks saw ({@code scope-changed} when a write raised it meanwhile), and
     * is logged (WARNING, with its grounds) besides the admin API's own line.
     */
    public String reset(@Nullable String policy, @Nullable String scope, long token, boolean force,
                        @Nullable String reason)
            throws StoreUnavailableException, Refused {
        scope = requireText(scope, "scope");
        checkToken(token);
        FenceRouting.Target target = routing.forScope(policy, scope);
        FenceAdmin admin = target.admin();
        Optional<FenceAdmin.ScopeEntry> entry = admin.scope(scope);
        if (entry.isEmpty()) {
            throw new Refused(ProblemType.UNKNOWN_SCOPE, "scope '" + scope + "' is not stored" + where(target));
        }
        long current = entry.get().token();
        if (token >= current) {
            throw new Refused(ProblemType.BAD_REQUEST, "a reset lowers a scope's token: " + token + " is not below"
                    + " the token " + current + " of scope '" + scope + "' (raise --scope raises one)"
                    + where(target));
        }
        long floor = FenceAdmin.floorOf(admin.floors(), scope);
        if (floor > token) {
            throw new Refused(ProblemType.BAD_REQUEST, "a prefix floor at " + floor + " covers scope '" + scope
                    + "': its writers need a token above the floor, whatever the scope's own; reset it to " + floor
                    + " or above (floors only rise)" + where(target));
        }
        for (Policy p : routing.policiesFor(policy, scope)) {
            Optional<String> refusal = BackendTypes.of(p).resetRefusal();
            if (refusal.isPresent()) {
                throw new Refused(ProblemType.NOT_SUPPORTED, refusal.get());
            }
        }
        String grounds = leaseGrounds(policy, scope, current, force, reason);
        long before = admin.reset(scope, current, token);
        if (before != current) {
            throw new Refused(ProblemType.SCOPE_CHANGED, "scope '" + scope + "' changed while the reset was being"
                    + " decided (its token is " + (before < 0 ? "gone" : before) + ", was " + current + "); nothing"
                    + " was lowered: look again" + where(target));
        }
        LOG.warning("fence reset: scope '" + scope + "' lowered from " + current + " to " + token + where(target)
                + "; grounds: " + grounds);
        return "{\"scope\":" + JsonWriter.quote(scope) + ",\"from\":" + current + ",\"token\":" + token
                + ",\"reset\":true,\"grounds\":" + JsonWriter.quote(grounds) + target.json() + "}";
    }

    /** Why no holder's lease on the scope is valid, as {@link #reset} establishes it; else the refusal. */
    private String leaseGrounds(@Nullable String policy, String scope, long current, boolean force,
                                @Nullable String reason)
            throws Refused {
        List<Policy> judged = routing.policiesFor(policy, scope);
        List<String> cannotTell = new ArrayList<>();
        List<String> notHeld = new ArrayList<>();
        for (Policy p : judged) {
            switch (leases.holder(p, scope, current)) {
                case null -> cannotTell.add(p.name());
                case TokenVerifier.Genuine g -> throw new Refused(ProblemType.LEASE_VALID, "token " + current
                        + " of scope '" + scope + "' is the token of a valid lease holder, says the verifier of"
                        + " policy '" + p.name() + "': there is nothing to repair, and lowering it would let that"
                        + " holder's predecessors write again; nothing changed");
                case TokenVerifier.Refused r -> notHeld.add(p.name());
                case TokenVerifier.Unavailable u -> throw new Refused(ProblemType.VERIFIER_UNAVAILABLE, "the"
                        + " verifier of policy '" + p.name() + "' cannot say whether token " + current + " of scope '"
                        + scope + "' is a valid lease holder's (" + u.reason() + "); nothing changed, try again");
            }
        }
        if (!judged.isEmpty() && cannotTell.isEmpty()) {
            return "the verifiers of " + notHeld + " say token " + current + " is no valid lease holder's";
        }
        if (!force || reason == null || reason.isBlank()) {
            throw new Refused(ProblemType.FORCE_REQUIRED, "the proxy cannot tell whether a lease on scope '" + scope
                    + "' is valid (" + (judged.isEmpty() ? "no policy makes the scope now"
                    : "policies " + cannotTell + " have no verifier of a lock service") + "): a reset needs force"
                    + " and a reason, by which you state that no holder of a lease on the scope can still write"
                    + " (every writer with a token below " + current + " stopped, or its lease expired); nothing"
                    + " changed");
        }
        return "forced by the operator: " + reason.strip();
    }

    private static final List<String> LINE_KEYS = List.of("kind", "scope", "prefix", "token", "keeper", "policy");

    private static String where(FenceRouting.Target target) {
        return switch (target.keeper()) {
            case STORE -> " (in the proxy's store)";
            case BACKEND -> " (in the database of the postgres backend of policy '" + target.policy() + "')";
            case SQL -> " (in the fence table of the SQL listener's database, policy '" + target.policy() + "')";
        };
    }

    /** The policies whose fence a listing without a policy could not cover, and why. */
    private static String elsewhere(Map<String, String> notCovered) {
        if (notCovered.isEmpty()) {
            return "";
        }
        StringJoiner j = new StringJoiner(",", ",\"notCovered\":[", "]");
        notCovered.forEach((policy, reason) -> j.add("{\"policy\":" + JsonWriter.quote(policy) + ",\"reason\":"
                + JsonWriter.quote("policy '" + policy + "' " + reason) + "}"));
        return j.toString();
    }

    static long token(@Nullable Object value, String where) throws Refused {
        if (value instanceof Long l && l >= 0) {
            return l;
        }
        throw new Refused(ProblemType.BAD_REQUEST, where + "token must be a whole number 0.." + Long.MAX_VALUE);
    }

    private static void checkToken(long token) throws Refused {
        if (token < 0) {
            throw new Refused(ProblemType.BAD_REQUEST, "token must be 0.." + Long.MAX_VALUE);
        }
    }

    /** {@code value}, refused when it is null or empty. */
    private static String requireText(@Nullable String value, String what) throws Refused {
        if (value == null || value.isEmpty()) {
            throw new Refused(ProblemType.BAD_REQUEST, what + " is required");
        }
        return value;
    }
}
