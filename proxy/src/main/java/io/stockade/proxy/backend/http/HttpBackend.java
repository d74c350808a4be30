package io.stockade.proxy.backend.http;

import java.io.IOException;
import java.time.Duration;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.logging.Level;
import java.util.logging.Logger;
import javax.net.ssl.SSLContext;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.policy.RequestTarget;
import io.stockade.proxy.backend.Admission;
import io.stockade.proxy.backend.Backend;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.Plan;
import io.stockade.proxy.backend.StorageAnswer;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.backend.http.Relay.PreconditionFailed;
import io.stockade.proxy.backend.http.Relay.Sent;
import io.stockade.proxy.fence.FenceState;
import io.stockade.proxy.fence.StoreUnavailableException;
import io.stockade.proxy.log.WarnLimiter;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;
import io.stockade.proxy.tls.ClientTlsFiles;
import io.stockade.proxy.upstream.UpstreamClient;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderName;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * A plain HTTP upstream, reached through the proxy's own pooled keep-alive client ({@link UpstreamClient}).
 * Bodies stream both ways ({@link Relay}; the headers that cross, {@link ForwardedHeaders}). The upstream request
 * target is the route's canonical target ({@code RequestTarget.upstreamTarget}) after the URL's base path, sent
 * byte for byte: the resource the upstream acts on is the one the scope was derived from.
 * <p>
 * Two classes, chosen by the policy's {@code conditional}:
 * <ul>
 *     <li>{@code none} &mdash; <em>serialized</em>: the engine holds the scope while {@link #forward} forwards the
 *     request as it is. A failure after the request left is an unknown outcome.</li>
 *     <li>{@code if-match} &mdash; <em>atomic</em>: the write carries {@code If-Match} with the ETag recorded
 *     under the admitted token (or {@code If-None-Match: *} when the resource is known absent), so the upstream
 *     itself refuses a write based on a version some other write has replaced. When no ETag is recorded, one is
 *     read with HEAD and recorded first, by compare-and-set on the token, so a version can only be adopted by the
 *     scope's current highest token. A 412 is re-checked against the store: a higher token means stale (409);
 *     otherwise the resource changed under an equal token and nothing was written: a request without a body is
 *     sent once more on the version read afresh, one whose body streamed (the proxy does not replay it) is told
 *     to retry (503 {@code slow-down}, {@code Retry-After}).</li>
 * </ul>
 */
public final class HttpBackend implements Backend {
    private static final Logger LOG = Logger.getLogger(HttpBackend.class.getName());
    private static final HeaderName DEPTH = HeaderNames.create("Depth");
    private static final HeaderName OVERWRITE = HeaderNames.create("Overwrite");

    /** The methods every policy forwards as reads, without a token (unless it fences them). */
    private static final List<String> READS = List.of("GET", "HEAD");

    private final BackendConfig.Http config;
    private final UpstreamClient client;
    private final String host;
    /** The path of the upstream URL without a trailing slash (empty for none): every target starts with it. */
    private final String basePath;
    /** The {@code Host} header of every upstream request. */
    private final String authority;
    private final Relay relay;
    /** Upstream failures: one WARN line a second per policy, however many requests fail alike. */
    private final WarnLimiter warnings = new WarnLimiter(System::nanoTime, WarnLimiter.INTERVAL_NANOS);

    private HttpBackend(BackendConfig.Http config, UpstreamClient client) {
        this.config = config;
        this.client = client;
        String path = config.url().getRawPath();
        this.basePath = path == null || path.equals("/") ? "" : path.replaceAll("/+$", "");
        this.host = config.url().getHost();
        this.authority = client.authority(host.startsWith("[") ? host.substring(1, host.length() - 1) : host);
        this.relay = new Relay(config, client, host, basePath);
    }

    /**
     * The backend of {@code config}, with its own upstream client (the files of its {@code tls} read now).
     *
     * @throws IOException naming the file when a file of the policy's {@code tls} cannot be read or does not parse
     */
    public static HttpBackend open(BackendConfig.Http config) throws IOException {
        SSLContext ssl = config.tls() == null ? null
                : ClientTlsFiles.read(config.tls(), "backend " + config.url() + " tls").sslContext();
        return new HttpBackend(config, UpstreamClient.create(config.url(), ssl, config.connectTimeout(),
                config.maxConnections()));
    }

    @Override
    public Duration settle() {
        // A conditional write that lands late cannot overwrite a newer one; only the serialized class needs it.
        return config.conditional() == BackendConfig.Conditional.NONE ? config.settle() : Duration.ZERO;
    }

    /**
     * The http backend's closed table, read in this order:
     * <ol>
     *     <li>the method: {@code GET} and {@code HEAD}, the methods the policy names in {@code match.methods}, and
     *     the methods it fences; any other is 405 with {@code Allow} (a WebDAV {@code COPY} the policy never named
     *     is not relayed);</li>
     *     <li>headers that would make the storage run another method or reach another target than the request
     *     line's ({@link RefusedHeaders}): 400 {@code refused-header};</li>
     *     <li>{@code COPY} and {@code MOVE} write a second resource, the one their {@code Destination} names: it
     *     must be a path of the same policy and not the request's own ({@link Destination}, else 400
     *     {@code bad-destination}); a fenced one is a write of both scopes, serialized (the {@code if-match} class
     *     cannot make it conditional on the destination's version: 501), and the upstream gets the destination as
     *     its own URL of the canonical path. {@code Depth} must be {@code 0} or {@code infinity} and
     *     {@code Overwrite} {@code T} or {@code F} when present. A {@code Destination} on any other method is 400;
     *     </li>
     *     <li>a fenced method is a write of the request's scope (serialized, or conditional on {@code If-Match}
     *     with {@code conditional: if-match}); any other method in the table is forwarded without a token.</li>
     * </ol>
     */
    @Override
    public Plan plan(Exchange exchange) {
        ServerRequest req = exchange.request();
        String method = req.prologue().method().text();
        Policy policy = exchange.route().policy();
        String scope = exchange.scope();
        boolean fenced = exchange.fencing().fencesMethod(method);
        if (!fenced && !READS.contains(method) && !policy.match().methods().contains(method)) {
            String allowed = String.join(", ", allowed(policy, exchange.fencing()));
            return new Plan.Refuse(scope, Problem.of(ProblemType.METHOD_NOT_ALLOWED, "policy '" + policy.name()
                    + "' forwards " + allowed + "; " + method + " is not among them, so it is not sent to the"
                    + " upstream (name it in match.methods, or in fence.methods to fence it)")
                    .header("Allow", allowed));
        }
        Optional<Problem> refused = RefusedHeaders.refusal(req.headers(), target(exchange).query());
        if (refused.isPresent()) {
            return new Plan.Refuse(scope, refused.get());
        }
        List<String> destination = req.headers().all(ForwardedHeaders.DESTINATION, List::of);
        if (Policy.DESTINATION_METHODS.contains(method)) {
            return twoResources(exchange, method, fenced, destination);
        }
        if (!destination.isEmpty()) {
            return new Plan.Refuse(scope, Problem.of(ProblemType.BAD_DESTINATION, "a Destination header is taken on"
                    + " COPY and MOVE only; a " + method + " with one is refused, since the upstream might act on"
                    + " it: send the request without Destination"));
        }
        if (fenced) {
            Keeper keeper = config.conditional() == BackendConfig.Conditional.IF_MATCH
                    ? new Keeper.Conditional(this::conditionalWrite)
                    : new Keeper.Serialized((ex, admission) -> serializedWrite(ex, null));
            return exchange.fencing().plan(method, List.of(scope), Backend.headerToken(exchange), keeper,
                    ex -> forward(ex, null));
        }
        return new Plan.Forward(scope, READS.contains(method) ? Plan.Unfenced.READ : Plan.Unfenced.NOT_FENCED,
                ex -> forward(ex, null));
    }

    /**
     * A {@code COPY} or {@code MOVE}: the request's resource and its destination, both fenced when the policy
     * fences the method; the upstream gets the destination as its own URL.
     */
    private Plan twoResources(Exchange exchange, String method, boolean fenced, List<String> values) {
        ServerRequest req = exchange.request();
        Policy policy = exchange.route().policy();
        String scope = exchange.scope();
        Optional<Problem> badHeader = depthAndOverwrite(req, method);
        if (badHeader.isPresent()) {
            return new Plan.Refuse(scope, badHeader.get());
        }
        Destination.Found found;
        switch (Destination.read(values, req.authority(), req.isSecure(), policy)) {
            case Destination.Refused refused -> {
                return new Plan.Refuse(scope, Problem.of(ProblemType.BAD_DESTINATION, refused.reason()
                        + "; nothing was sent to the upstream"));
            }
            case Destination.Found f -> found = f;
        }
        if (found.target().segments().equals(target(exchange).segments())) {
            // RFC 4918 answers 403; nginx's dav module deletes the file, fails the copy and answers 500
            return new Plan.Refuse(scope, Problem.of(ProblemType.BAD_DESTINATION, "the Destination is the request's"
                    + " own resource: a " + method + " onto itself is refused (WebDAV servers differ on it, and one "
                    + "deletes the resource); nothing was sent to the upstream"));
        }
        String upstreamDestination = config.url().getScheme() + "://" + authority
                + found.target().upstreamTarget(basePath);
        if (!fenced) {
            return new Plan.Forward(scope, Plan.Unfenced.NOT_FENCED, ex -> forward(ex, upstreamDestination));
        }
        if (config.conditional() == BackendConfig.Conditional.IF_MATCH) {
            return new Plan.Refuse(scope, Problem.of(ProblemType.NOT_SUPPORTED, "a fenced " + method + " writes its"
                    + " Destination too, and conditional: if-match cannot make that write conditional on the"
                    + " destination's version; fence " + method + " with conditional: none"));
        }
        List<String> scopes = found.scope().equals(scope) ? List.of(scope) : List.of(scope, found.scope());
        return exchange.fencing().plan(method, scopes, Backend.headerToken(exchange),
                new Keeper.Serialized((ex, admission) -> serializedWrite(ex, upstreamDestination)),
                ex -> forward(ex, upstreamDestination));
    }

    /** The request's canonical target: every route but a refusal's has one, and a refusal is never planned. */
    static RequestTarget target(Exchange exchange) {
        return Objects.requireNonNull(exchange.route().target(), "a planned request's route has a target");
    }

    /**
     * {@code Depth} and {@code Overwrite} of a COPY or MOVE, when present, as RFC 4918 defines them: {@code 0} or
     * {@code infinity}, {@code T} or {@code F}, and not named by {@code Connection} (dropped as hop-by-hop, the
     * upstream would apply its own default). Either way the write stays inside the two scopes (a collection's
     * members are covered by the policy's scope rules, checked at load).
     */
    private static Optional<Problem> depthAndOverwrite(ServerRequest req, String method) {
        List<String> depth = req.headers().all(DEPTH, List::of);
        if (!depth.isEmpty() && !(depth.size() == 1 && (depth.getFirst().equals("0")
                || depth.getFirst().equalsIgnoreCase("infinity")))) {
            return Optional.of(Problem.of(ProblemType.REFUSED_HEADER, "Depth " + depth + " is refused on " + method
                    + ": send one Depth: 0 or Depth: infinity, or none (RFC 4918 sections 9.8.3 and 9.9.2)")
                    .with("header", "Depth"));
        }
        Set<String> hopByHop = HopByHop.of(req.headers());
        for (String name : List.of("Overwrite", "Depth")) {
            if (hopByHop.contains(name.toLowerCase(Locale.ROOT))) {
                // the proxy would read it and drop it as hop-by-hop: the upstream would apply its default instead
                return Optional.of(Problem.of(ProblemType.REFUSED_HEADER, "the Connection header names " + name
                        + ": a proxy does not pass such a header on, so the upstream would run the " + method
                        + " with its default " + name + " (T, infinity) rather than the one sent; send " + name
                        + " without naming it in Connection").with("header", "Connection"));
            }
        }
        List<String> overwrite = req.headers().all(OVERWRITE, List::of);
        if (!overwrite.isEmpty() && !(overwrite.size() == 1 && (overwrite.getFirst().equals("T")
                || overwrite.getFirst().equals("F")))) {
            return Optional.of(Problem.of(ProblemType.REFUSED_HEADER, "Overwrite " + overwrite + " is refused on "
                    + method + ": send one Overwrite: T or Overwrite: F, or none (RFC 4918 section 10.6)")
                    .with("header", "Overwrite"));
        }
        return Optional.empty();
    }

    /** The methods a policy forwards: the reads, then the methods it names or fences in text order. */
    private static Set<String> allowed(Policy policy, Fencing fencing) {
        Set<String> allowed = new LinkedHashSet<>(READS);
        Set<String> named = new TreeSet<>(policy.match().methods());
        named.addAll(fencing.methods());
        allowed.addAll(named);
        return allowed;
    }

    /** @param destination the upstream's URL of a COPY's or MOVE's destination, else null */
    private WriteResult forward(Exchange exchange, @Nullable String destination) {
        return switch (relay.send(exchange, null, null, destination, false)) {
            case Sent.Relayed relayed -> new WriteResult.Answered(relayed.status());
            case Sent.Failed failed -> answerFailure(exchange, failed);
            case Sent.BodyFailed failed -> bodyFailed(exchange, failed);
            case Sent.StorageFailed failed -> StorageAnswer.failed(failed.status(), "");
        };
    }

    private WriteResult serializedWrite(Exchange exchange, @Nullable String destination) {
        return switch (relay.send(exchange, null, null, destination, true)) {
            case Sent.Relayed relayed -> new WriteResult.Answered(relayed.status());
            case Sent.BodyFailed failed -> bodyFailed(exchange, failed);
            case Sent.StorageFailed failed -> StorageAnswer.failed(failed.status(), "");
            case Sent.Failed failed when failed.reachedUpstream() -> new WriteResult.Unknown(failed.reason());
            case Sent.Failed failed -> answerFailure(exchange, failed);
        };
    }

    /**
     * A write conditional on the version recorded under the admitted token. A 412 is read against the store: a
     * higher token means stale; else the resource changed under this token (a write outside the proxy, or a
     * version this token's previous write could not record) and nothing was written: a request without a body is
     * sent once more on the version read afresh (the answer is certain either way), one whose body streamed is
     * answered 503 {@code slow-down} with {@code Retry-After}, which clients retry (a 409 read as "fenced" made
     * them give up).
     */
    private WriteResult conditionalWrite(Exchange exchange, Admission admission) {
        String version = admission.previous().version();
        boolean replayable = !hasBody(exchange.request());
        for (int attempt = 0; ; attempt++) {
            try {
                if (version == null) {
                    Optional<String> read = headVersion(exchange);
                    if (read.isEmpty()) {
                        return answer(Problem.of(ProblemType.UPSTREAM_UNREACHABLE, "could not read the current"
                                + " version of the resource (HEAD) before the conditional write"));
                    }
                    version = read.get();
                    if (!admission.store().recordVersion(admission.scope(), admission.token(), version)) {
                        return recheck(admission).orElseGet(() -> changed(admission));
                    }
                }
                Sent sent = relay.send(exchange, admission, version, null, true);
                if (sent instanceof Sent.BodyFailed failed) {
                    return bodyFailed(exchange, failed);
                }
                if (sent instanceof Sent.StorageFailed failed) {
                    return StorageAnswer.failed(failed.status(), "");
                }
                if (sent instanceof Sent.Failed failed) {
                    // A conditional write that arrives late cannot do harm: its If-Match no longer matches once a
                    // newer write has landed. Unknown, but no quarantine needed; the engine decides.
                    return failed.reachedUpstream() ? new WriteResult.Unknown(failed.reason())
                            : answerFailure(exchange, failed);
                }
                // A 412 never gets here: Relay.send throws PreconditionFailed for it, before relaying anything.
                return new WriteResult.Answered(((Sent.Relayed) sent).status());
            } catch (PreconditionFailed e) {
                Optional<WriteResult> stale = recheck(admission);
                if (stale.isPresent()) {
                    return stale.get();
                }
                if (!replayable || attempt > 0) {
                    return changed(admission);
                }
                version = null; // read afresh, then sent once more
            } catch (StoreUnavailableException e) {
                return answer(Problem.of(ProblemType.STORE_UNAVAILABLE, "the upstream version could not be"
                        + " recorded: " + e.getMessage()).with("scope", admission.scope()));
            }
        }
    }

    /** Whether a request carries a body (a length above 0, or a chunked one). */
    private static boolean hasBody(ServerRequest req) {
        return req.headers().contains(HeaderNames.TRANSFER_ENCODING) || req.headers().contentLength().orElse(0) > 0;
    }

    /**
     * The upstream refused our condition (412): someone else's write landed. A higher token in the store means
     * stale; a store that cannot be read, unavailable. Empty: no higher token, the version forgotten so that the
     * next attempt reads it afresh.
     */
    private static Optional<WriteResult> recheck(Admission admission) {
        try {
            Optional<FenceState> now = admission.store().get(admission.scope());
            if (now.isPresent() && now.get().token() > admission.token()) {
                return Optional.of(new WriteResult.Stale(now.get().token()));
            }
            // Same token, concurrent writes of one holder, or a write outside the proxy: forget the version so
            // the next attempt reads it afresh.
            admission.store().recordVersion(admission.scope(), admission.token(), null);
            return Optional.empty();
        } catch (StoreUnavailableException e) {
            return Optional.of(answer(Problem.of(ProblemType.STORE_UNAVAILABLE,
                    Objects.requireNonNullElse(e.getMessage(), "the fence store is unavailable"))
                    .with("scope", admission.scope())));
        }
    }

    /** The resource changed under this token and the write cannot be sent again: nothing written, retry. */
    private static WriteResult changed(Admission admission) {
        return answer(Problem.of(ProblemType.SLOW_DOWN, "the resource changed between the fence check and the"
                + " write (the upstream refused If-Match: 412) and no higher token is recorded; nothing was written"
                + " by this request: send it again").with("scope", admission.scope())
                .with("token", admission.token()).retryAfter(1));
    }

    private Optional<String> headVersion(Exchange exchange) {
        String target = target(exchange).upstreamTarget(basePath);
        try (UpstreamResponse response = client.request("HEAD", host, target).send(config.timeout())) {
            int status = response.status();
            if (status == 404 || status == 410) {
                return Optional.of(FenceState.ABSENT);
            }
            if (status / 100 == 2) {
                String etag = response.first("ETag");
                return Optional.of(etag == null ? FenceState.ABSENT : etag);
            }
            LOG.warning(() -> "HEAD " + target + " answered " + status);
            return Optional.empty();
        } catch (IOException | RuntimeException e) {
            LOG.log(Level.WARNING, "HEAD " + target + " failed", e);
            return Optional.empty();
        }
    }

    /**
     * The client's body failed. Once bytes of the request reached the upstream, the outcome is unknown (504, and a
     * serialized scope is quarantined): the upstream may have kept a partial body. Before that, nothing was
     * written: the pipeline answers a bound's refusal; any other failure is a 400.
     */
    private static WriteResult bodyFailed(Exchange exchange, Sent.BodyFailed failed) {
        if (failed.reached() && !exchange.response().isSent()) {
            String why = failed.refused() != null ? failed.refused().reason()
                    : "the request body ended early or could not be read (" + failed.cause() + ")";
            return new WriteResult.Unknown(why + "; bytes of it had already been sent to the upstream, which may"
                    + " have kept them (an upstream that writes as it reads keeps a partial body)");
        }
        if (failed.refused() != null) {
            return new WriteResult.Answered(failed.refused().problem().status());
        }
        LOG.log(Level.FINE, "the client's body failed; the upstream request was abandoned", failed.cause());
        if (exchange.response().isSent()) {
            return new WriteResult.Answered(exchange.response().status().code());
        }
        return answer(Problem.of(ProblemType.INCOMPLETE_BODY, "the request body ended early or could not"
                + " be read; the upstream request was abandoned before any byte of it was sent, nothing was written")
                .header("Connection", "close"));
    }

    @Override
    public boolean leftOutcomesUnknown() {
        return relay.leftOutcomesUnknown();
    }

    @Override
    public void checkAtStart(String policy) {
        Thread.ofVirtual().name("upstream-check-" + policy).start(() -> client.probe(host).ifPresent(e ->
                LOG.warning("policy '" + policy + "': at start, " + e.getMessage()
                        + "; its requests answer 502 until it can be reached")));
    }

    /**
     * A 502 or 504 answered here (an unfenced forward, or a write that never reached the upstream), with one WARN
     * line naming the upstream. An unknown outcome is the pipeline's to answer and log.
     */
    private WriteResult answerFailure(Exchange exchange, Sent.Failed failed) {
        String policy = exchange.route().policy().name();
        long leftOut = warnings.admit(policy);
        if (leftOut >= 0) {
            LOG.warning("policy '" + policy + "': " + exchange.request().prologue().method().text() + " "
                    + target(exchange).rawPath() + ": " + failed.reason() + WarnLimiter.leftOut(leftOut));
        }
        return answer(Problem.of(failed.timedOut() ? ProblemType.UPSTREAM_TIMEOUT
                : ProblemType.UPSTREAM_UNREACHABLE, failed.reason()));
    }

    private static WriteResult answer(Problem problem) {
        return new WriteResult.Refused(problem);
    }

    @Override
    public void close() {
        client.close();
    }
}
