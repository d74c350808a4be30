package io.stockade.policy;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

import org.jspecify.annotations.Nullable;

/**
 * One fencing policy: which requests it takes, how their scope and token are found, what it enforces,
 * and where the writes go.
 *
 * @param name          unique name, used in metrics, logs and problem bodies
 * @param match         which requests this policy handles
 * @param scope         the fence scope template, filled from the match's path variables
 * @param fence         how the token is read and checked
 * @param backend       where requests are sent
 * @param limits        bounds on the size, duration and concurrency of the policy's requests
 */
public record Policy(String name, Match match, ScopeTemplate scope, Fence fence, BackendConfig backend,
                     Limits limits, Readiness readiness) {

    public Policy {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(match, "match");
        Objects.requireNonNull(scope, "scope");
        Objects.requireNonNull(fence, "fence");
        Objects.requireNonNull(backend, "backend");
        Objects.requireNonNull(limits, "limits");
        Objects.requireNonNull(readiness, "readiness");
    }

    /** A policy whose health is reported, not gated on ({@link Readiness#REPORT}). */
    public Policy(String name, Match match, ScopeTemplate scope, Fence fence, BackendConfig backend, Limits limits) {
        this(name, match, scope, fence, backend, limits, Readiness.REPORT);
    }

    /** A policy with the default limits. */
    public Policy(String name, Match match, ScopeTemplate scope, Fence fence, BackendConfig backend) {
        this(name, match, scope, fence, backend, Limits.defaults());
    }

    /**
     * What a policy's own dependencies (its token verifier, the database of a postgres backend) mean to the
     * replica's {@code /health/ready}. The fence store, which every policy needs, always gates it.
     */
    public enum Readiness {
        /**
         * Reported (the default): the policy's health is in {@code /health/ready}'s body and at
         * {@code /health/ready/<policy>}; while it is down its writes answer 503 and the replica stays ready for the
         * policies that work.
         */
        REPORT,
        /** Gated on: while the policy's dependencies are down the whole replica is unready. */
        GATE
    }

    /**
     * The methods that write a second resource, the one their {@code Destination} header names (RFC 4918): a
     * backend fences both scopes or refuses them.
     */
    public static final Set<String> DESTINATION_METHODS = Set.of("COPY", "MOVE");

    /**
     * Whether a request with this method must carry a valid token (before the mode is applied). Methods are
     * case-sensitive: {@code put} is not {@code PUT} (the listener hands the pipeline upper-cased methods).
     */
    public boolean fences(String method) {
        return fence.methods().contains(method);
    }

    /** Whether this policy names {@code method} in {@code match.methods} or {@code fence.methods}. */
    public boolean names(String method) {
        return match.methods().contains(method) || fence.methods().contains(method);
    }

    /**
     * Which requests a policy handles.
     *
     * @param path    the path template, e.g. {@code /files/{path...}}
     * @param methods the HTTP methods it takes (upper-case method tokens); empty means every method
     */
    public record Match(PathTemplate path, Set<String> methods) {
        public Match {
            Objects.requireNonNull(path, "path");
            methods = Set.copyOf(methods);
        }

        /** Whether it takes a request with this method: exactly as spelled (methods are case-sensitive). */
        public boolean matchesMethod(String method) {
            return methods.isEmpty() || methods.contains(method);
        }
    }

    /**
     * How the token of a request is read and judged.
     *
     * @param header  the header carrying the token (default {@code Fencing-Token})
     * @param methods the methods that are fenced (default PUT, POST, PATCH, DELETE, or every method match.methods
     *                names that is not safe); others pass unfenced
     * @param missing what a fenced request without a token gets
     * @param equal   what a token equal to the highest gets
     * @param mode    enforce, observe (forward anyway, count what would be rejected) or off
     * @param maxAdvance the largest jump a token may make over a scope's highest ({@link #UNLIMITED}: any); a
     *                larger jump is refused, never ratcheted, so one inflated token cannot lock honest holders out
     * @param verify  how a token is checked to be genuine before it may raise the fence, or {@code null}: every
     *                token is taken as sent
     * @param firstTokenMax the largest token a scope's first write may carry ({@link #UNLIMITED}: any); by default
     *                {@code maxAdvance} (a new scope is judged as if its highest were 0), or {@link #UNLIMITED} with
     *                a {@code verify} (the lock service vouches for every first token)
     */
    public record Fence(String header, Set<String> methods, MissingToken missing, EqualToken equal, Mode mode,
                        long maxAdvance, @Nullable TokenVerification verify, long firstTokenMax) {
        public static final String DEFAULT_HEADER = "Fencing-Token";
        public static final Set<String> DEFAULT_METHODS = Set.of("PUT", "POST", "PATCH", "DELETE");
        /** No limit on how far a token may jump. */
        public static final long UNLIMITED = Long.MAX_VALUE;

        public Fence {
            Objects.requireNonNull(header, "header");
            methods = Set.copyOf(methods);
            Objects.requireNonNull(missing, "missing");
            Objects.requireNonNull(equal, "equal");
            Objects.requireNonNull(mode, "mode");
            if (maxAdvance < 1) {
                throw new IllegalArgumentException("maxAdvance must be at least 1, was " + maxAdvance);
            }
            if (firstTokenMax < 0) {
                throw new IllegalArgumentException("firstTokenMax must be at least 0, was " + firstTokenMax);
            }
        }

        /** A fence whose first-token bound is the default one ({@link #defaultFirstTokenMax}). */
        public Fence(String header, Set<String> methods, MissingToken missing, EqualToken equal, Mode mode,
                     long maxAdvance, @Nullable TokenVerification verify) {
            this(header, methods, missing, equal, mode, maxAdvance, verify, defaultFirstTokenMax(maxAdvance, verify));
        }

        /**
         * The first-token bound a policy gets when it names none: with a {@code verify}, none (the lock service
         * vouches for the first token as for every other); else {@code maxAdvance}: a new scope is judged as if its
         * highest token were 0, so a policy that bounds jumps bounds the first one too (and one that bounds no jump
         * leaves every scope open to one anyway).
         */
        public static long defaultFirstTokenMax(long maxAdvance, @Nullable TokenVerification verify) {
            return verify != null ? UNLIMITED : maxAdvance;
        }

        /** A fence with no limit on token jumps. */
        public Fence(String header, Set<String> methods, MissingToken missing, EqualToken equal, Mode mode) {
            this(header, methods, missing, equal, mode, UNLIMITED);
        }

        /** A fence that takes every token as sent (no {@code verify}). */
        public Fence(String header, Set<String> methods, MissingToken missing, EqualToken equal, Mode mode,
                     long maxAdvance) {
            this(header, methods, missing, equal, mode, maxAdvance, null);
        }

        /**
         * Whether {@code token} goes further than this fence allows: over a scope's {@code highest}, by more than
         * {@code maxAdvance}; on a scope with no highest yet ({@code highest < 0}), above {@code firstTokenMax}. The
         * one rule every backend calls, wherever it keeps the fence (the pipeline on the proxy's store, the s3
         * atomic class on an object's metadata, the postgres backend on its table or column).
         */
        public boolean tooFar(long token, long highest) {
            if (highest < 0) {
                return token > firstTokenMax;
            }
            return maxAdvance != UNLIMITED && token > highest && token - highest > maxAdvance;
        }

        /** Whether {@link #tooFar} can hold for {@code token} at all (else the highest need not be read for it). */
        public boolean mayBeTooFar(long token) {
            return maxAdvance != UNLIMITED || token > firstTokenMax;
        }

        public static Fence defaults() {
            return new Fence(DEFAULT_HEADER, DEFAULT_METHODS, MissingToken.REJECT, EqualToken.ACCEPT, Mode.ENFORCE);
        }
    }

    /**
     * Bounds on one policy's requests, checked by the proxy once the policy is known (the listener's own bounds,
     * {@link ServerConfig.Limits}, apply before that, to every request). A request over a bound is refused before
     * its token is looked at, so it never raises a fence; a body found too large or too slow only while it streams
     * is cut off before the backend can commit it.
     *
     * @param maxHeaderBytes        the most bytes the request's header lines may take ({@link #UNLIMITED}: only the
     *                              listener's bound); more is refused with 431
     * @param maxBodyBytes          the largest body ({@link #UNLIMITED}: any); a larger declared length is refused
     *                              with 413 before anything is forwarded, a streamed body is cut off at the bound
     * @param bodyTimeout           the longest a body may take to arrive, counted from the start of handling, so a
     *                              trickled body cannot hold a scope for ever; past it 408
     * @param maxConcurrentPerScope the most requests of this policy in flight on one scope ({@link #UNLIMITED_COUNT}:
     *                              any); more get 503 with {@code Retry-After}
     * @param maxScopeBytes         the longest scope (UTF-8 bytes) a request may have; a longer one is refused with 414
     *                              before any fence question, so no client can make a store keep huge names
     * @param maxScopes             the most scopes of this policy the memory store may hold ({@link #UNLIMITED}: its
     *                              default share), so that no client of it can fill the store for the others
     */
    public record Limits(long maxHeaderBytes, long maxBodyBytes, Duration bodyTimeout, int maxConcurrentPerScope,
                         int maxScopeBytes, long maxScopes) {
        /** No bound on a size. */
        public static final long UNLIMITED = Long.MAX_VALUE;
        /** No bound on a count. */
        public static final int UNLIMITED_COUNT = Integer.MAX_VALUE;
        /** Long enough for a large honest upload on a slow link; short enough that a trickler lets go. */
        public static final Duration DEFAULT_BODY_TIMEOUT = Duration.ofMinutes(5);
        /** Long enough for a file path (Linux takes 4095 bytes) and an S3 scope (a 1024-byte key and its bucket). */
        public static final int DEFAULT_MAX_SCOPE_BYTES = 4096;

        public Limits {
            Objects.requireNonNull(bodyTimeout, "bodyTimeout");
            if (maxHeaderBytes < 1 || maxBodyBytes < 1 || maxConcurrentPerScope < 1 || !bodyTimeout.isPositive()
                    || maxScopeBytes < 1 || maxScopes < 1) {
                throw new IllegalArgumentException("limits must be positive: " + maxHeaderBytes + ", " + maxBodyBytes
                        + ", " + bodyTimeout + ", " + maxConcurrentPerScope + ", " + maxScopeBytes);
            }
        }

        /** Limits with the default share of the store's scopes. */
        public Limits(long maxHeaderBytes, long maxBodyBytes, Duration bodyTimeout, int maxConcurrentPerScope,
                      int maxScopeBytes) {
            this(maxHeaderBytes, maxBodyBytes, bodyTimeout, maxConcurrentPerScope, maxScopeBytes, UNLIMITED);
        }

        /** Limits with the default bound on a scope's length. */
        public Limits(long maxHeaderBytes, long maxBodyBytes, Duration bodyTimeout, int maxConcurrentPerScope) {
            this(maxHeaderBytes, maxBodyBytes, bodyTimeout, maxConcurrentPerScope, DEFAULT_MAX_SCOPE_BYTES);
        }

        public static Limits defaults() {
            return new Limits(UNLIMITED, UNLIMITED, DEFAULT_BODY_TIMEOUT, UNLIMITED_COUNT, DEFAULT_MAX_SCOPE_BYTES,
                    UNLIMITED);
        }
    }

    /** What a fenced request without a token gets. */
    public enum MissingToken {
        /** 428 Precondition Required. */
        REJECT,
        /** Forwarded unfenced (the policy author accepts that tokenless writers are not fenced). */
        ALLOW
    }

    /** What a token equal to the highest gets. */
    public enum EqualToken {
        /** Accepted: the same holder keeps writing. */
        ACCEPT,
        /** Rejected: every write needs a strictly greater token. */
        REJECT
    }

    /** How strictly a policy is applied. */
    public enum Mode {
        /** Stale, missing and malformed tokens are refused. */
        ENFORCE,
        /**
         * Everything is forwarded; what would have been refused is counted and logged. The highest token is kept
         * as in enforce mode, so a later switch to enforce starts from the truth.
         */
        OBSERVE,
        /** No fencing at all: a plain reverse proxy route. */
        OFF
    }
}
