package io.stockade.proxy.pipeline;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

import io.stockade.policy.Policy;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.listener.Durations;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.problem.ProblemType;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * A policy's limits ({@code policies[i].limits}), checked by the pipeline once the policy is known and before the
 * token is read, so a request over a limit never raises a fence and never reaches a backend: header bytes (431),
 * a declared body length (413), requests in flight on one scope (503). The body's size and arrival time while it
 * streams are bounded by the {@link BodyBounds} handed to the backend.
 */
final class Limits {
    /** Requests in flight per policy and scope; an entry exists only while its count is above zero. */
    private final ConcurrentHashMap<String, Integer> inFlight = new ConcurrentHashMap<>();
    private final LongSupplier nanoTime;

    Limits(LongSupplier nanoTime) {
        this.nanoTime = nanoTime;
    }

    /** The refusal of a request whose header lines or declared body are over the policy's limits, if any. */
    static Optional<Problem> refusal(Policy policy, ServerRequest req) {
        Policy.Limits limits = policy.limits();
        if (limits.maxHeaderBytes() != Policy.Limits.UNLIMITED) {
            long bytes = headerBytes(req);
            if (bytes > limits.maxHeaderBytes()) {
                return Optional.of(Problem.of(ProblemType.HEADERS_TOO_LARGE, "the header lines take " + bytes
                        + " bytes, more than policy '" + policy.name()
                                        + "' allows (max-header-bytes " + limits.maxHeaderBytes()
                                        + "); nothing was forwarded")
                        .with("policy", policy.name()).with("maxHeaderBytes", limits.maxHeaderBytes()));
            }
        }
        if (limits.maxBodyBytes() != Policy.Limits.UNLIMITED && req.headers().contains(HeaderNames.CONTENT_LENGTH)) {
            long length = req.headers().contentLength().orElse(0L);
            if (length > limits.maxBodyBytes()) {
                return Optional.of(Problem.of(ProblemType.BODY_TOO_LARGE, "Content-Length " + length + " is more than"
                        + " policy '" + policy.name() + "' allows "
                                        + "(max-body-bytes " + limits.maxBodyBytes() + "); nothing was forwarded and "
                                        + "no fence was raised")
                        .with("policy", policy.name()).with("maxBodyBytes", limits.maxBodyBytes())
                        .header("Connection", "close"));
            }
        }
        return Optional.empty();
    }

    /** The header block's size as sent: each line's name, {@code ": "}, value and CRLF. */
    static long headerBytes(ServerRequest req) {
        long bytes = 0;
        for (Header header : req.headers()) {
            for (String value : header.allValues()) {
                bytes += header.name().length() + 2 + value.length() + 2;
            }
        }
        return bytes;
    }

    /**
     * The bounds a backend reads this request's body within; its body-timeout counts from the first read of the
     * body.
     *
     * @param readTimeout the listener's bound on one blocked read
     */
    BodyBounds bodyBounds(Policy policy, Duration readTimeout) {
        Policy.Limits limits = policy.limits();
        return new BodyBounds(limits.maxBodyBytes(), Durations.nanos(limits.bodyTimeout()),
                Durations.nanos(readTimeout), nanoTime);
    }

    /**
     * Takes a place among the requests in flight on a scope.
     *
     * @return the place, to be closed when the request is done (on every path), or null when the scope is full
     */
    @Nullable Permit enter(Policy policy, String scope) {
        int max = policy.limits().maxConcurrentPerScope();
        if (max == Policy.Limits.UNLIMITED_COUNT) {
            return Permit.NONE;
        }
        String key = policy.name() + '\0' + scope;
        boolean[] admitted = {false};
        inFlight.compute(key, (k, n) -> {
            int now = n == null ? 0 : n;
            if (now >= max) {
                return n;
            }
            admitted[0] = true;
            return now + 1;
        });
        return admitted[0] ? new Permit(this, key) : null;
    }

    /** The refusal of a request that found its scope full. */
    static Problem busy(Policy policy, String scope) {
        return Problem.of(ProblemType.SCOPE_BUSY, "policy '" + policy.name() + "' allows "
                        + policy.limits().maxConcurrentPerScope() + " requests in flight on one scope"
                        + " (max-concurrent-per-scope) and that many are; nothing was forwarded, retry later")
                .with("policy", policy.name()).with("scope", scope)
                .with("maxConcurrentPerScope", policy.limits().maxConcurrentPerScope()).retryAfter(1);
    }

    /** The refusal of a request whose scope is longer than the policy takes. */
    static Problem scopeTooLong(Policy policy, int bytes) {
        return Problem.of(ProblemType.SCOPE_TOO_LONG, "the request's scope is " + bytes + " bytes of UTF-8, more than"
                        + " policy '" + policy.name() + "' takes (max-scope-bytes " + policy.limits().maxScopeBytes()
                        + "); nothing was forwarded and no fence was raised")
                .with("maxScopeBytes", policy.limits().maxScopeBytes());
    }

    /** The UTF-8 length of a string, without encoding it. */
    static int utf8Length(String s) {
        int bytes = 0;
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (c < 0x80) {
                bytes++;
            } else if (c < 0x800) {
                bytes += 2;
            } else if (Character.isHighSurrogate(c) && i + 1 < s.length()
                    && Character.isLowSurrogate(s.charAt(i + 1))) {
                bytes += 4;
                i++;
            } else {
                bytes += 3;
            }
        }
        return bytes;
    }

    /**
     * A scope as an answer or a log line names it: whole up to 256 characters; a longer one (a client's huge name,
     * never echoed back whole) as its first 48 characters and how many more there were.
     */
    static String shortened(String scope) {
        return scope.length() <= 256 ? scope : scope.substring(0, 48) + "...(" + (scope.length() - 48)
                + " more characters)";
    }

    private void leave(String key) {
        inFlight.computeIfPresent(key, (k, n) -> n <= 1 ? null : n - 1);
    }

    /** Requests in flight on a scope of a policy (tests check that none leaks). */
    int inFlight(String policy, String scope) {
        return inFlight.getOrDefault(policy + '\0' + scope, 0);
    }

    /** Scopes with requests in flight now, over all policies. */
    int scopesInFlight() {
        return inFlight.size();
    }

    /** A place among a scope's requests in flight; closing it twice gives it back once. */
    static final class Permit implements AutoCloseable {
        static final Permit NONE = new Permit(null, ""); // no owner: closing it gives nothing back
        private final @Nullable Limits owner;
        private final String key;
        private boolean closed;

        private Permit(@Nullable Limits owner, String key) {
            this.owner = owner;
            this.key = key;
        }

        @Override
        public void close() {
            if (owner != null && !closed) {
                closed = true;
                owner.leave(key);
            }
        }
    }
}
