package io.stockade.proxy.problem;

/**
 * Every kind of refusal the proxy answers, in one place: its type (the last part of the problem's {@code type}
 * URI), its status and its title, the same for every occurrence. A problem+json answer and an S3 XML error are both
 * built from one of these ({@link Problem#of}); the S3 backend maps each type to its S3 error code in one
 * exhaustive switch. Every {@code 503} carries {@code Retry-After}.
 * <p>
 * {@code docs/problems.md} lists them for clients; {@code ProblemTypeTest} checks that the list and this enum agree.
 */
public enum ProblemType {
    // ---- the request itself (400-431): nothing was forwarded, no fence moved ----
    BAD_PATH(400, "bad-path", "Path refused"),
    BAD_REQUEST(400, "bad-request", "Bad request"),
    /** A header whose meaning to the storage the proxy does not take (a method override, a URL rewrite). */
    REFUSED_HEADER(400, "refused-header", "Header refused"),
    /** A request that names a second resource the proxy cannot fence as the policy's (WebDAV Destination). */
    BAD_DESTINATION(400, "bad-destination", "Destination refused"),
    /** A request whose query names an operation the backend does not know: never forwarded. */
    UNKNOWN_OPERATION(400, "unknown-operation", "Operation not understood"),
    MALFORMED_BODY(400, "malformed-body", "Malformed body"),
    INCOMPLETE_BODY(400, "incomplete-body", "Incomplete body"),
    BAD_PARAMETER(400, "bad-parameter", "Bad parameter"),
    MALFORMED_TOKEN(400, "malformed-token", "Malformed fencing token"),
    UNAUTHORIZED(401, "unauthorized", "Unauthorized"),
    /** A request the backend's own authentication refused (an S3 signature). */
    ACCESS_DENIED(403, "access-denied", "Access denied"),
    UNVERIFIED_TOKEN(403, "unverified-token", "Token not verified"),
    NOT_FOUND(404, "not-found", "Not found"),
    NO_POLICY(404, "no-policy", "No policy"),
    NO_SUCH_OPERATION(404, "no-such-operation", "No such operation"),
    UNKNOWN_SCOPE(404, "unknown-scope", "Unknown scope"),
    /** A policy reload that needs a restart (the listener, the store) or has no file to read; nothing changed. */
    RESTART_REQUIRED(409, "restart-required", "Restart required"),
    /** A policy reload of a file that does not load; the policies in force stay. */
    INVALID_POLICY_FILE(422, "invalid-policy-file", "Policy file invalid"),
    /** A policy reload whose new backend could not open; the policies in force stay. */
    BACKEND_UNAVAILABLE(503, "backend-unavailable", "Backend could not open"),
    METHOD_NOT_ALLOWED(405, "method-not-allowed", "Method not allowed"),
    BODY_TIMEOUT(408, "body-timeout", "Request body too slow"),
    STALE_TOKEN(409, "stale-token", "Stale fencing token"),
    NOT_A_FILE(409, "not-a-file", "Not a file"),
    UNIQUE_VIOLATION(409, "unique-violation", "Unique constraint violated"),
    SERIALIZATION_FAILURE(409, "serialization-failure", "Conflict with a concurrent transaction"),
    SCOPE_NOT_COVERED(409, "scope-not-covered", "Scope not covered"),
    LEASE_VALID(409, "lease-valid", "A valid lease holds the token"),
    FORCE_REQUIRED(409, "force-required", "Reset needs force"),
    SCOPE_CHANGED(409, "scope-changed", "Scope changed meanwhile"),
    /** The client's own precondition ({@code If-Match}, {@code If-None-Match}) did not hold. */
    PRECONDITION_FAILED(412, "precondition-failed", "Precondition failed"),
    BODY_TOO_LARGE(413, "body-too-large", "Request body too large"),
    PATH_TOO_LONG(414, "path-too-long", "Path too long"),
    REQUEST_LINE_TOO_LONG(414, "request-line-too-long", "Request line too long"),
    /** A scope longer than the policy's {@code max-scope-bytes}: refused before any store keeps its name. */
    SCOPE_TOO_LONG(414, "scope-too-long", "Scope too long"),
    TOKEN_TOO_FAR(422, "token-too-far", "Token jumps too far"),
    CONSTRAINT_VIOLATION(422, "constraint-violation", "Constraint violated"),
    MISSING_TOKEN(428, "missing-token", "Fencing token required"),
    HEADERS_TOO_LARGE(431, "headers-too-large", "Request headers too large"),
    // ---- the proxy or what stands behind it (500-505) ----
    INTERNAL_ERROR(500, "internal-error", "Internal error"),
    /** An operation the proxy cannot fence, or an operation it does not offer on this store or backend. */
    NOT_SUPPORTED(501, "not-supported", "Not supported"),
    UPSTREAM_UNREACHABLE(502, "upstream-unreachable", "Upstream unreachable"),
    STATEMENT_FAILED(502, "statement-failed", "Statement failed"),
    ANSWER_UNREADABLE(502, "answer-unreadable", "Answer unreadable"),
    /** The fence store, or the storage that keeps its own fence (a PostgreSQL table, an object's metadata). */
    STORE_UNAVAILABLE(503, "store-unavailable", "Fence store unavailable"),
    VERIFIER_UNAVAILABLE(503, "verifier-unavailable", "Token verifier unavailable"),
    DATABASE_UNAVAILABLE(503, "database-unavailable", "Database unavailable"),
    STORAGE_ERROR(503, "storage-error", "Storage error"),
    SCOPE_BUSY(503, "scope-busy", "Scope busy"),
    SCOPE_QUARANTINED(503, "scope-quarantined", "Scope quarantined"),
    /** The memory store holds as many scopes as it may; a write of a new scope waits for an operator. */
    SCOPE_LIMIT(503, "scope-limit", "Scope limit reached"),
    SHUTTING_DOWN(503, "shutting-down", "Shutting down"),
    /** A write that lost a race with another write of the same object at the storage; nothing was written. */
    SLOW_DOWN(503, "slow-down", "Retry the write"),
    UNKNOWN_OUTCOME(504, "unknown-outcome", "Outcome unknown"),
    UPSTREAM_TIMEOUT(504, "upstream-timeout", "Upstream timed out"),
    /** The database cancelled the statements (statement timeout): rolled back, nothing was written. */
    STATEMENT_TIMEOUT(503, "statement-timeout", "Statement timeout"),
    HTTP_VERSION_NOT_SUPPORTED(505, "http-version-not-supported", "HTTP version not supported");

    private final int status;
    private final String type;
    private final String title;

    ProblemType(int status, String type, String title) {
        this.status = status;
        this.type = type;
        this.title = title;
    }

    /** The HTTP status of this kind of refusal. */
    public int status() {
        return status;
    }

    /** The short kebab-case name: {@link Problem#TYPE_PREFIX} + this is the problem's {@code type}. */
    public String type() {
        return type;
    }

    /** The summary that is the same for every occurrence. */
    public String title() {
        return title;
    }

    /** Whether the client should retry after a while: every 503 says when ({@code Retry-After}). */
    public boolean retryable() {
        return status == 503;
    }
}
