package io.stockade.proxy.log;

import java.time.Instant;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.proxy.json.JsonWriter;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;

import org.jspecify.annotations.Nullable;

/**
 * One JSON line per decision (logger {@code stockade.decision}), and an audit line for every refusal and every
 * admin action (logger {@code stockade.audit}). Lines are written by {@link JsonLineHandler} to standard output,
 * one JSON object each, so a log shipper can take them as they are.
 * <p>
 * Never logged: the query string (it may carry presigned signatures; an admin line shows only the values of its
 * operations' own parameters, and the names of any other), request bodies, credentials, the admin token. The holder
 * ({@code Fencing-Holder} header) is cut to 128 characters.
 */
public final class DecisionLog {
    public static final String DECISIONS = "stockade.decision";
    public static final String AUDIT = "stockade.audit";
    private static final Logger DECISION = Logger.getLogger(DECISIONS);
    private static final Logger AUDIT_LOG = Logger.getLogger(AUDIT);
    private static final int MAX_HOLDER = 128;
    /** Every outcome but a request that went through (or that observe mode judged admissible). */
    private static final Set<Outcome> REFUSALS = EnumSet.complementOf(EnumSet.of(Outcome.ACCEPTED, Outcome.UNFENCED,
            Outcome.ALLOWED_WITHOUT_TOKEN, Outcome.OBSERVED));

    private DecisionLog() {
    }

    /** The two loggers, for installing handlers on them. */
    static List<Logger> loggers() {
        return List.of(DECISION, AUDIT_LOG);
    }

    /**
     * One line per request: the decision line; or, when the per-request lines are off
     * ({@code stockade.decision.level=OFF}), a refusal's audit line, so that refusals are never lost and never
     * written twice.
     */
    public static void write(Decision d, long nowNanos) {
        if (DECISION.isLoggable(Level.INFO)) {
            DECISION.info(json("decision", d, nowNanos));
        } else if (REFUSALS.contains(d.outcome) && AUDIT_LOG.isLoggable(Level.INFO)) {
            AUDIT_LOG.info(json("refusal", d, nowNanos));
        }
    }

    /** An audit line for an admin action. {@code detail} must hold no secret. */
    public static void admin(String action, String subject, String outcome, String detail) {
        AUDIT_LOG.info("{\"ts\":" + JsonWriter.quote(Instant.now().toString()) + ",\"event\":\"admin\",\"action\":"
                + JsonWriter.quote(action) + ",\"subject\":" + JsonWriter.quote(subject) + ",\"outcome\":"
                + JsonWriter.quote(outcome)
                + ",\"detail\":" + JsonWriter.quote(detail) + "}");
    }

    static String json(String event, Decision d, long nowNanos) {
        StringBuilder b = new StringBuilder(256);
        b.append("{\"ts\":").append(JsonWriter.quote(Instant.now().toString()))
                .append(",\"event\":\"").append(event).append('"')
                .append(",\"policy\":").append(JsonWriter.quote(d.policy))
                .append(",\"backend\":").append(JsonWriter.quote(d.backend))
                .append(",\"method\":").append(JsonWriter.quote(d.method))
                .append(",\"path\":").append(JsonWriter.quote(d.path))
                .append(",\"scope\":").append(JsonWriter.quote(d.scope))
                .append(",\"token\":").append(d.token)
                .append(",\"highest\":").append(d.highest)
                .append(",\"holder\":").append(JsonWriter.quote(holder(d.holder)))
                .append(",\"outcome\":").append(JsonWriter.quote(d.outcome == null ? null : d.outcome.label()))
                .append(",\"status\":").append(d.status)
                .append(",\"latency_ms\":");
        appendMillis(b, nowNanos - d.startNanos);
        if (d.reason != null) {
            b.append(",\"reason\":").append(JsonWriter.quote(d.reason));
        }
        return b.append('}').toString();
    }

    /** Milliseconds with three decimals, without java.util.Formatter (it is slow on the request path). */
    static void appendMillis(StringBuilder b, long nanos) {
        long micros = Math.max(0, nanos) / 1000;
        long fraction = micros % 1000;
        b.append(micros / 1000).append('.');
        if (fraction < 100) {
            b.append('0');
        }
        if (fraction < 10) {
            b.append('0');
        }
        b.append(fraction);
    }

    private static @Nullable String holder(@Nullable String holder) {
        if (holder == null) {
            return null;
        }
        return holder.length() > MAX_HOLDER ? holder.substring(0, MAX_HOLDER) : holder;
    }
}
