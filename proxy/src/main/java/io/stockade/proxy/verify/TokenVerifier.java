package io.stockade.proxy.verify;

import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import org.jspecify.annotations.Nullable;

/**
 * Is this token genuine? Asked by the pipeline between parsing a token and letting it advance the fence, for
 * policies with {@code fence.verify}. The fence trusts the number a writer sends; a verifier asks the party that
 * issued it (the lock service) or checks a signature only holders of a shared key can make, so that an invented
 * token ({@code Fencing-Token: 9223372036854775807}) cannot raise the fence and lock every honest holder out.
 * <p>
 * A verifier never throws for a bad claim or an unreachable lock service: every outcome is a {@link Verdict}.
 * Implementations are thread-safe; each kind lives in its own sub-package.
 */
public interface TokenVerifier extends AutoCloseable {

    /**
     * Judges one claim.
     *
     * @return {@link Genuine} (the write may go on), {@link Refused} (403, nothing forwarded, the fence untouched)
     *         or {@link Unavailable} (503 with {@code Retry-After}: fail closed, nothing forwarded)
     */
    Verdict verify(Claim claim);

    /**
     * Short name for logs and problem bodies: {@code hmac}, {@code etcd}, {@code postgres}, {@code kubernetes},
     * {@code redis}, {@code zookeeper}, {@code consul}, {@code dynamodb}.
     */
    String kind();

    /** Releases connections; verdicts asked after it are {@link Unavailable}. */
    @Override
    void close();

    /**
     * What a request claims.
     *
     * @param scope   the fence scope the policy rendered for the request
     * @param token   the parsed token
     * @param headers every value of a request header by name (empty list when absent), for verifiers that read
     *                more than the token (a signature)
     */
    record Claim(String scope, long token, Function<String, List<String>> headers) {
        public Claim {
            Objects.requireNonNull(scope, "scope");
            Objects.requireNonNull(headers, "headers");
        }
    }

    /** The answer about one claim. */
    sealed interface Verdict permits Genuine, Refused, Unavailable {
        /** The value of the {@code verdict} label of {@code stockade_token_verifications_total}. */
        String label();
    }

    /**
     * The token is genuine.
     *
     * @param remembered whether the verdict came from the cache (no lookup at the lock service)
     * @param sentNanos  when the lookup that found it genuine was sent, on {@link System#nanoTime()}
     * @param leftNanos  how long the holder's lease remained valid, counted from {@code sentNanos}, as the lock
     *                   service reported it (a lower bound: the lease cannot end sooner unless its holder gives it
     *                   up); {@link #UNKNOWN} when the lock service reports no remaining time
     */
    record Genuine(boolean remembered, long sentNanos, long leftNanos) implements Verdict {
        /** {@code leftNanos} of a lock service that reports no remaining time. */
        public static final long UNKNOWN = -1;

        /** A genuine verdict without a remaining time (a signature, a remembered verdict). */
        public Genuine(boolean remembered) {
            this(remembered, 0, UNKNOWN);
        }

        /** A genuine verdict of a lookup sent at {@code sentNanos} whose lease had {@code leftNanos} to run. */
        public static Genuine leaseLeft(long sentNanos, long leftNanos) {
            return new Genuine(false, sentNanos, Math.max(0, leftNanos));
        }

        /** A genuine verdict of a lookup sent at {@code sentNanos}; the service says nothing of the time left. */
        public static Genuine noTimeLeftKnown(long sentNanos) {
            return new Genuine(false, sentNanos, UNKNOWN);
        }

        @Override
        public String label() {
            return remembered ? "remembered" : "genuine";
        }
    }

    /**
     * The token is forged, unknown to the lock service, or its proof is missing, wrong or expired.
     *
     * @param reason    why, fit for the client (the 403 body): never the current holder's token or anything else
     *                  a forger could learn from and send back
     * @param logDetail more for the operator's log only (e.g. the token the holder really has), or {@code null}
     */
    record Refused(String reason, @Nullable String logDetail) implements Verdict {
        public Refused {
            Objects.requireNonNull(reason, "reason");
        }

        /** A refusal whose reason says everything (nothing to keep from the client). */
        public Refused(String reason) {
            this(reason, null);
        }

        /** The reason with the log-only detail, for the operator's log. */
        public String forLog() {
            return logDetail == null ? reason : reason + "; " + logDetail;
        }

        @Override
        public String label() {
            return "refused";
        }
    }

    /** The verifier could not decide (lock service down, timed out): the write is refused, fail closed. */
    record Unavailable(String reason) implements Verdict {
        @Override
        public String label() {
            return "unavailable";
        }
    }
}
