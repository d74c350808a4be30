package io.stockade.policy;

import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import org.jspecify.annotations.Nullable;

/**
 * A loaded, validated policy file: where the server listens, where fence state lives, and the policies.
 * Immutable. Obtain one with {@link io.stockade.policy.yaml.PolicyLoader}.
 *
 * @param source   the file it was read from (for messages), or {@code null} when built in code
 * @param server   listener settings
 * @param store    the fence store
 * @param policies the policies, in file order; of those that match a request, one begins with the most literal
 *                 segments and serves it ({@link #route})
 * @param admin    the admin endpoints, or {@code null} when they are off
 * @param sql      the PostgreSQL listener and its fenced tables, or {@code null} when there is none
 */
public record StockadeConfig(@Nullable Path source, ServerConfig server, StoreConfig store, List<Policy> policies,
                             @Nullable AdminConfig admin, @Nullable SqlConfig sql) {

    public StockadeConfig {
        Objects.requireNonNull(server, "server");
        Objects.requireNonNull(store, "store");
        policies = List.copyOf(policies);
    }

    /** A configuration without a PostgreSQL listener. */
    public StockadeConfig(@Nullable Path source, ServerConfig server, StoreConfig store, List<Policy> policies,
                          @Nullable AdminConfig admin) {
        this(source, server, store, policies, admin, null);
    }

    /** A configuration without admin endpoints. */
    public StockadeConfig(@Nullable Path source, ServerConfig server, StoreConfig store, List<Policy> policies) {
        this(source, server, store, policies, null);
    }

    /**
     * The policy that handles a request, with the path variables it bound: of the policies that match it, the one
     * whose path template begins with the most literal segments ({@link PathTemplate#literalPrefix}). The loader
     * refuses two policies that can match one request with literal beginnings of one length, so that one is
     * unique: both beginnings are the request's first segments, so of one length they are the same.
     */
    public Optional<Route> route(String method, RequestTarget target) {
        Route best = null;
        for (Policy policy : policies) {
            if (!policy.match().matchesMethod(method)) {
                continue;
            }
            Optional<Map<String, String>> vars = policy.match().path().match(target);
            if (vars.isPresent() && (best == null || policy.match().path().literalPrefix()
                    > best.policy().match().path().literalPrefix())) {
                best = new Route(policy, vars.get(), target);
            }
        }
        return Optional.ofNullable(best);
    }

    /**
     * The policy a refused target was most likely meant for, only to answer the refusal in the shape its clients
     * understand (an S3 client gets S3 XML): the raw path split at {@code /}, empty segments dropped, each segment
     * percent-decoded leniently. Never used to route a request.
     */
    public Optional<Policy> policyForRefusal(String method, String rawPath) {
        if (rawPath == null || !rawPath.startsWith("/")) {
            return Optional.empty();
        }
        List<String> segments = new ArrayList<>();
        for (String raw : rawPath.substring(1).split("/", -1)) {
            if (!raw.isEmpty()) {
                String decoded;
                try {
                    decoded = URLDecoder.decode(raw.replace("+", "%2B"),
                            StandardCharsets.UTF_8);
                } catch (IllegalArgumentException e) {
                    decoded = raw;
                }
                segments.add(decoded);
            }
        }
        Policy best = null;
        for (Policy policy : policies) {
            if (policy.match().matchesMethod(method) && policy.match().path().match(segments).isPresent()
                    && (best == null || policy.match().path().literalPrefix() > best.match().path().literalPrefix())) {
                best = policy;
            }
        }
        return Optional.ofNullable(best);
    }

    /**
     * {@link #route(String, RequestTarget)} for a path with no query; empty when {@link RequestTarget} refuses it or
     * it ends with '/'.
     */
    public Optional<Route> route(String method, String path) {
        return RequestTarget.of(path).filter(t -> !t.trailingSlash()).flatMap(target -> route(method, target));
    }

    /** A copy with another listener port (the {@code --port} flag). */
    public StockadeConfig withPort(int port) {
        return new StockadeConfig(source, server.withPort(port), store, policies, admin, sql);
    }

    /** A copy with this management listener (a reload keeps the one the process started with). */
    public StockadeConfig withManagement(ServerConfig.Management management) {
        return new StockadeConfig(source, server.withManagement(management), store, policies, admin, sql);
    }

    /** A copy whose management listener is on another port (the command line's {@code --management-port}). */
    public StockadeConfig withManagementPort(int port) {
        return new StockadeConfig(source, server.withManagementPort(port), store, policies, admin, sql);
    }
}
