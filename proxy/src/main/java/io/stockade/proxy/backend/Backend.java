package io.stockade.proxy.backend;

import java.time.Duration;
import java.util.List;
import java.util.Optional;

import io.stockade.policy.Route;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.token.FencingToken;

import io.helidon.http.HeaderNames;

/**
 * Where a policy's requests go. One implementation per backend type, each in its own package.
 * <p>
 * The backend turns each request into one {@link Plan} ({@link #plan}) from a closed table of what it understands;
 * the engine ({@code io.stockade.proxy.pipeline.FencePipeline}) carries the plan out: it forwards a
 * {@link Plan.Forward}, answers a {@link Plan.Refuse}, and for a {@link Plan.Write} parses nothing more, asks the
 * fence the plan's {@link Keeper} names and calls the write only with an admitted token. A backend never decides
 * whether a token is stale on its own, except where its storage keeps the fence ({@link Keeper.InStorage}).
 */
public interface Backend extends AutoCloseable {

    /**
     * Reads the request as this backend's storage would and decides what to do with it, before anything moves:
     * nothing may reach the storage here, and no fence question is asked. A request outside the backend's closed
     * table of methods, sub-resources, parameters and headers is a {@link Plan.Refuse}.
     * <p>
     * The exchange's scope is the policy's scope template filled from the path variables
     * ({@link Route#scope()}); the plan names the scope the request really has ({@link Plan#scope()}).
     */
    Plan plan(Exchange exchange);

    /**
     * The token of a request, read from the policy's header ({@code Fencing-Token}); a helper for {@link #plan}.
     */
    static FencingToken.Parsed headerToken(Exchange exchange) {
        String header = exchange.fencing().header();
        return FencingToken.parse(header, exchange.request().headers().all(HeaderNames.create(header), List::of));
    }

    /**
     * Whether this backend takes a request path that ends with {@code /} as naming another resource than the same
     * path without it. Most HTTP servers take {@code /a/} and {@code /a} for one resource (or redirect), so the
     * default is no, and the engine refuses such a path (400) before any fence question. S3, whose keys are exact
     * bytes ({@code folder/} is a key of its own), says yes.
     */
    default boolean takesTrailingSlash() {
        return false;
    }

    /**
     * Sends a refusal (stale, missing or malformed token, store unavailable, quarantine, a plan's refusal) in the
     * shape this backend's clients understand. The default is the RFC 9457 problem itself; a backend whose clients
     * expect another shape (S3's XML errors) overrides it, keeping the status and the meaning.
     */
    default void refuse(Exchange exchange, Problem problem) {
        problem.send(exchange.response());
    }

    /**
     * How long a write whose outcome is unknown may still take to land at the storage. The engine quarantines a
     * scope for this long after an unknown outcome of a {@link Keeper.Serialized} write, and keeps this backend's
     * serialized scopes closed for this long after start (a crash may have left writes in flight). Zero for a
     * backend with no serialized writes.
     */
    default Duration settle() {
        return Duration.ZERO;
    }

    /**
     * Whether a request this backend sent, fenced or not, may still land at the storage: one that may have reached
     * it got no answer (a timeout, a reset, an interrupted read) since the backend opened. A clean stop
     * ({@code CleanShutdown}) requires none; only a backend with a {@link #settle()} needs to tell.
     */
    default boolean leftOutcomesUnknown() {
        return false;
    }

    /**
     * Whether this backend's writes ask the proxy's fence store: a {@link Keeper.Serialized} or
     * {@link Keeper.Conditional} write admits its token there. A backend whose every write is fenced by its own
     * storage ({@link Keeper.InStorage}: the postgres backend, the atomic S3 class) says no, and its policy's
     * readiness ({@code /health/ready/<policy>}, {@code stockade_policy_up}) does not follow the store: with the etcd
     * store down, such a policy still writes, so it is not reported down. The default is yes.
     */
    default boolean needsFenceStore() {
        return true;
    }

    /**
     * For {@code /health/ready}: why the storage that keeps this backend's fence ({@link Keeper.InStorage}) cannot
     * be reached now, asked within the backend's own timeout; empty when it can, or when the backend keeps no
     * fence of its own or cannot tell without a write (the default).
     */
    default Optional<String> unreachable() {
        return Optional.empty();
    }

    /**
     * The fence-state operations (the admin API's show, list, raise, retire) on the fence this backend's storage
     * keeps ({@link FencePlace.Database}), over the backend's own connections; empty for a backend whose fence the
     * proxy's store keeps, or that keeps none the proxy can reach (the default).
     */
    default Optional<FenceAdmin> ownFenceAdmin() {
        return Optional.empty();
    }

    /**
     * At start, in the background: one WARN line naming the storage when it cannot be reached now. The proxy
     * starts all the same (the storage may come up later); the default checks nothing.
     *
     * @param policy the name of the policy this backend serves, for the log line
     */
    default void checkAtStart(String policy) {
    }

    /**
     * At load (start or reload), before serving: what the storage itself says is wrong with the policy's
     * definitions, each naming its field under the backend ({@code statements.PUT[0] ('name'): ...}): a postgres
     * statement that names a column the table does not have. Empty when all is well, and when the storage cannot be
     * asked now ({@link #checkAtStart} warns about that; the load goes on). Any entry fails the load.
     */
    default List<String> definitionErrors() {
        return List.of();
    }

    @Override
    void close();
}
