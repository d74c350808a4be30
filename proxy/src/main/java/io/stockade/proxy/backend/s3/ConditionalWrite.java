package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.StorageAnswer;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.FenceRule;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderNames;
import org.jspecify.annotations.Nullable;

/**
 * The atomic class's conditional write of one object: read its token and ETag (HEAD, or this proxy's own last write
 * from the {@link EtagCache}), refuse a stale token, write {@code If-Match: <etag>} (or {@code If-None-Match: *}),
 * and read again and retry, a bounded number of times, when another write won the race. The writes of one object
 * through this proxy are serialized by the endpoint's locks ({@link EndpointWrites}).
 */
final class ConditionalWrite {
    /** How long a write waits for the other writes of its object through this proxy. */
    static final Duration SCOPE_WAIT = Duration.ofSeconds(30);
    /** Bodies up to this size are buffered so that a write that lost a race can be sent again. */
    static final int REPLAY_BUFFER = 1024 * 1024;

    private final Upstream upstream;
    private final int retries;
    private final ScopeGuard locks;
    private final EtagCache cache;
    /** Whether this policy's writes may skip the HEAD ({@code etag-cache} above 0). */
    private final boolean useCache;
    /** What an upstream call that failed comes to (an unreachable upstream, an unknown outcome). */
    private final S3Failures failures;

    ConditionalWrite(Upstream upstream, int retries, EndpointWrites.Lease shared, S3Failures failures) {
        this.upstream = upstream;
        this.retries = retries;
        this.locks = shared.locks();
        this.cache = shared.cache();
        this.useCache = shared.useCache();
        this.failures = failures;
    }

    /** The endpoint's locks, one per object. */
    ScopeGuard locks() {
        return locks;
    }

    /** The endpoint's cache of this proxy's own last writes. */
    EtagCache cache() {
        return cache;
    }

    /**
     * The object's state at the upstream.
     *
     * @param exists    whether an object (a tombstone included) is stored under the key
     * @param tombstone whether that object is a tombstone (a deleted object's token)
     */
    record Head(boolean exists, @Nullable String etag, long token, @Nullable String failure, int status,
                boolean tombstone) {
        Head(boolean exists, @Nullable String etag, long token, @Nullable String failure, int status) {
            this(exists, etag, token, failure, status, false);
        }

        boolean failed() {
            return failure != null;
        }
    }

    /** One attempt of a conditional write: sends it conditional on {@code etag} (null: must not exist). */
    interface Attempt {
        UpstreamResponse send(@Nullable String etag) throws Answered;
    }

    /** An attempt ended without a write (e.g. a copy whose source is missing): what the client is answered. */
    static final class Answered extends Exception {
        final transient WriteResult result;

        Answered(WriteResult result) {
            super(null, null, false, false);
            this.result = result;
        }
    }

    /** What a successful conditional write answers. */
    interface Success {
        WriteResult answer(UpstreamResponse response);

        /**
         * What a conditional write the store refused for its own reasons (not a lost race) answers: by default the
         * store's answer relayed to the client; a write of one key among several (DeleteObjects) keeps it to
         * itself.
         */
        default WriteResult refused(Exchange exchange, UpstreamResponse response) {
            if (StorageAnswer.of(response.status()) == StorageAnswer.UNKNOWN) {
                return StorageAnswer.failed(response.status(), S3Failures.errorCode(response));
            }
            return relayed(exchange, response);
        }
    }

    /** What a successful conditional write leaves in the {@link EtagCache}. */
    enum Remember {
        /** an object: its ETag and token */
        OBJECT,
        /** a tombstone: its ETag and token */
        TOMBSTONE,
        /** nothing (the answer does not carry the new object's ETag): the entry is forgotten */
        NOTHING
    }

    /** Why a conditional write the store refused (412, 409, or 404 on {@code If-Match}) is sent again. */
    private enum Retry {
        /**
         * The ETag remembered from this proxy's own last write was out of date: the object is read (HEAD) and the
         * write judged again as without the cache, which is no retry of {@code retries}.
         */
        REMEMBERED_ETAG_OUT_OF_DATE,
        /** Another write slipped in between the HEAD and the write: read again, at most {@code retries} times. */
        LOST_RACE
    }

    /**
     * The heart of the atomic class: read, compare, conditional write, bounded retries; all of one object's
     * writes through this proxy serialized. With the {@code etag-cache}, the first attempt may take the object's
     * token and ETag from this proxy's own last write of it instead of a HEAD, when they let the write through;
     * a 412 then forgets them and the write goes on as without the cache.
     *
     * @param replayable whether the attempt can send its body again (else a lost race is not retried)
     */
    WriteResult write(Exchange exchange, String bucket, String key, long token, Fencing.Rule rule,
                      boolean replayable, Remember remember, Attempt attempt, Success success) {
        boolean acceptEqual = rule.acceptEqual();
        String object = bucket + "/" + key;
        boolean sent = false;
        try (ScopeGuard.Held held = locks.acquire(object, SCOPE_WAIT.toNanos())) {
            if (held == null) {
                return answer(503, "SlowDown", "other writes of this object held it for " + SCOPE_WAIT.toSeconds()
                        + " s");
            }
            // Only a body that can be sent again may be written on a remembered ETag, and only without the client's
            // own conditions (those are judged against the store's current answer).
            Head head = replayable && useCache && !clientConditions(exchange)
                    ? rememberedHead(object, token, rule) : null;
            boolean fromCache = head != null;
            int retried = 0;
            while (true) {
                if (!fromCache) {
                    head = head(bucket, key);
                }
                Objects.requireNonNull(head, "read just now, or remembered (fromCache: it was not null)");
                WriteResult refused = judge(exchange, head, token, rule);
                if (refused != null) {
                    return refused;
                }
                sent = true;
                WriteResult done = attempt(exchange, object, token, head, remember, attempt, success);
                if (done != null) {
                    return done;
                }
                cache.forget(object);
                Retry retry = fromCache ? Retry.REMEMBERED_ETAG_OUT_OF_DATE
                        : replayable && retried < retries ? Retry.LOST_RACE : null;
                if (retry == null) {
                    break;
                }
                if (retry == Retry.LOST_RACE) {
                    retried++;
                }
                fromCache = false;
            }
            Head now = head(bucket, key);
            if (!now.failed() && stale(now.token(), token, acceptEqual)) {
                return new WriteResult.Stale(now.token());
            }
            return answer(503, "SlowDown", "another write to this object won a race with this one"
                    + " (the upstream refused the conditional write); nothing was written, retry");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new WriteResult.Unavailable("the proxy is stopping");
        } catch (ClientError e) {
            cache.forget(object);
            return answer(e.status, e.code, e.getMessage());
        } catch (RuntimeException e) {
            cache.forget(object); // the outcome may be unknown
            return failures.failure(exchange, e, sent);
        }
    }

    /**
     * The write judged against the object's state (read, or remembered): null when it may be sent, else what the
     * client is answered.
     */
    private static @Nullable WriteResult judge(Exchange exchange, Head head, long token, Fencing.Rule rule) {
        WriteResult refused = judgeToken(head, token, rule);
        if (refused != null) {
            return refused;
        }
        // The client's own If-Match / If-None-Match, judged against this very head (a tombstone is no object): the
        // write below is conditional on it, so what was judged is what is overwritten.
        return clientPreconditions(head, exchange);
    }

    /** The token judged against the object's state by the plan's rule: null when it passes, else the refusal. */
    private static @Nullable WriteResult judgeToken(Head head, long token, Fencing.Rule rule) {
        String failure = head.failure();
        if (failure != null) { // head.failed()
            if (head.status() == 403) {
                return answer(403, "AccessDenied", failure);
            }
            return new WriteResult.Unavailable(failure);
        }
        if (stale(head.token(), token, rule.acceptEqual())) {
            return new WriteResult.Stale(head.token());
        }
        if (rule.tooFar(token, head.token())) {
            return new WriteResult.TooFar(head.token()); // the write is conditional on this very head
        }
        return null;
    }

    /** A step that changes no object by itself, run once its token has passed. */
    interface Step {
        WriteResult run();
    }

    /**
     * A step of the atomic class that makes nothing visible by itself (CreateMultipartUpload, an upload's part or
     * its abort): the token judged against the object's state by the plan's rule, as a write is, then the step
     * run, without holding the object (parts of one upload go up side by side). What it prepares becomes the
     * object's only through the conditional completion, which is judged again.
     */
    WriteResult judged(Exchange exchange, String bucket, String key, long token, Fencing.Rule rule, Step step) {
        WriteResult refused = judgeToken(head(bucket, key), token, rule);
        return refused != null ? refused : step.run();
    }

    /**
     * One conditional write on {@code head}: what the client is answered, or null when the store refused the
     * condition (another write won the race, or the remembered ETag was out of date).
     */
    private @Nullable WriteResult attempt(Exchange exchange, String object, long token, Head head,
                                          Remember remember, Attempt attempt, Success success) {
        UpstreamResponse response;
        try {
            response = attempt.send(head.exists() ? head.etag() : null);
        } catch (Answered answered) {
            return answered.result;
        }
        try (response) {
            if (lostRace(response, head.exists())) {
                return null;
            }
            if (response.status() / 100 != 2) {
                cache.forget(object);
                return success.refused(exchange, response);
            }
            if (remember == Remember.NOTHING) {
                cache.forget(object);
            } else {
                cache.wrote(object, response.first("ETag"), token, remember == Remember.TOMBSTONE);
            }
            return success.answer(response);
        }
    }

    /**
     * The object as this proxy last wrote it, when that lets this write through (not stale, not too far); else null
     * and the object is read from the store: a refusal is never made on a remembered state.
     */
    private @Nullable Head rememberedHead(String object, long token, Fencing.Rule rule) {
        EtagCache.Known known = cache.get(object);
        if (known == null || stale(known.token(), token, rule.acceptEqual()) || rule.tooFar(token, known.token())) {
            return null;
        }
        return new Head(true, known.etag(), known.token(), null, 200, known.tombstone());
    }

    /** Whether a write carries the client's own {@code If-Match} or {@code If-None-Match}. */
    static boolean clientConditions(Exchange exchange) {
        var headers = exchange.request().headers();
        return headers.contains(HeaderNames.IF_MATCH) || headers.contains(HeaderNames.IF_NONE_MATCH);
    }

    /**
     * The client's {@code If-Match} and {@code If-None-Match} on a write, judged as S3 judges them against the
     * object the proxy read: {@code If-Match} on a missing object is 404 {@code NoSuchKey}, on another ETag 412;
     * {@code If-None-Match} ({@code *} or a matching ETag) on an existing object 412. {@code If-Match} is judged
     * first (RFC 9110 section 13.2.2). A tombstone is no object.
     *
     * @return null when the write may go on, else what the client was answered
     */
    private static @Nullable WriteResult clientPreconditions(Head head, Exchange exchange) {
        var headers = exchange.request().headers();
        List<String> ifMatch = headers.all(HeaderNames.IF_MATCH, List::of);
        List<String> ifNoneMatch = headers.all(HeaderNames.IF_NONE_MATCH, List::of);
        boolean exists = head.exists() && !head.tombstone();
        if (!ifMatch.isEmpty()) {
            if (!exists) {
                return answer(404, "NoSuchKey", "The specified key does not exist.");
            }
            if (!matches(ifMatch, head.etag())) {
                return answer(412, "PreconditionFailed", "At least one of the pre-conditions you "
                        + "specified did not hold (If-Match)");
            }
        }
        if (!ifNoneMatch.isEmpty() && exists && matches(ifNoneMatch, head.etag())) {
            return answer(412, "PreconditionFailed", "At least one of the pre-conditions you specified "
                    + "did not hold (If-None-Match)");
        }
        return null;
    }

    /** Whether an entity-tag list ({@code *}, or ETags with or without quotes) names the object's ETag. */
    static boolean matches(List<String> values, @Nullable String etag) {
        String have = bareEtag(etag);
        for (String value : values) {
            for (String part : value.split(",", -1)) {
                String tag = part.trim();
                if (tag.equals("*") || (!tag.isEmpty() && bareEtag(tag).equals(have))) {
                    return true;
                }
            }
        }
        return false;
    }

    private static String bareEtag(@Nullable String etag) {
        if (etag == null) {
            return "";
        }
        String t = etag.trim();
        if (t.startsWith("W/")) {
            t = t.substring(2);
        }
        if (t.length() >= 2 && t.startsWith("\"") && t.endsWith("\"")) {
            t = t.substring(1, t.length() - 1);
        }
        return t;
    }

    static WriteResult relayed(Exchange exchange, UpstreamResponse response) {
        Relay.relayResponse(response, exchange);
        return new WriteResult.Answered(response.status());
    }

    /**
     * Whether the upstream refused the condition: 412, 409 ConditionalRequestConflict, or, for a write sent
     * {@code If-Match}, 404 (S3's answer when the object named by the ETag was deleted since it was read).
     */
    static boolean lostRace(UpstreamResponse response, boolean ifMatch) {
        int status = response.status();
        if (status == 412 || (ifMatch && status == 404)) {
            return true;
        }
        if (status != 409) {
            return false;
        }
        try (InputStream in = response.body()) {
            String body = new String(in.readNBytes(8192), StandardCharsets.UTF_8);
            return body.contains("ConditionalRequestConflict");
        } catch (IOException e) {
            return true;
        }
    }

    static boolean stale(long stored, long token, boolean acceptEqual) {
        return FenceRule.stale(token, stored, acceptEqual);
    }

    static List<Map.Entry<String, String>> conditional(List<Map.Entry<String, String>> headers,
                                                       @Nullable String etag) {
        List<Map.Entry<String, String>> out = new ArrayList<>(headers.size() + 1);
        for (Map.Entry<String, String> h : headers) {
            if (!h.getKey().equals("if-match") && !h.getKey().equals("if-none-match")) {
                out.add(h);
            }
        }
        out.add(etag == null ? Map.entry("if-none-match", "*") : Map.entry("if-match", etag));
        return out;
    }

    Head head(String bucket, String key) {
        try (UpstreamResponse r = upstream.send("HEAD", bucket, key, List.of(), List.of(), null)) {
            int status = r.status();
            if (status == 404) {
                return new Head(false, null, -1, null, status);
            }
            if (status != 200) {
                return new Head(false, null, -1, "reading the object's fencing token (HEAD) answered " + status,
                        status);
            }
            String etag = r.first("ETag");
            // the higher of the record and the name earlier builds kept it under: an object written by an earlier
            // build (or an earlier replica in a rolling upgrade) keeps its fence; neither is ever lowered
            long token = -1;
            for (String name : List.of(ObjectMeta.RECORD_META, ObjectMeta.TOKEN_META)) {
                Optional<String> stored = Optional.ofNullable(r.first(name));
                if (stored.isPresent()) {
                    try {
                        token = Math.max(token, Long.parseLong(stored.get().trim()));
                    } catch (NumberFormatException e) {
                        return new Head(true, etag, -1, "the object's " + name + " is not a token: '"
                                + stored.get() + "'", 500);
                    }
                }
            }
            return new Head(true, etag, token, null, status, r.first(ObjectMeta.DELETED_META) != null);
        } catch (RuntimeException e) {
            return new Head(false, null, -1, "reading the object's fencing token (HEAD) failed: "
                    + S3Failures.root(e), 0);
        }
    }

    /** An S3 error the write decided; the pipeline answers it. */
    private static WriteResult answer(int status, String code, String message) {
        return new WriteResult.Refused(S3Problems.of(status, code, message, null));
    }
}
