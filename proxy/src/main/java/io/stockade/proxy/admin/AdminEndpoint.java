package io.stockade.proxy.admin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.Map;

import io.stockade.policy.AdminConfig;
import io.stockade.proxy.fence.FenceAdmin;
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

/**
 * The admin endpoints under {@value #BASE}: fence-state operations over HTTP, JSON in and out, RFC 9457 problems
 * for errors, every call (allowed or not) audited in the log — never the token. Authenticated by
 * {@code Authorization: Bearer <token>} compared in constant time. See {@code docs/admin-api.md}.
 * <pre>
 *   GET  /admin/fences/scope?name=S              show
 *   GET  /admin/fences/scopes?prefix=P&amp;limit=N   list (most recently active first when the store can tell)
 *   GET  /admin/fences/floors                    prefix floors
 *   GET  /admin/fences/export                    JSON lines (application/x-ndjson)
 *   POST /admin/fences/import                    JSON lines; each raises, never lowers
 *   POST /admin/fences/raise    {"scope":S,"token":N} or {"prefix":P,"token":N}
 *   POST /admin/fences/retire   {"scope":S}
 * </pre>
 * Any other path passes on to the next handler (the pipeline).
 */
public final class AdminEndpoint implements Handler {
    public static final String BASE = "/admin/fences";
    /** The policy view and reload. */
    public static final String POLICIES = "/admin/policies";
    /** Largest JSON request body (import is streamed, not bounded by this). */
    private static final int MAX_BODY = 64 * 1024;

    private final byte[] token;
    private final FenceOperations ops;
    private final boolean available;
    private final PolicyReload reloader;

    private AdminEndpoint(byte[] token, FenceAdmin admin, PolicyReload reloader) {
        this.token = token;
        this.ops = admin == null ? null : new FenceOperations(admin);
        this.available = admin != null;
        this.reloader = reloader;
    }

    /**
     * @param admin    the store's operations, or {@code null} when the store has none (every call answers 501)
     * @param reloader the policies in force, and their reload
     * @throws IOException when the token file cannot be read or is empty
     */
    public static AdminEndpoint create(AdminConfig config, FenceAdmin admin, PolicyReload reloader) throws IOException {
        String t = config.token();
        if (config.tokenFile() != null) {
            t = SecretFiles.firstLine(config.tokenFile());
        }
        if (t == null || t.isEmpty()) {
            throw new IOException("admin token is empty" + (config.tokenFile() != null
                    ? " (first line of " + config.tokenFile() + ")" : ""));
        }
        return new AdminEndpoint(t.getBytes(StandardCharsets.UTF_8), admin, reloader);
    }

    @Override
    public void handle(ServerRequest req, ServerResponse res) {
        String path = req.path().path();
        boolean policies = path.equals(POLICIES) || path.startsWith(POLICIES + "/");
        if (!policies && !path.equals(BASE) && !path.startsWith(BASE + "/")) {
            res.next();
            return;
        }
        String method = req.prologue().method().text();
        String who = req.remotePeer().address().toString();
        String call = method + " " + path + (req.query().rawValue().isEmpty() ? "" : "?" + req.query().rawValue());
        if (!authorized(req)) {
            DecisionLog.admin(call, who, "401", "no or wrong bearer token");
            Problem.of(ProblemType.UNAUTHORIZED, "send Authorization: Bearer <admin token>")
                    .header("WWW-Authenticate", "Bearer realm=\"stockade-admin\"").send(res);
            return;
        }
        if (policies) {
            policies(req, res, method, path, call, who);
            return;
        }
        if (!available) {
            DecisionLog.admin(call, who, "501", "the store has no fence-state operations");
            Problem.of(ProblemType.NOT_SUPPORTED, "this store has no fence-state operations").send(res);
            return;
        }
        String op = path.substring(BASE.length());
        try {
            String answer;
            switch (method + " " + op) {
                case "GET /scope" -> answer = ops.show(req.query().first("name").orElse(null));
                case "GET /scopes" -> answer = ops.list(req.query().first("prefix").orElse(""),
                        intParam(req.query().first("limit").orElse("100")));
                case "GET /floors" -> answer = ops.floors();
                case "GET /export" -> {
                    StringWriter w = new StringWriter();
                    long lines = ops.export(w);
                    DecisionLog.admin(call, who, "200", lines + " lines");
                    res.header(HeaderNames.CONTENT_TYPE, "application/x-ndjson");
                    res.send(w.toString());
                    return;
                }
                case "POST /import" -> {
                    try (BufferedReader in = new BufferedReader(new InputStreamReader(req.content().inputStream(),
                            StandardCharsets.UTF_8))) {
                        answer = ops.importLines(in);
                    }
                }
                case "POST /raise" -> {
                    Map<String, Object> body = body(req);
                    long t = FenceOperations.token(body.get("token"), "");
                    if (body.get("scope") instanceof String s && !body.containsKey("prefix")) {
                        answer = ops.raiseScope(s, t);
                    } else if (body.get("prefix") instanceof String p && !body.containsKey("scope")) {
                        answer = ops.raiseFloor(p, t);
                    } else {
                        throw new FenceOperations.Refused(ProblemType.BAD_REQUEST,
                                "give exactly one of \"scope\" and \"prefix\", and a \"token\"");
                    }
                }
                case "POST /retire" -> answer = ops.retire(body(req).get("scope") instanceof String s ? s : null);
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
            DecisionLog.admin(call, who, "503", e.getMessage());
            Problem.of(ProblemType.STORE_UNAVAILABLE, e.getMessage()).retryAfter(1).send(res);
        } catch (IOException | RuntimeException e) {
            DecisionLog.admin(call, who, "400", String.valueOf(e));
            Problem.of(ProblemType.BAD_REQUEST, String.valueOf(e.getMessage())).send(res);
        }
    }

    /** {@code GET /admin/policies} (the policies in force, secrets redacted) and {@code POST .../reload}. */
    private void policies(ServerRequest req, ServerResponse res, String method, String path, String call,
                          String who) {
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

    private static Map<String, Object> body(ServerRequest req) throws FenceOperations.Refused, IOException {
        byte[] b = req.content().inputStream().readNBytes(MAX_BODY + 1);
        if (b.length > MAX_BODY) {
            throw new FenceOperations.Refused(ProblemType.BODY_TOO_LARGE, "request body over " + MAX_BODY + " bytes");
        }
        try {
            return FlatJson.parse(new String(b, StandardCharsets.UTF_8));
        } catch (IllegalArgumentException e) {
            throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "request body: " + e.getMessage());
        }
    }

    private static int intParam(String s) throws FenceOperations.Refused {
        try {
            return Integer.parseInt(s);
        } catch (NumberFormatException e) {
            throw new FenceOperations.Refused(ProblemType.BAD_REQUEST, "limit must be a whole number, was '" + s + "'");
        }
    }
}
