package io.stockade.proxy.log;

import io.stockade.proxy.metrics.ProxyMetrics.Outcome;

import org.jspecify.annotations.Nullable;

/**
 * What the proxy decided about one request, filled in stage by stage as the request goes down the pipeline, and
 * written once at the end as a metric and a log line. Confined to the request's thread.
 */
public final class Decision {
    /** Policy label when no policy matched. */
    public static final String NONE = "-";

    final long startNanos;
    final String method;
    final String path;
    String policy = NONE;
    String backend = NONE;
    @Nullable String scope;
    @Nullable Long token;
    @Nullable Long highest;
    @Nullable String holder;
    @Nullable Outcome outcome;
    @Nullable String reason;
    int status;

    public Decision(long startNanos, String method, String path) {
        this.startNanos = startNanos;
        this.method = method;
        this.path = path;
    }

    public Decision policy(String policy, String backend, String scope) {
        this.policy = policy;
        this.backend = backend;
        this.scope = scope;
        return this;
    }

    /** The scope the backend's plan found (S3's bucket and key, a form upload's key). */
    public Decision scope(String scope) {
        this.scope = scope;
        return this;
    }

    public Decision token(long token) {
        this.token = token;
        return this;
    }

    public Decision highest(long highest) {
        this.highest = highest;
        return this;
    }

    /** The {@code Fencing-Holder} header, or null when the request has none. */
    public Decision holder(@Nullable String holder) {
        this.holder = holder;
        return this;
    }

    /** The outcome, and for a refusal (or an observed would-be refusal) why; null when there is nothing to say. */
    public Decision outcome(Outcome outcome, @Nullable String reason) {
        this.outcome = outcome;
        this.reason = reason;
        return this;
    }

    public Decision status(int status) {
        this.status = status;
        return this;
    }

    public String policy() {
        return policy;
    }

    public String backend() {
        return backend;
    }

    /** The outcome, or null while none is set. */
    public @Nullable Outcome outcome() {
        return outcome;
    }
}
