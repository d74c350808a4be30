package io.stockade.proxy.backend.s3;

import java.io.BufferedInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.BiPredicate;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.StorageAnswer;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.listener.BodyBounds;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.Header;
import io.helidon.http.HeaderNames;
import io.helidon.http.Status;
import io.helidon.webserver.http.ServerRequest;
import io.helidon.webserver.http.ServerResponse;
import org.jspecify.annotations.Nullable;

/**
 * The relay between the client and the store: a request the fence admitted, or forwards unfenced, sent to the store
 * signed by the proxy ({@link Upstream}) and its answer relayed (a failed call answered by {@link S3Failures}); which
 * of the client's headers go upstream, the client's body decoded and checked as it streams, and the store's answer
 * relayed back (an error without a body made an S3 error).
 */
final class Relay {
    /** Response headers not relayed (hop-by-hop; the server sets its own framing). */
    private static final Set<String> NOT_RELAYED = Set.of("connection", "keep-alive", "transfer-encoding",
            "content-length", "te", "upgrade", "proxy-connection");

    private final Upstream upstream;
    private final Multipart multipart;
    private final S3Failures failures;

    Relay(Upstream upstream, Multipart multipart, S3Failures failures) {
        this.upstream = upstream;
        this.multipart = multipart;
        this.failures = failures;
    }

    // ---- unfenced requests and serialized writes: relayed as they are ----

    /** A request sent without a token: relayed as it is (a form upload as the PutObject it is). */
    WriteResult forwardAsIs(Exchange exchange, AdmittedRequest p) {
        return forwardAsIs(exchange, p, Relay::noneDeleted);
    }

    /**
     * A request sent without a token, relayed as it is, where an unsigned read the store refused (403) is answered
     * 404 {@code NoSuchKey} when the key is {@code deletedForAnonymous}: a tombstone an anonymous client would be
     * told is missing (the atomic class's {@link Tombstones#deletedForAnonymous}; only the atomic class writes
     * tombstones).
     */
    WriteResult forwardAsIs(Exchange exchange, AdmittedRequest p, BiPredicate<String, String> deletedForAnonymous) {
        if (p.form() != null) {
            return formUpload(exchange, p);
        }
        if (p.s3().operation() == S3Request.Operation.CREATE_MULTIPART) {
            // unfenced (observe, mode off, missing: allow): the upload names no token, whatever the request carried,
            // as a PutObject forwarded as it is leaves none; a token nobody admitted must not become the object's
            return multipart.create(exchange, p, OptionalLong.empty());
        }
        if (Multipart.listsUploads(p.s3())) {
            return multipart.listUploads(exchange, p);
        }
        return relay(exchange, p, List.of(), false, deletedForAnonymous);
    }

    /** Sends the client's request upstream (signed by the proxy) and relays the answer. */
    WriteResult relay(Exchange exchange, AdmittedRequest p, List<Map.Entry<String, String>> extraHeaders) {
        return relay(exchange, p, extraHeaders, false, Relay::noneDeleted);
    }

    /**
     * Sends a write the fence admitted upstream and relays the answer, unless the store's answer does not say
     * whether it applied the write ({@link StorageAnswer#UNKNOWN}: a 500 {@code InternalError}): then the
     * pipeline answers that the outcome is unknown.
     */
    WriteResult relayAdmitted(Exchange exchange, AdmittedRequest p, List<Map.Entry<String, String>> extraHeaders) {
        return relay(exchange, p, extraHeaders, true, Relay::noneDeleted);
    }

    private WriteResult relay(Exchange exchange, AdmittedRequest p, List<Map.Entry<String, String>> extraHeaders,
                              boolean admitted, BiPredicate<String, String> deletedForAnonymous) {
        S3Request s3 = p.s3();
        List<Map.Entry<String, String>> headers = Relay.forwardHeaders(exchange, p);
        headers.addAll(extraHeaders);
        boolean sent = false;
        try {
            Upstream.Body body = p.deletes() != null ? Upstream.Body.of(p.deletes().body())
                    : Relay.clientBody(exchange, p.verified());
            sent = true;
            try (UpstreamResponse response = p.send(upstream, s3.method(), s3.bucket(), s3.key(),
                    s3.upstreamQuery(), headers, body)) {
                S3Request.Operation op = s3.operation();
                if ((op == S3Request.Operation.GET_OBJECT || op == S3Request.Operation.HEAD_OBJECT)
                        && (response.first(ObjectMeta.DELETED_META) != null)) {
                    return S3Failures.answer(exchange, 404, "NoSuchKey", "The specified key does not exist.");
                }
                if (p.unsigned() && response.status() == 403 && (op == S3Request.Operation.GET_OBJECT
                        || op == S3Request.Operation.HEAD_OBJECT)
                        && deletedForAnonymous.test(s3.bucket(), s3.key())) {
                    return S3Failures.answer(exchange, 404, "NoSuchKey", "The specified key does not exist.");
                }
                if (admitted && StorageAnswer.of(response.status()) == StorageAnswer.UNKNOWN) {
                    return StorageAnswer.failed(response.status(), S3Failures.errorCode(response));
                }
                Relay.relayResponse(response, exchange);
                return new WriteResult.Answered(response.status());
            }
        } catch (ClientError e) {
            return S3Failures.answer(exchange, e.status, e.code, e.getMessage());
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, sent);
        }
    }

    /**
     * Sends a request upstream on the client's behalf: signed by the proxy, or, for an unsigned read the policy
     * forwards, unsigned (the proxy's credentials never answer for an anonymous client).
     */
    UpstreamResponse send(Exchange exchange, AdmittedRequest p, String method, @Nullable String bucket,
                          @Nullable String key, List<Map.Entry<String, String>> query,
                          List<Map.Entry<String, String>> headers, Upstream.@Nullable Body body) {
        return p.unsigned() ? upstream.sendUnsigned(method, bucket, key, query, headers, body)
                : upstream.send(method, bucket, key, query, headers, body);
    }


    /**
     * A form upload without a fence (mode off or observe, missing: allow): the file is read and written as a plain
     * PutObject, as the other unfenced writes are forwarded.
     */
    WriteResult formUpload(Exchange exchange, AdmittedRequest p) {
        AdmittedRequest.Form form = Objects.requireNonNull(p.form(), "a form upload is admitted as a form");
        FormUploads.Spooled spooled = FormUploads.spool(exchange, form);
        if (spooled.refused() != null) {
            return spooled.refused();
        }
        try (Spool file = Objects.requireNonNull(spooled.file(), "not refused: the file was read")) {
            try (UpstreamResponse response = upstream.send("PUT", p.s3().bucket(), form.key(), List.of(),
                    FormUploads.headers(form), file.body())) {
                if (response.status() / 100 != 2) {
                    Relay.relayResponse(response, exchange);
                    return new WriteResult.Answered(response.status());
                }
                return FormUploads.answer(exchange, form, p.s3().namedBucket(), response.first("ETag"));
            }
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, true);
        }
    }

    // ---- the parts of a relay ----

    /**
     * The client's headers that go upstream: the {@code x-amz-*} headers of the table (those the proxy reads itself,
     * for signing, framing and checksums, and the token's, excepted), the standard headers S3 reads
     * ({@link S3Table#STANDARD}), and the headers a presigner hoisted into the query. Every other header is not
     * relayed: the proxy signs its own request upstream, and a header S3 gives no meaning stays with the proxy.
     */
    static List<Map.Entry<String, String>> forwardHeaders(Exchange exchange, AdmittedRequest p) {
        String fencingHeader = exchange.route().policy().fence().header().toLowerCase(Locale.ROOT);
        List<Map.Entry<String, String>> out = new ArrayList<>();
        for (Header header : exchange.request().headers()) {
            String name = header.name().toLowerCase(Locale.ROOT);
            if (!relayed(name) || name.equals(fencingHeader)) {
                continue;
            }
            String value = String.join(", ", header.allValues());
            if (name.equals("content-encoding")) {
                // aws-chunked is the request's framing, not the object's: the rest goes on as the client wrote it
                // ("deflate, gzip" stays so; it was stored as "deflate,gzip")
                value = String.join(",", Arrays.stream(value.split(",", -1))
                        .filter(v -> !v.isBlank() && !v.strip().equalsIgnoreCase("aws-chunked")).toList()).strip();
                if (value.isEmpty()) {
                    continue;
                }
            }
            out.add(Map.entry(name, value));
        }
        for (Map.Entry<String, String> h : p.s3().hoisted()) {
            if (relayed(h.getKey())) {
                out.add(h);
            }
        }
        return out;
    }

    /** Whether a request header (lower case) is relayed upstream. */
    private static boolean relayed(String name) {
        if (name.startsWith("x-amz-")) {
            return !S3Table.CONSUMED.contains(name) && !ObjectMeta.OWN_META.contains(name);
        }
        return S3Table.STANDARD.contains(name);
    }

    /**
     * The client's body, decoded and checked as it streams, read within the policy's bounds
     * ({@link Exchange#body()}: {@code max-body-bytes} counts the bytes as sent, aws-chunked framing included);
     * null when there is none.
     */
    static Upstream.@Nullable Body clientBody(Exchange exchange, ClientAuth.@Nullable Verified verified) {
        ServerRequest req = exchange.request();
        String sha = req.headers().first(HeaderNames.create("x-amz-content-sha256")).orElse(null);
        boolean chunked = PayloadReader.isChunked(sha);
        long length;
        if (chunked) {
            String decoded = req.headers().first(HeaderNames.create("x-amz-decoded-content-length")).orElse(null);
            if (decoded == null) {
                throw new ClientError(411, "MissingContentLength", "an aws-chunked body needs"
                        + " x-amz-decoded-content-length");
            }
            try {
                length = Long.parseLong(decoded.trim());
            } catch (NumberFormatException e) {
                throw new ClientError(400, "InvalidArgument", "x-amz-decoded-content-length is not a number");
            }
        } else if (req.headers().contentLength().isPresent()) {
            length = req.headers().contentLength().getAsLong();
        } else if (req.headers().contains(HeaderNames.TRANSFER_ENCODING)) {
            throw new ClientError(411, "MissingContentLength", "You must provide the Content-Length HTTP header.");
        } else {
            return null;
        }
        if (!chunked && length == 0) {
            return null;
        }
        try {
            InputStream in = PayloadReader.of(new BufferedInputStream(exchange.body(), 64 * 1024), sha,
                    verified, req.headers().first(HeaderNames.create("x-amz-trailer")).orElse(null));
            return Upstream.Body.of(in, length);
        } catch (PayloadReader.Rejected e) {
            throw new ClientError(e.status, e.code, e.getMessage());
        }
    }

    /** Reads a small client body whole (XML bodies), refusing one larger than {@code max}. */
    static byte[] smallBody(Exchange exchange, ClientAuth.@Nullable Verified verified, int max) {
        Upstream.Body body = clientBody(exchange, verified);
        if (body == null) {
            return new byte[0];
        }
        if (body.length() > max) {
            throw new ClientError(400, "MaxMessageLengthExceeded", "the request body is larger than " + max
                    + " bytes");
        }
        return whole(body);
    }

    /**
     * A client body read whole into memory. A body cut off by a bound of the policy (too large, too slow) is
     * answered by the pipeline as that bound's refusal (413, 408: see {@link S3Failures#failure}), never as a
     * malformed body.
     */
    static byte[] whole(Upstream.Body body) {
        ByteArrayOutputStream out = new ByteArrayOutputStream((int) body.length());
        try {
            body.writeTo(out);
        } catch (PayloadReader.Rejected e) {
            throw new ClientError(e.status, e.code, e.getMessage());
        } catch (BodyBounds.BodyRefused e) {
            throw new UncheckedIOException(e); // answered by the pipeline (see failure)
        } catch (IOException e) {
            throw new ClientError(400, "IncompleteBody", "the request body could not be read: " + e.getMessage());
        }
        return out.toByteArray();
    }

    /**
     * Relays an upstream answer. Its framing comes from the upstream client: an answer to HEAD, a 204 or a 304 has
     * no body whatever its headers say (RFC 9110 section 6.4.1); its {@code Content-Length}, if any, names the
     * length of the representation and is passed on.
     */
    private static boolean bodyIsEmpty(UpstreamResponse response) {
        try {
            return response.bodyIsEmpty();
        } catch (IOException e) {
            return false; // relayed as it is; the relay meets the same failure
        }
    }

    static void relayResponse(UpstreamResponse response, Exchange exchange) {
        ServerResponse res = exchange.response();
        int code = response.status();
        if (code >= 400 && !isHead(exchange.request()) && bodyIsEmpty(response)) {
            // An error without a body (a store closing the connection on a 400, a bare 403 from a gateway): the
            // client still gets an S3 error it can read, with the store's status.
            S3Xml.error(res, false, code, code == 403 ? "AccessDenied" : code == 404 ? "NoSuchKey"
                            : code == 412 ? "PreconditionFailed" : code >= 500 ? "InternalError" : "InvalidRequest",
                    "the upstream store answered " + code + (response.reason().isEmpty() ? "" : " "
                            + response.reason()) + " without a body", null, Map.of());
            return;
        }
        res.status(Status.create(code, response.reason().isEmpty() ? String.valueOf(code)
                : response.reason()));
        for (int i = 0; i < response.headerCount(); i++) {
            String name = response.name(i);
            String lower = name.toLowerCase(Locale.ROOT);
            // the proxy's own metadata is never shown: a tool that copies what it read of an object onto a new
            // request (s3cmd modify, boto3's copy_object with head_object's Metadata) would send it back
            if (!NOT_RELAYED.contains(lower) && !ObjectMeta.OWN_META.contains(lower)) {
                res.header(HeaderNames.create(name), response.value(i));
            }
        }
        try {
            OptionalLong length = response.contentLength();
            if (response.emptyBody()) {
                if (length.isPresent() && code != 204) {
                    res.header(HeaderNames.CONTENT_LENGTH, Long.toString(length.getAsLong()));
                }
                res.send();
                return;
            }
            if (length.isPresent() && response.first("Transfer-Encoding") == null) {
                res.contentLength(length.getAsLong());
            }
            response.relayBody(res.outputStream());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** No key is a tombstone an anonymous read is told is missing (the serialized class writes none). */
    private static boolean noneDeleted(String bucket, String key) {
        return false;
    }

    static boolean isHead(ServerRequest req) {
        return req.prologue().method().text().equalsIgnoreCase("HEAD");
    }
}
