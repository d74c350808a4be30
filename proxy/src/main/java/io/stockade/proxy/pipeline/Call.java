package io.stockade.proxy.pipeline;

import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.LongSupplier;
import java.util.logging.Level;
import java.util.logging.Logger;

import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.log.Decision;
import io.stockade.proxy.log.DecisionLog;
import io.stockade.proxy.metrics.ProxyMetrics;
import io.stockade.proxy.metrics.ProxyMetrics.Outcome;
import io.stockade.proxy.problem.Problem;

import io.helidon.webserver.CloseConnectionException;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * One request on its way through the pipeline: what the stages found so far, how a refusal is answered (in the
 * backend's shape once a policy matched), and the bookkeeping {@link #close} does once, whatever happened (the
 * {@code finally} of the request path: places given back, a body cut off while it streamed, metrics and the
 * decision log).
 */
final class Call implements AutoCloseable {
    // the request path's one logger name, as operators configure it (the pipeline's parts log as one)
    private static final Logger LOG = Logger.getLogger(FencePipeline.class.getName());

    final ServerRequest req;
    final ServerResponse res;
    final String method;
    final String rawPath;
    final Decision decision;
    // Set stage by stage (FencePipeline.receive and match): null until then, and still null in refuse and close
    // for a request refused before it got so far. The stages after match read them through target(), backend()
    // and exchange().
    @Nullable RequestTarget target;
    @Nullable Backend backend;
    @Nullable Exchange exchange;
    @Nullable AtomicInteger inFlight;
    final List<Limits.Permit> permits = new ArrayList<>(1);
    private final ProxyMetrics metrics;
    private final LongSupplier nanoTime;
    /** The answer broke off after it started ({@link #brokeOff}). */
    private boolean brokeOff;

    Call(ServerRequest req, ServerResponse res, ProxyMetrics metrics, LongSupplier nanoTime) {
        this.req = req;
        this.res = res;
        this.metrics = metrics;
        this.nanoTime = nanoTime;
        this.method = req.prologue().method().text();
        this.rawPath = req.path().rawPath();
        this.decision = new Decision(nanoTime.getAsLong(), method, rawPath);
    }

    /** The canonical target, once {@code receive} parsed it. */
    RequestTarget target() {
        return Objects.requireNonNull(target, "set by receive before any later stage");
    }

    /** The matched policy's backend, once {@code match} found it. */
    Backend backend() {
        return Objects.requireNonNull(backend, "set by match before any later stage");
    }

    /** The exchange, once {@code match} built it. */
    Exchange exchange() {
        return Objects.requireNonNull(exchange, "set by match before any later stage");
    }

    Policy policy() {
        return exchange().route().policy();
    }

    String scope() {
        return exchange().scope();
    }

    /**
     * Answers a refusal: in the backend's shape once a policy matched, else as a problem. A client gone before
     * its answer (a body that broke off) is logged with the refusal it would have got.
     */
    void refuse(Outcome outcome, Problem problem) {
        decision.outcome(outcome, problem.detail());
        if (res.isSent()) {
            return;
        }
        try {
            if (backend != null && exchange != null) {
                Problem named = exchange.route().target() == null ? problem
                        : problem.withDefault("policy", policy().name())
                        .withDefault("scope", Limits.shortened(scope()));
                backend.refuse(exchange, named);
            } else {
                problem.send(res);
            }
        } catch (CloseConnectionException e) {
            throw e;
        } catch (UncheckedIOException e) {
            LOG.log(Level.FINE, "the client went away before its refusal was sent", e);
        }
    }

    /**
     * A backend's answer broke off after it started: whatever the storage did stands (an admitted write it answered
     * 2xx is accepted), but the client got no complete answer, so the log's status is 0, not the status line the
     * proxy had begun, which the client may never have read.
     */
    void brokeOff() {
        brokeOff = true;
        decision.outcome(decision.outcome() == null ? Outcome.ACCEPTED : decision.outcome(), "the storage's answer"
                + " broke off midway; the connection was closed and the client got no complete answer");
    }

    @Override
    public void close() {
        permits.forEach(Limits.Permit::close);
        if (inFlight != null) {
            inFlight.decrementAndGet();
        }
        // limits: a body cut off while it streamed (too large, too slow, malformed) was abandoned by the backend
        if (exchange != null) {
            BodyBounds.BodyRefused refused = exchange.bounds().refused();
            if (refused != null) {
                bodyRefused(decision, backend(), exchange, refused); // match set the backend with the exchange
            }
        }
        // metrics + log: once per request. No outcome means an exception is on its way to the server's error
        // handler (a 500): count it as such rather than hide it behind another.
        Outcome outcome = decision.outcome();
        boolean escaped = outcome == null;
        if (outcome == null) {
            outcome = Outcome.ERROR;
            decision.outcome(outcome, "an exception escaped the pipeline; see the log");
        }
        int status = brokeOff ? 0 : escaped && !res.isSent() ? 500 : res.status().code();
        decision.status(status);
        metrics.decision(decision.policy(), decision.backend(), outcome);
        if (status == 502 || status == 504) {
            metrics.upstreamError(decision.policy(), status == 504 ? "timeout" : "unreachable");
        }
        DecisionLog.write(decision, nanoTime.getAsLong());
    }

/**
 * A body that went over a bound while it streamed: the backend abandoned the write (nothing was committed); the
 * client gets the bound's answer unless the backend's answer has already started.
 */
private static void bodyRefused(Decision decision, Backend backend, Exchange exchange,
                                BodyBounds.BodyRefused refused) {
    if (decision.outcome() == Outcome.UNKNOWN_OUTCOME) {
        return; // bytes of it had reached the storage: answered as unknown, which the bound does not undo
    }
    Problem problem = refused.problem().with("policy", exchange.route().policy().name())
            .with("scope", exchange.scope());
    decision.outcome(bodyOutcome(problem.status()), problem.detail());
    if (!exchange.response().isSent()) {
        try {
            backend.refuse(exchange, problem);
        } catch (RuntimeException e) {
            LOG.log(Level.FINE, "could not answer a cut-off body", e);
        }
    }
}

/** The outcome of a body refused while it streamed: too slow (408), malformed (400), else too large. */
static Outcome bodyOutcome(int status) {
    return switch (status) {
        case 408 -> Outcome.TIMED_OUT;
        case 400 -> Outcome.BAD_REQUEST;
        default -> Outcome.TOO_LARGE;
    };
}
}
