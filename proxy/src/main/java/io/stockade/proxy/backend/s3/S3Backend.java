package io.stockade.proxy.backend.s3;

import java.time.Duration;
import java.util.logging.Logger;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.problem.Problem;

/**
 * The S3 backend: one per s3 policy, holding its class as a strategy ({@link S3Class}: {@link AtomicClass} or
 * {@link SerializedClass}, {@link S3Type#open} picks one). A request goes one way: {@link S3Admission} reads and
 * judges it, {@link S3Planner} makes its one plan, asking the class who keeps the fence, and the class writes it
 * through {@link Relay} to the store ({@link Upstream}); every refusal is answered as an S3 XML error
 * ({@link S3Refusals}).
 */
final class S3Backend implements Backend {
    private static final Logger LOG = Logger.getLogger(S3Backend.class.getName());

    private final Upstream upstream;
    private final S3Class cls;
    private final S3Planner planner;
    private final S3Refusals refusals;

    S3Backend(BackendConfig.S3 config) {
        this.upstream = new Upstream(config);
        S3Failures failures = new S3Failures(config.timeout());
        Multipart multipart = new Multipart(upstream, failures, config.secretKey());
        Relay relay = new Relay(upstream, multipart, failures);
        KeyScopes scopes = new KeyScopes(config);
        this.cls = config.atomic() ? new AtomicClass(config, upstream, relay, multipart, failures, scopes)
                : new SerializedClass(config, relay, multipart);
        S3Tokens tokens = new S3Tokens(config);
        this.planner = new S3Planner(config, new S3Admission(config, tokens, multipart), tokens, scopes, cls);
        this.refusals = new S3Refusals(config);
    }

    @Override
    public Plan plan(Exchange exchange) {
        return planner.plan(exchange);
    }

    /** S3 keys are exact bytes: {@code folder/} is a key of its own (a folder marker). */
    @Override
    public boolean takesTrailingSlash() {
        return true;
    }

    /** Every refusal as an S3 XML error ({@link S3Refusals}). */
    @Override
    public void refuse(Exchange exchange, Problem problem) {
        refusals.refuse(exchange, problem);
    }

    @Override
    public Duration settle() {
        return cls.settle();
    }

    @Override
    public boolean needsFenceStore() {
        return cls.needsFenceStore();
    }

    @Override
    public void checkAtStart(String policy) {
        Thread.ofVirtual().name("upstream-check-" + policy).start(() -> upstream.probe().ifPresent(e ->
                LOG.warning("policy '" + policy + "': at start, " + e.getMessage()
                        + "; its requests answer 502 or 503 until it can be reached")));
    }

    @Override
    public void close() {
        cls.close();
        upstream.close();
    }
}
