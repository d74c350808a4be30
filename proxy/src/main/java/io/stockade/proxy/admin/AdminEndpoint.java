package io.stockade.proxy.admin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.StringWriter;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.StringJoiner;
import java.util.TreeSet;
import java.util.function.Supplier;

import io.stockade.policy.AdminConfig;
import io.stockade.policy.RequestTarget;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.io.SecretFiles;
import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.log.DecisionLog;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.Handler;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * The admin endpoints under {@value #BASE}: fence-state operations over HTTP, JSON in and out, RFC 9457 problems
 * for errors, every call (allowed or not) audited in the log — the path and the operation's own parameters, the
 * names only of any other query parameter, never the token. Authenticated by {@code Authorization: Bearer <token>}
 * compared in constant time. See {@code docs/admin-api.md}.
 * <pre>
 *   GET  /admin/fences/scope?name=S[&amp;policy=P]             show
 *   GET  /admin/fences/scopes?prefix=P&amp;limit=N[&amp;policy=P]  list (most recently active first where known)
 *   GET  /admin/fences/floors[?policy=P]                    prefix floors
 *   GET  /admin/fences/export[?policy=P]                    JSON lines (application/x-ndjson)
 *   POST /admin/fences/import                               JSON lines; each raises, never lowers
 *   POST /admin/fences/raise    {"scope":S,"token":N} or {"prefix":P,"token":N}, and optionally "policy"
 *   POST /admin/fences/retire   {"scope":S}, and optionally "policy"
 *   POST /admin/fences/reset    {"scope":S,"token":N}, and optionally "policy", "force":true and "reason":R
 * </pre>
 * Each acts on the fence that keeps the scope ({@link FenceRouting}). A parameter or field not listed is refused
 * (a misspelt {@code policy} would otherwise act on another fence).
 * <p>
 * The admin paths take one spelling, as the data path does ({@code io.stockade.policy.RequestTarget}): a target
 * that any reading (as sent, percent-decoded, without {@code ;parameters}, with dot-segments resolved, or Helidon's
 * own) places under {@value #BASE} or {@value #POLICIES} is answered here, and refused (400, before the bearer
 * token is looked at) unless it is exactly its canonical spelling. Such a target never falls through to the data
 * path. Any other path passes on to the next handler (the pipeline).
 */
public final class AdminEndpoint implements Handler {
    public static final String BASE = "/admin/fences";
    /** The policy view and reload. */
    public static final String POLICIES = "/admin/policies";
    /** Largest JSON request body (import is streamed, not bounded by this). */
    private static final int MAX_BODY = 64 * 1024;
    /** Query parameters whose values the audit line shows: the operations' own, which name scopes and policies. */
    private static final Set<String> LOGGED = Set.of("name", "prefix", "limit", "policy");

    private final byte[] token;
    private final Supplier<FenceRouting> routing;
    private final PolicyReload reloader;
    private final FenceOperations.Leases leases;

    private AdminEndpoint(byte[] token, Supplier<FenceRouting> routing, PolicyReload reloader,
                          FenceOperations.Leases leases) {
        this.token = token;
        this.routing = routing;
        this.reloader = reloader;
        this.leases = leases;
    }

    /**
     * The admin endpoint of {@code config}, its token read now (from the token file when there is one).
     *
     * @param routing  where the fence of each scope is kept, for the policies in force at each call
     * @param reloader the policies in force, and their reload
     * @throws IOException when the token file cannot be read or is empty
     */
    public static AdminEndpoint create(AdminConfig config, Supplier<FenceRouting> routing, PolicyReload reloader)
            throws IOException {
        return create(config, routing, reloader, FenceOperations.Leases.NONE);
    }

    /**
     * As {@link #create(AdminConfig, Supplier, PolicyReload)}, with what the policies' verifiers say of a lease
     * holder's token, which a reset asks ({@link FenceOperations#reset}).
     */
    public static AdminEndpoint create(AdminConfig config, Supplier<FenceRouting> routing, PolicyReload reloader,
                                       FenceOperations.Leases leases) throws IOException {
        String t = config.token();
        if (config.tokenFile() != null) {
            t = SecretFiles.firstLine(config.tokenFile());
        }
        if (t == null || t.isEmpty()) {
            throw new IOException("admin token is empty" + (config.tokenFile() != null
                    ? " (first line of " + config.tokenFile() + ")" : ""));
        }
        return new AdminEndpoint(t.getBytes(StandardCharsets.UTF_8), routing, reloader, leases);
    }

    @Override
    public void handle(ServerRequest req, ServerResponse res) {
        String raw = req.path().rawPath();
        if (!claims(req)) {
            res.next();
            return;
        }
        String method = req.prologue().method().text();
        String who = req.remotePeer().address().toString();
        RequestTarget.Parsed parsed = RequestTarget.parse(raw, rawQuery(req), req.prologue().fragment().hasValue());
        String path = parsed instanceof RequestTarget.Accepted a ? a.target().path() : raw;
        String call = method + " " + path + loggedQuery(req);
        String refused = switch (parsed) {
            case RequestTarget.Refused r -> r.reason();
            case RequestTarget.Accepted a when !a.target().path().equals(raw) -> "it is spelled '" + raw
                    + "'; send its one spelling, '" + a.target().path() + "'";
            case RequestTarget.Accepted a when !isAdmin(path) -> "it reads as an admin path only once normalised;"
                    + " send the path as it is meant";
            case RequestTarget.Accepted a -> null;
        };
        if (refused != null) {
            DecisionLog.admin(call, who, "400", "path refused: " + refused);
            Problem.of(ProblemType.BAD_PATH, "the admin API takes each path in its one canonical spelling: "
                    + refused).send(res);
            return;
        }
        boolean policies = path.equals(POLICIES) || path.startsWith(POLICIES + "/");
        if (!authorized(req)) {
            DecisionLog.admin(call, who, "401", "no or wrong bearer token");
            Problem.of(ProblemType.UNAUTHORIZED, "send Authorization: Bearer <admin token>")
                    .header("WWW-Authenticate", "Bearer realm=\"stockade-admin\"").send(res);
            return;
        }
        if (policies) {
            policies(res, method, path, call, who);
            return;
        }
        fences(req, res, method, path, call, who);
    }

    /** The fence-state operations. */
    private void fences(ServerRequest req, ServerResponse res, String method, String path, String call, String who) {
        String op = path.substring(BASE.length());
        try {
            FenceOperations ops = new FenceOperations(routing.get(), leases);
            String answer;
            switch (method + " " + op) {
                case "GET /scope" -> {
                    Map<String, String> q = query(req, "name", "policy");
                    answer = ops.show(q.get("policy"), q.get("name"));
                }
                case "GET /scopes" -> {
                    Map<String, String> q = query(req, "prefix", "limit", "policy");
                    answer = ops.list(q.get("policy"), q.getOrDefault("prefix", ""),
                            intParam(q.getOrDefault("limit", "100")));
                }
                case "GET /floors" -> answer = ops.floors(query(req, "policy").get("policy"));
                case "GET /export" -> {
                    String policy = query(req, "policy").get("policy");
                    StringWriter w = new StringWriter();
                    long lines = ops.export(policy, w);
                    DecisionLog.admin(call, who, "200", lines + " lines");
                    res.header(HeaderNames.CONTENT_TYPE, "application/x-ndjson");
                    res.send(w.toString());
                    return;
                }
                case "POST /import" -> {
                    query(req);
                    try (BufferedReader in = new BufferedReader(new InputStreamReader(req.content().inputStream(),
                            StandardCharsets.UTF_8))) {
                        answer = ops.importLines(in);
                    }
                }
                case "POST /raise" -> {
                    query(req);
                    Map<String, Object> body = body(req, "scope", "prefix", "token", "policy");
                    long t = FenceOperations.token(body.get("token"), "");
                    String policy = text(body, "policy");
                    if (body.get("scope") instanceof String s && !body.containsKey("prefix")) {
                        answer = ops.raiseScope(policy, s, t);
                    } else if (body.get("prefix") instanceof String p && !body.containsKey("scope")) {
                        answer = ops.raiseFloor(policy, p, t);
                    } else {
                        throw new FenceOperations.Refused(ProblemType.BAD_REQUEST,
                                "give exactly one of \"scope\" and \"prefix\", and a \"token\"");
                    }
                }
                case "POST /retire" -> {
                    query(req);
                    Map<String, Object> body = body(req, "scope", "policy");
                    answer = ops.retire(text(body, "policy"), body.get("scope") instanceof String s ? s : null);
                }
                case "POST /reset" -> {
                    query(req);
                    Map<String, Object> body = body(req, "scope", "token", "policy", "force", "reason");
                    Object force = body.get("force");
                    if (force != null && !(force instanceof Boolean)) {
                        throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "request body: 'force' must be"
                                + " true or false");
                    }
                    answer = ops.reset(text(body, "policy"), text(body, "scope"),
                            FenceOperations.token(body.get("token"), ""), Boolean.TRUE.equals(force),
                            text(body, "reason"));
                }
                default -> throw new FenceOperations.Refused(ProblemType.NO_SUCH_OPERATION, "no admin operation "
                        + method + " " + path + "; see docs/admin-api.md");
            }
            DecisionLog.admin(call, who, "200", answer);
            res.header(HeaderNames.CONTENT_TYPE, "application/json");
            res.send(answer);
        } catch (FenceOperations.Refused e) {
            DecisionLog.admin(call, who, Integer.toString(e.status()), e.getMessage());
            Problem.of(e.kind(), e.getMessage()).send(res);
        } catch (StoreUnavailableException e) {
            String detail = Objects.requireNonNullElse(e.getMessage(), "the fence store is unavailable");
            DecisionLog.admin(call, who, "503", detail);
            Problem.of(ProblemType.STORE_UNAVAILABLE, detail).retryAfter(1).send(res);
        } catch (IOException | RuntimeException e) {
            DecisionLog.admin(call, who, "400", String.valueOf(e));
            Problem.of(ProblemType.BAD_REQUEST, String.valueOf(e.getMessage())).send(res);
        }
    }

    /** {@code GET /admin/policies} (the policies in force, secrets redacted) and {@code POST .../reload}. */
    private void policies(ServerResponse res, String method, String path, String call, String who) {
        switch (method + " " + path) {
            case "GET " + POLICIES -> {
                DecisionLog.admin(call, who, "200", "policy view");
                res.header(HeaderNames.CONTENT_TYPE, "application/json");
                res.send(ConfigView.json(reloader.config()));
            }
            case "POST " + POLICIES + "/reload" -> {
                try {
                    String summary = reloader.reload();
                    DecisionLog.admin(call, who, "200", summary);
                    res.header(HeaderNames.CONTENT_TYPE, "application/json");
                    res.send("{\"reloaded\":true,\"summary\":" + JsonWriter.quote(summary) + "}");
                } catch (PolicyReload.Refused e) {
                    DecisionLog.admin(call, who, Integer.toString(e.status()), e.getMessage());
                    Problem.of(e.kind(), e.getMessage()).send(res);
                }
            }
            default -> {
                DecisionLog.admin(call, who, "404", "no such operation");
                Problem.of(ProblemType.NO_SUCH_OPERATION, "no admin operation " + method + " " + path
                        + "; see docs/admin-api.md").send(res);
            }
        }
    }

    private boolean authorized(ServerRequest req) {
        String h = req.headers().first(HeaderNames.AUTHORIZATION).orElse("");
        if (!h.regionMatches(true, 0, "Bearer ", 0, 7)) {
            return false;
        }
        byte[] given = h.substring(7).strip().getBytes(StandardCharsets.UTF_8);
        return MessageDigest.isEqual(given, token);
    }

    /** The request's JSON object, with no field but {@code allowed}. */
    private static Map<String, Object> body(ServerRequest req, String... allowed) throws FenceOperations.Refused,
            IOException {
        byte[] b = req.content().inputStream().readNBytes(MAX_BODY + 1);
        if (b.length > MAX_BODY) {
            throw new FenceOperations.Refused(ProblemType.BODY_TOO_LARGE, "request body over " + MAX_BODY + " bytes");
        }
        Map<String, Object> body;
        try {
            body = FlatJson.parse(new String(b, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "request body: " + e.getMessage());
        }
        List<String> known = List.of(allowed);
        for (String field : body.keySet()) {
            if (!known.contains(field)) {
                throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "request body: unknown field '" + field
                        + "'; this operation takes " + String.join(", ", known));
            }
        }
        return body;
    }

    /** A text field, or null when absent; anything else is refused. */
    private static @Nullable String text(Map<String, Object> body, String field) throws FenceOperations.Refused {
        Object v = body.get(field);
        if (v == null || v instanceof String) {
            return (String) v;
        }
        throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "request body: '" + field + "' must be a string");
    }

    /** The query parameters, each at most once and none but {@code allowed}. */
    private static Map<String, String> query(ServerRequest req, String... allowed) throws FenceOperations.Refused {
        List<String> known = List.of(allowed);
        Map<String, String> out = new HashMap<>();
        for (String name : req.query().names()) {
            if (!known.contains(name)) {
                throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "unknown query parameter '" + name + "'; "
                        + (known.isEmpty() ? "this operation takes none" : "this operation takes "
                        + String.join(", ", known)));
            }
            List<String> values = req.query().all(name);
            if (values.size() != 1) {
                throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "query parameter '" + name
                        + "' is given " + values.size() + " times; give it once");
            }
            out.put(name, values.getFirst());
        }
        return out;
    }

    /**
     * Whether a target is the admin API's: any reading of it — as sent, Helidon's, or decoded leniently with
     * {@code ;parameters} dropped and dot-segments resolved — is under {@value #BASE} or {@value #POLICIES}.
     */
    public static boolean claims(ServerRequest req) {
        return claims(req.path().rawPath(), req.path().path());
    }

    static boolean claims(String raw, String decoded) {
        return isAdmin(raw) || isAdmin(decoded) || isAdmin(lenient(raw));
    }

    private static boolean isAdmin(String path) {
        return path.equals(BASE) || path.startsWith(BASE + "/") || path.equals(POLICIES)
                || path.startsWith(POLICIES + "/");
    }

    /** How the most forgiving server could read a path: decoded, {@code ;params} dropped, dot-segments resolved. */
    private static String lenient(String raw) {
        String decoded;
        try {
            decoded = URLDecoder.decode(raw.replace("+", "%2B"), StandardCharsets.UTF_8);
        } catch (IllegalArgumentException e) {
            decoded = raw;
        }
        Deque<String> segments = new ArrayDeque<>();
        for (String segment : decoded.replace('\\', '/').split("/", -1)) {
            int semicolon = segment.indexOf(';');
            String s = semicolon < 0 ? segment : segment.substring(0, semicolon);
            if (s.equals("..")) {
                segments.pollLast();
            } else if (!s.isEmpty() && !s.equals(".")) {
                segments.addLast(s);
            }
        }
        return "/" + String.join("/", segments);
    }

    private static @Nullable String rawQuery(ServerRequest req) {
        String raw = req.query().rawValue();
        return raw == null || raw.isEmpty() ? null : raw;
    }

    /**
     * The query for the audit line: the values of the operations' own parameters ({@link #LOGGED}), only the name
     * of any other (it may carry a secret: {@code ?access_token=...}).
     */
    private static String loggedQuery(ServerRequest req) {
        if (rawQuery(req) == null) {
            return "";
        }
        StringJoiner j = new StringJoiner("&", "?", "");
        try {
            for (String name : new TreeSet<>(req.query().names())) {
                for (String value : req.query().all(name)) {
                    j.add(LOGGED.contains(name) ? name + "=" + value : name + "=(not logged)");
                }
            }
        } catch (RuntimeException e) {
            return "?(a query that could not be read; not logged)";
        }
        return j.toString();
    }

    private static int intParam(String s) throws FenceOperations.Refused {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "limit must be a whole number, was '" + s + "'");
        }
    }
}
