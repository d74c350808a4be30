package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.Keeper;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.fence.ScopeGuard;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderNames;
import org.jspecify.annotations.Nullable;

/**
 * The <em>atomic</em> S3 class: one scope per object, the highest token in the object's metadata
 * ({@value ObjectMeta#TOKEN_META}), every fenced write conditional on the version the token was read from.
 * <p>
 * A fenced write reads the object's token and ETag (HEAD), refuses a stale token, and writes with
 * {@code If-Match: <etag>} (or {@code If-None-Match: *} when there is no object) carrying the new token. If another
 * write slipped in between (412, or 409 {@code ConditionalRequestConflict}), it reads again and retries, at most
 * {@code retries} times, when it can send the body again (no body, a small buffered body, or a copy's source);
 * a streamed body cannot be replayed, so the client is answered 503 {@code SlowDown} (SDKs retry it) unless a
 * higher token is now there (412 {@code PreconditionFailed}).
 * <p>
 * A delete writes a <em>tombstone</em>: a small object with the token and {@value ObjectMeta#DELETED_META}, so a
 * zombie cannot recreate the object with an older token; its bytes make its ETag unique ({@link Tombstone}).
 * Through the proxy a tombstone reads as 404 {@code NoSuchKey}, and listings leave it out ({@link Tombstones}).
 * <p>
 * The read-compare-write is {@link ConditionalWrite}'s; admission and planning are {@link S3Admission}'s and
 * {@link S3Planner}'s, which ask this class (the strategy {@link S3Backend} holds, as it may hold
 * {@link SerializedClass}) who keeps a write's fence; relaying is {@link Relay}'s.
 * <p>
 * Within one proxy the writes of one object are also serialized: an upstream whose conditional writes are not
 * atomic under concurrency (s3proxy 3.0.0) is then still safe with a single proxy replica.
 */
final class AtomicClass implements S3Class {
    /** Bodies up to this size are buffered so that a write that lost a race can be sent again. */
    private static final int REPLAY_BUFFER = ConditionalWrite.REPLAY_BUFFER;

    private final Upstream upstream;
    private final Relay relay;
    private final Multipart multipart;
    private final S3Failures failures;
    private final KeyScopes scopes;
    /** This class's hold on the locks and the ETag cache of its endpoint, released by {@link #close}. */
    private final EndpointWrites.Lease shared;
    private final ConditionalWrite writes;
    private final Tombstones tombstones;
    private final ConditionalCopy copies;

    AtomicClass(BackendConfig.S3 config, Upstream upstream, Relay relay, Multipart multipart, S3Failures failures,
                KeyScopes scopes) {
        this.upstream = upstream;
        this.relay = relay;
        this.multipart = multipart;
        this.failures = failures;
        this.scopes = scopes;
        this.shared = EndpointWrites.open(config.endpoint(), config.etagCache());
        this.writes = new ConditionalWrite(upstream, config.retries(), shared, failures);
        this.tombstones = new Tombstones(upstream, writes, failures);
        this.copies = new ConditionalCopy(upstream, writes);
    }

    @Override
    public void close() {
        shared.close();
    }

    /** The storage keeps the fence: the object's token, every write conditional on the version it was read from. */
    @Override
    public Keeper keeper(AdmittedRequest p) {
        return new Keeper.InStorage(new Keeper.StorageWrite() {
            @Override
            public WriteResult write(Exchange exchange, long token, Fencing.Rule rule) {
                return fencedWrite(exchange, p, token, rule);
            }

            @Override
            public Keeper.Observed observe(Exchange exchange, long token, Fencing.Rule rule) {
                return AtomicClass.this.observe(exchange, p, token, rule);
            }
        });
    }

    /** Every write is fenced by the token in the object's metadata and a conditional PUT: no fence store asked. */
    @Override
    public boolean needsFenceStore() {
        return false;
    }

    @Override
    public Duration settle() {
        return Duration.ZERO; // a conditional write that lands late no longer matches; nothing to quarantine
    }

    /**
     * A fenced write, by the operation the plan found: one case per fenced operation, every other refused. Each
     * goes through {@link ConditionalWrite}, judged by the plan's rule on the object it writes.
     */
    private WriteResult fencedWrite(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        try {
            return switch (s3.admittedOperation()) {
                case PUT_OBJECT -> putObject(exchange, p, token, rule);
                case DELETE_OBJECT -> ConditionalWrite.clientConditions(exchange) ? answer(exchange, 501,
                        "NotImplemented", "a DeleteObject with If-Match or If-None-Match is not supported through the"
                        + " fencing proxy")
                        : writes.write(exchange, s3.namedBucket(), s3.namedKey(), token, rule,
                                true, ConditionalWrite.Remember.TOMBSTONE,
                        etag -> tombstone(s3.namedBucket(), s3.namedKey(), token, etag), response -> {
                            exchange.response().status(204).send();
                            return new WriteResult.Answered(204);
                        });
                case COPY_OBJECT -> copies.write(exchange, p, token, rule);
                case COMPLETE_MULTIPART -> complete(exchange, p, token, rule);
                // nothing visible yet: judged against the object, then relayed; the completion is conditional
                case CREATE_MULTIPART -> writes.judged(exchange, s3.namedBucket(), s3.namedKey(), token, rule,
                        () -> multipart.create(exchange, p, OptionalLong.of(token)));
                case UPLOAD_PART, ABORT_MULTIPART -> writes.judged(exchange, s3.namedBucket(), s3.namedKey(), token,
                        rule, () -> forward(exchange, p));
                case DELETE_OBJECTS -> deleteObjects(exchange, p, token, rule);
                case POST_OBJECT -> postObject(exchange, p, token, rule);
                case LIST_BUCKETS, BUCKET_READ, LIST_OBJECTS, LIST_OBJECT_VERSIONS, BUCKET_WRITE, DELETE_BUCKET,
                     GET_OBJECT, HEAD_OBJECT, OBJECT_READ, OBJECT_SUBRESOURCE_WRITE, LIST_PARTS, PREFLIGHT ->
                        answer(exchange, 501, "NotImplemented", s3.operation() + " is not a fenced write of the "
                                + "atomic class; it is never sent as one");
            };
        } catch (ClientError e) {
            return answer(exchange, e.status, e.code, e.getMessage());
        }
    }

    /**
     * Observe mode: the object's stored token is read to tell whether enforce would refuse, then the request is
     * forwarded as it is. Unlike the other backends, the token is not written into the object's metadata (that
     * takes the conditional write observe does not do); docs/s3.md says so.
     */
    private Keeper.Observed observe(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        List<String> keys = p.deletes() != null ? p.deletes().request().keys()
                : List.of(p.form() != null ? p.form().key() : s3.key());
        // the object enforce would refuse the token on first (stale, or a jump over max-advance), else the last read
        long stored = -1;
        boolean wouldReject = false;
        for (String key : keys) {
            stored = writes.head(s3.namedBucket(), key).token();
            if (ConditionalWrite.stale(stored, token, rule.acceptEqual()) || rule.tooFar(token, stored)) {
                wouldReject = true;
                break;
            }
        }
        // a write forwarded while the ETag cache is on forgets the object (forwardWrite)
        WriteResult result = forward(exchange, p);
        return new Keeper.Observed(wouldReject, stored, result);
    }

    // ---- forwards: listings without tombstones, a bucket that only tombstones keep, writes the cache forgets ----

    @Override
    public WriteResult forward(Exchange exchange, AdmittedRequest p) {
        return switch (p.s3().admittedOperation()) {
            case LIST_OBJECTS, LIST_OBJECT_VERSIONS -> tombstones.listing(exchange, p);
            case DELETE_BUCKET -> tombstones.deleteBucket(exchange, p);
            case UPLOAD_PART -> {
                if (!isUploadPartCopy(exchange, p)) {
                    yield relay.forwardAsIs(exchange, p);
                }
                try {
                    yield uploadPartCopy(exchange, p);
                } catch (ClientError e) {
                    yield answer(exchange, e.status, e.code, e.getMessage());
                }
            }
            case LIST_BUCKETS, BUCKET_READ, BUCKET_WRITE, DELETE_OBJECTS, POST_OBJECT, GET_OBJECT, HEAD_OBJECT,
                 OBJECT_READ, PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT, OBJECT_SUBRESOURCE_WRITE, CREATE_MULTIPART,
                 COMPLETE_MULTIPART, ABORT_MULTIPART, LIST_PARTS, PREFLIGHT ->
                    writes.cache().enabled() && changesObjects(p) ? forwardWrite(exchange, p)
                            : relay.forwardAsIs(exchange, p, tombstones::deletedForAnonymous);
        };
    }

    /**
     * A write forwarded as it is (unfenced: {@code missing: allow}, observe mode, a token the verifier let through
     * unchecked) while the ETag cache is on: it may replace an object with the same bytes and another token, which
     * the cache could not tell from no change. So it holds the object's lock like a fenced write and forgets the
     * object when done; one that names its objects in its body (DeleteObjects) empties the cache.
     */
    private WriteResult forwardWrite(Exchange exchange, AdmittedRequest p) {
        String key = p.form() != null ? p.form().key() : p.s3().key();
        if (key == null) {
            try {
                return relay.forwardAsIs(exchange, p);
            } finally {
                writes.cache().clear();
            }
        }
        String object = p.s3().bucket() + "/" + key;
        try (ScopeGuard.Held held = writes.locks().acquire(object, ConditionalWrite.SCOPE_WAIT.toNanos())) {
            if (held == null) {
                return answer(exchange, 503, "SlowDown", "other writes of this object held it for "
                        + ConditionalWrite.SCOPE_WAIT.toSeconds() + " s");
            }
            try {
                return relay.forwardAsIs(exchange, p);
            } finally {
                writes.cache().forget(object);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return answer(exchange, 503, "ServiceUnavailable", "the proxy is stopping");
        }
    }

    /** Whether a request may change an object's bytes or metadata (parts of a multipart upload do not, yet). */
    private static boolean changesObjects(AdmittedRequest p) {
        return switch (p.s3().admittedOperation()) {
            case PUT_OBJECT, COPY_OBJECT, DELETE_OBJECT, DELETE_OBJECTS, COMPLETE_MULTIPART, POST_OBJECT,
                 OBJECT_SUBRESOURCE_WRITE -> true;
            case LIST_BUCKETS, BUCKET_READ, LIST_OBJECTS, LIST_OBJECT_VERSIONS, BUCKET_WRITE, DELETE_BUCKET,
                 GET_OBJECT, HEAD_OBJECT, OBJECT_READ, CREATE_MULTIPART, UPLOAD_PART, ABORT_MULTIPART, LIST_PARTS,
                 PREFLIGHT -> false;
        };
    }

    private WriteResult putObject(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        List<Map.Entry<String, String>> headers = Relay.forwardHeaders(exchange, p);
        headers.addAll(ObjectMeta.tokenRecord(token));
        // The body is opened only once the token and the client's conditions have passed: opening it asks a client
        // that sent Expect: 100-continue for it, and a refusal of a large body that is on its way closes the
        // connection under the client (SECURITY.md). So a refused write never has its body sent.
        boolean replayable = declaredLength(exchange) <= REPLAY_BUFFER;
        Upstream.Body[] body = new Upstream.Body[1];
        boolean[] opened = new boolean[1];
        return writes.write(exchange, s3.namedBucket(), s3.namedKey(), token, rule,
                replayable, ConditionalWrite.Remember.OBJECT,
                etag -> {
                    if (!opened[0]) {
                        opened[0] = true;
                        Upstream.Body b = Relay.clientBody(exchange, p.verified());
                        body[0] = b != null && replayable ? Upstream.Body.of(Relay.whole(b)) : b;
                    }
                    return upstream.send("PUT", s3.bucket(), s3.key(), s3.upstreamQuery(), conditional(headers, etag),
                            body[0]);
                },
                response -> relayed(exchange, response));
    }

    /**
     * A browser-form upload: the token (the signed form field) is judged against the object before the file is
     * read; then the file is read within the policy's content-length-range (kept in memory up to 1 MiB, else in a
     * temporary file, so that a lost race can be retried) and written as a conditional PUT, as PutObject.
     */
    private WriteResult postObject(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        AdmittedRequest.Form form = Objects.requireNonNull(p.form(), "a POST Object is admitted as a form");
        ConditionalWrite.Head before = writes.head(s3.namedBucket(), form.key());
        String failure = before.failure();
        if (failure != null) { // before.failed()
            return new WriteResult.Unavailable(failure);
        }
        if (ConditionalWrite.stale(before.token(), token, rule.acceptEqual())) {
            return new WriteResult.Stale(before.token()); // the file is never read
        }
        if (rule.tooFar(token, before.token())) {
            return new WriteResult.TooFar(before.token()); // nor here
        }
        FormUploads.Spooled spooled = FormUploads.spool(exchange, form);
        if (spooled.refused() != null) {
            return spooled.refused();
        }
        try (Spool file = Objects.requireNonNull(spooled.file(), "not refused: the file was read")) {
            List<Map.Entry<String, String>> headers = FormUploads.headers(form);
            headers.addAll(ObjectMeta.tokenRecord(token));
            return writes.write(exchange, s3.namedBucket(), form.key(), token, rule,
                    true, ConditionalWrite.Remember.OBJECT,
                    etag -> upstream.send("PUT", s3.bucket(), form.key(), List.of(), conditional(headers, etag),
                            file.body()),
                    response -> FormUploads.answer(exchange, form, s3.namedBucket(), response.first("ETag")));
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, false);
        }
    }

    /**
     * The body's length as its headers declare it (the decoded length of an aws-chunked body), 0 without one, and
     * {@code Long.MAX_VALUE} when it cannot be read from them (the body is then refused when it is opened).
     */
    private static long declaredLength(Exchange exchange) {
        var headers = exchange.request().headers();
        String sha = headers.first(HeaderNames.create("x-amz-content-sha256")).orElse(null);
        try {
            if (PayloadReader.isChunked(sha)) {
                return headers.first(HeaderNames.create("x-amz-decoded-content-length")).map(v -> Long.parseLong(
                        v.trim())).orElse(Long.MAX_VALUE);
            }
            if (headers.contentLength().isPresent()) {
                return headers.contentLength().getAsLong();
            }
            return headers.contains(HeaderNames.TRANSFER_ENCODING) ? Long.MAX_VALUE : 0;
        } catch (NumberFormatException e) {
            return Long.MAX_VALUE;
        }
    }

    private WriteResult complete(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        // the plan refused any other token (Multipart.tokenRefusal): the completed object holds the creation's
        Problem other = Multipart.completeRefusal(p.uploadToken(), token, null);
        if (other != null) {
            return new WriteResult.Refused(other);
        }
        byte[] body = Relay.smallBody(exchange, p.verified(), REPLAY_BUFFER);
        try {
            S3Xml.checkComplete(body);
        } catch (S3Xml.Malformed e) {
            return answer(exchange, 400, "MalformedXML", e.getMessage());
        }
        List<Map.Entry<String, String>> headers = Relay.forwardHeaders(exchange, p);
        return writes.write(exchange, s3.namedBucket(), s3.namedKey(), token, rule,
                true, ConditionalWrite.Remember.NOTHING,
                etag -> upstream.send("POST", s3.bucket(), s3.key(), s3.upstreamQuery(), conditional(headers, etag),
                        Upstream.Body.of(body)),
                response -> relayed(exchange, response));
    }

    /**
     * UploadPartCopy: relayed (a part changes no object yet), unless its source is a tombstone, which the store would
     * copy as the part's bytes; a deleted source is 404 {@code NoSuchKey}, as S3 answers for a missing one.
     */
    private WriteResult uploadPartCopy(Exchange exchange, AdmittedRequest p) {
        CopySource src = CopySource.of(exchange.request());
        try (UpstreamResponse r = upstream.send("HEAD", src.bucket(), src.key(), src.query(), List.of(), null)) {
            if (r.status() == 200 && r.first(ObjectMeta.DELETED_META) != null) {
                return answer(exchange, 404, "NoSuchKey", "The specified copy source does not exist.");
            }
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, false);
        }
        return relay.relay(exchange, p, List.of());
    }

    private static boolean isUploadPartCopy(Exchange exchange, AdmittedRequest p) {
        return p.s3().operation() == S3Request.Operation.UPLOAD_PART
                && exchange.request().headers().contains(HeaderNames.create("x-amz-copy-source"));
    }

    /**
     * DeleteObjects: each key the plan read from the body is deleted as a DeleteObject is, by a conditional
     * tombstone judged by the plan's rule on that key ({@link ConditionalWrite}); each key's outcome is its entry in
     * the answer, as S3 answers DeleteObjects.
     */
    private WriteResult deleteObjects(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        S3Xml.DeleteRequest request = Objects.requireNonNull(p.deletes(), "the plan read the body").request();
        StringBuilder xml = new StringBuilder("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<DeleteResult xmlns=\""
                + S3Xml.NS + "\">");
        WriteResult.NotApplied notApplied = null;
        boolean anyDeleted = false;
        for (String key : request.keys()) {
            WriteResult one = writes.write(exchange, s3.namedBucket(), key, token, rule, true,
                    ConditionalWrite.Remember.TOMBSTONE, etag -> tombstone(s3.namedBucket(), key, token, etag),
                    OneOfSeveral.INSTANCE);
            String error = DeleteResults.error(one, token, rule);
            if (error != null && (notApplied == null
                    || DeleteResults.weight(one) > DeleteResults.weight(notApplied.result()))) {
                notApplied = new WriteResult.NotApplied(scopes.scopeOfKey(exchange.route(), s3.bucket(), key),
                        DeleteResults.counted(one));
            }
            if (error == null) {
                anyDeleted = true;
                if (!request.quiet()) {
                    xml.append("<Deleted><Key>").append(S3Xml.escape(key)).append("</Key></Deleted>");
                }
            } else {
                xml.append("<Error><Key>").append(S3Xml.escape(key)).append("</Key>").append(error).append("</Error>");
            }
        }
        xml.append("</DeleteResult>");
        exchange.response().header(HeaderNames.CONTENT_TYPE, "application/xml");
        exchange.response().status(200).send(xml.toString().getBytes(StandardCharsets.UTF_8));
        // Counted as a key not deleted only when no key was: a request that deleted some keys wrote, and is counted
        // accepted (its answer names the others); one that deleted none is the stale writer (or the refusal) it is.
        return new WriteResult.Answered(200, anyDeleted ? null : notApplied);
    }

    /** A key's tombstone among several: its outcome goes into the DeleteObjects answer, never to the client alone. */
    private enum OneOfSeveral implements ConditionalWrite.Success {
        INSTANCE;

        @Override
        public WriteResult answer(UpstreamResponse response) {
            return new WriteResult.Answered(response.status());
        }

        @Override
        public WriteResult refused(Exchange exchange, UpstreamResponse response) {
            return new WriteResult.Answered(response.status());
        }
    }

    private UpstreamResponse tombstone(String bucket, String key, long token, @Nullable String etag) {
        List<Map.Entry<String, String>> headers = new ArrayList<>();
        headers.add(Map.entry("content-type", "application/x-stockade-tombstone"));
        headers.addAll(ObjectMeta.tokenRecord(token));
        headers.add(Map.entry(ObjectMeta.DELETED_META, "true"));
        return upstream.send("PUT", bucket, key, List.of(), conditional(headers, etag),
                Upstream.Body.of(Tombstone.body()));
    }

    /** An S3 error the backend decided: the pipeline answers it through {@link S3Refusals#refuse}. */
    private static WriteResult answer(Exchange exchange, int status, String code, String message) {
        return S3Failures.answer(exchange, status, code, message);
    }

    private static List<Map.Entry<String, String>> conditional(List<Map.Entry<String, String>> headers,
                                                               @Nullable String etag) {
        return ConditionalWrite.conditional(headers, etag);
    }

    private static WriteResult relayed(Exchange exchange, UpstreamResponse response) {
        return ConditionalWrite.relayed(exchange, response);
    }
}
