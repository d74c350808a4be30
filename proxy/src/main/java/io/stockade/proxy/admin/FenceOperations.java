package io.stockade.proxy.admin;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.io.Writer;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.StringJoiner;

import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.problem.ProblemType;

/**
 * The fence-state operations, shared by the {@code fence} command and the admin endpoints: each takes plain
 * arguments and answers JSON. None can lower a token (see {@link FenceAdmin}).
 * <p>
 * Export format, one JSON object per line: first every floor {@code {"kind":"floor","prefix":"p/","token":9}},
 * then every scope {@code {"kind":"scope","scope":"p/a","token":7}}. Versions (upstream ETags) are not exported:
 * an imported scope's version is unknown and the next writer reads it afresh. Import applies each line with
 * {@link FenceAdmin#raiseFloor} or {@link FenceAdmin#raise}: {@code max(existing, imported)}.
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

    private final FenceAdmin admin;

    public FenceOperations(FenceAdmin admin) {
        this.admin = admin;
    }

    /** A scope's own token, the highest floor covering it and the effective highest (what a writer must reach). */
    public String show(String scope) throws StoreUnavailableException, Refused {
        requireText(scope, "scope");
        Optional<FenceAdmin.ScopeEntry> entry = admin.scope(scope);
        long floor = FenceAdmin.floorOf(admin.floors(), scope);
        if (entry.isEmpty() && floor < 0) {
            throw new Refused(ProblemType.UNKNOWN_SCOPE, "no token was ever accepted for scope '" + scope
                    + "' and no floor covers it");
        }
        long token = entry.map(FenceAdmin.ScopeEntry::token).orElse(-1L);
        return "{\"scope\":" + JsonWriter.quote(scope)
                + ",\"token\":" + (entry.isPresent() ? token : "null")
                + ",\"version\":" + JsonWriter.quote(entry.map(FenceAdmin.ScopeEntry::version).orElse(null))
                + ",\"floor\":" + (floor < 0 ? "null" : floor)
                + ",\"effective\":" + Math.max(token, floor) + "}";
    }

    public String list(String prefix, int limit) throws StoreUnavailableException, Refused {
        if (limit < 1 || limit > MAX_LIST) {
            throw new Refused(ProblemType.BAD_REQUEST, "limit must be 1.." + MAX_LIST + ", was " + limit);
        }
        List<FenceAdmin.ScopeEntry> scopes = admin.scopes(prefix == null ? "" : prefix, limit);
        StringJoiner j = new StringJoiner(",", "[", "]");
        for (FenceAdmin.ScopeEntry e : scopes) {
            j.add("{\"scope\":" + JsonWriter.quote(e.scope()) + ",\"token\":" + e.token() + ",\"activity\":"
                    + e.activity() + "}");
        }
        return "{\"orderedByActivity\":" + admin.listsByActivity() + ",\"scopes\":" + j + "}";
    }

    public String floors() throws StoreUnavailableException {
        StringJoiner j = new StringJoiner(",", "[", "]");
        for (FenceAdmin.Floor f : admin.floors()) {
            j.add(floorJson(f.prefix(), f.token()));
        }
        return "{\"floors\":" + j + "}";
    }

    /** Writes every floor, then every scope, one JSON line each; answers the number of lines. */
    public long export(Writer out) throws StoreUnavailableException, IOException {
        long[] n = {0};
        for (FenceAdmin.Floor f : admin.floors()) {
            out.write("{\"kind\":\"floor\",\"prefix\":" + JsonWriter.quote(f.prefix()) + ",\"token\":" + f.token()
                    + "}\n");
            n[0]++;
        }
        try {
            admin.forEachScope(e -> {
                try {
                    out.write("{\"kind\":\"scope\",\"scope\":" + JsonWriter.quote(e.scope()) + ",\"token\":" + e.token()
                            + "}\n");
                    n[0]++;
                } catch (IOException io) {
                    throw new UncheckedIOException(io);
                }
            });
        } catch (UncheckedIOException e) {
            throw e.getCause();
        }
        out.flush();
        return n[0];
    }

    /**
     * Applies an export: each line raises a floor or a scope to at least its token. Stops at the first bad line
     * (lines before it are applied: each is safe on its own).
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
            Map<String, Object> o;
            try {
                o = FlatJson.parse(line);
            } catch (IllegalArgumentException e) {
                throw new Refused(ProblemType.BAD_REQUEST, "line " + lines + ": " + e.getMessage()
                        + " (applied " + raised + " raises before it)");
            }
            long token = token(o.get("token"), "line " + lines + ": ");
            Object kind = o.get("kind");
            long after;
            if ("floor".equals(kind) && o.get("prefix") instanceof String p) {
                after = admin.raiseFloor(p, token);
            } else if ("scope".equals(kind) && o.get("scope") instanceof String s && !s.isEmpty()) {
                after = admin.raise(s, token);
            } else {
                throw new Refused(ProblemType.BAD_REQUEST, "line " + lines + ": expected"
                        + " {\"kind\":\"floor\",\"prefix\":..."
                        + "} or {\"kind\":\"scope\",\"scope\":...} with a token");
            }
            if (after > token) {
                kept++;
            } else {
                raised++;
            }
        }
        return "{\"lines\":" + lines + ",\"raised\":" + raised + ",\"keptHigher\":" + kept + "}";
    }

    /** Raises one scope to at least {@code token}. */
    public String raiseScope(String scope, long token) throws StoreUnavailableException, Refused {
        requireText(scope, "scope");
        long after = admin.raise(scope, checkToken(token));
        return "{\"scope\":" + JsonWriter.quote(scope) + ",\"requested\":" + token + ",\"token\":" + after
                + ",\"raised\":" + (after == token) + "}";
    }

    /** Raises the floor of a prefix to at least {@code token}; applies to scopes that do not exist yet too. */
    public String raiseFloor(String prefix, long token) throws StoreUnavailableException, Refused {
        if (prefix == null) {
            throw new Refused(ProblemType.BAD_REQUEST, "prefix is required (\"\" covers every scope)");
        }
        long after = admin.raiseFloor(prefix, checkToken(token));
        return "{\"prefix\":" + JsonWriter.quote(prefix) + ",\"requested\":" + token + ",\"floor\":" + after
                + ",\"raised\":" + (after == token) + "}";
    }

    /** Retires a scope that a floor at or above its token covers; refuses (409) any other. */
    public String retire(String scope) throws StoreUnavailableException, Refused {
        requireText(scope, "scope");
        return switch (admin.retire(scope)) {
            case RETIRED -> "{\"scope\":" + JsonWriter.quote(scope) + ",\"retired\":true}";
            case NOT_FOUND -> throw new Refused(ProblemType.UNKNOWN_SCOPE, "scope '" + scope + "' is not stored");
            case NOT_COVERED -> throw new Refused(ProblemType.SCOPE_NOT_COVERED, "scope '" + scope + "' is not covered "
                    + "by a prefix floor at or above its token; removing it would let lower tokens in. Raise a "
                    + "floor over it first (raise --prefix P --token N with N >= its token)");
        };
    }

    static long token(Object value, String where) throws Refused {
        if (value instanceof Long l && l >= 0) {
            return l;
        }
        throw new Refused(ProblemType.BAD_REQUEST, where + "token must be a whole number 0.." + Long.MAX_VALUE);
    }

    private static long checkToken(long token) throws Refused {
        if (token < 0) {
            throw new Refused(ProblemType.BAD_REQUEST, "token must be 0.." + Long.MAX_VALUE);
        }
        return token;
    }

    private static void requireText(String value, String what) throws Refused {
        if (value == null || value.isEmpty()) {
            throw new Refused(ProblemType.BAD_REQUEST, what + " is required");
        }
    }

    private static String floorJson(String prefix, long token) {
        return "{\"prefix\":" + JsonWriter.quote(prefix) + ",\"token\":" + token + "}";
    }
}
