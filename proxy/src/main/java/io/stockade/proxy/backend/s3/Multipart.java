package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.problem.Problem;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderNames;
import org.jspecify.annotations.Nullable;

/**
 * Multipart uploads through the proxy, for both classes of the S3 backend: which upload a step may name, and what
 * it may do to it.
 * <p>
 * Every step after CreateMultipartUpload names its upload by an ID the proxy handed out ({@link UploadIds}), bound
 * to the object: the ID CreateMultipartUpload answered, which carries the upload's token, or the ID a listing
 * through the proxy showed. A store's own ID is refused (404 {@code NoSuchUpload}), so a writer that learns another
 * holder's upload from ListMultipartUploads cannot put a part into it, and no step names a blob the store happens to
 * keep under that name (s3proxy's local stores keep an upload's metadata in a blob named by its ID, and an
 * AbortMultipartUpload removes it: {@code DELETE k?uploadId=<any key>} deleted that object).
 * <table>
 *   <caption>what each step takes</caption>
 *   <tr><td>UploadPart, UploadPartCopy</td><td>an ID that names the upload's token, fenced on the object with it;
 *   an ID that names none only unfenced (the policy forwards the step without a token)</td></tr>
 *   <tr><td>CompleteMultipartUpload</td><td>as UploadPart</td></tr>
 *   <tr><td>AbortMultipartUpload</td><td>any ID the proxy handed out; fenced on the object with the upload's token,
 *   or for an ID that names none the token the abort carries</td></tr>
 *   <tr><td>ListParts</td><td>any ID the proxy handed out (a read)</td></tr>
 * </table>
 */
final class Multipart {
    private static final Pattern UPLOAD_ID = Pattern.compile("<UploadId>([^<]*)</UploadId>");
    private static final Pattern UPLOAD = Pattern.compile("<Upload>(.*?)</Upload>", Pattern.DOTALL);
    private static final Pattern KEY = Pattern.compile("<Key>([^<]*)</Key>");
    /** The most bytes of an upload listing the proxy reads (a page of 1000 uploads of 1024-byte keys is ~1.5 MB). */
    private static final int MAX_LISTING = 32 * 1024 * 1024;
    /** Response headers a rewritten answer does not take from the store's (its framing is the proxy's). */
    private static final List<String> FRAMING = List.of("content-length", "transfer-encoding", "connection",
            "keep-alive", "content-md5");

    private final Upstream upstream;
    private final S3Failures failures;
    private final UploadIds ids;

    Multipart(Upstream upstream, S3Failures failures, String upstreamSecret) {
        this.upstream = upstream;
        this.failures = failures;
        this.ids = new UploadIds(upstreamSecret);
    }

    /** A request read with its upload ID: the request as the store must get it, and the upload, or a refusal. */
    record Admitted(@Nullable S3Request s3, UploadIds.@Nullable Id upload, @Nullable Problem refusal) {
    }

    /**
     * Reads the {@code uploadId} of a request (any request without one passes as it is): the store gets its own ID;
     * an ID the proxy did not hand out for this object is 404 {@code NoSuchUpload}.
     */
    Admitted admit(S3Request s3) {
        Optional<String> sent = s3.param("uploadId");
        if (sent.isEmpty()) {
            return new Admitted(s3, null, null);
        }
        UploadIds.Id id;
        try {
            id = ids.read(s3.namedBucket(), s3.namedKey(), sent.get()); // only object rows take an uploadId
        } catch (UploadIds.Unknown e) {
            return new Admitted(null, null, S3Problems.of(404, "NoSuchUpload", "The specified multipart "
                    + "upload does not exist: " + e.getMessage() + ". Name an upload by the UploadId its "
                    + "CreateMultipartUpload through the proxy answered", s3.resource()));
        }
        // what an ID that names no token may do is the plan's to say (S3Planner.uploadStep)
        return new Admitted(s3.withUploadId(id.upstream()), id, null);
    }

    /** Why a CompleteMultipartUpload with {@code token} may not end an upload created with {@code created}. */
    static @Nullable Problem completeRefusal(OptionalLong created, long token, @Nullable String resource) {
        if (created.isEmpty()) {
            return S3Problems.of(400, "InvalidRequest", "this upload was created without a fencing token, so "
                    + "its object would carry none; create the upload through the proxy with the token you complete "
                    + "it with", resource);
        }
        if (created.getAsLong() != token) {
            return S3Problems.of(400, "InvalidRequest", "this upload was created with fencing token "
                    + created.getAsLong() + "; complete it with token " + created.getAsLong() + " (its object will "
                    + "carry " + created.getAsLong() + "), or create a new upload with token " + token, resource);
        }
        return null;
    }

    /** Whether a request is ListMultipartUploads. */
    static boolean listsUploads(S3Request s3) {
        return s3.operation() == S3Request.Operation.BUCKET_READ && s3.key() == null
                && s3.param("uploads").isPresent();
    }

    /**
     * CreateMultipartUpload, once its token (if any) is judged: sent upstream with the token in the upload's
     * metadata, answered with the store's answer carrying the proxy's ID for the upload.
     */
    WriteResult create(Exchange exchange, AdmittedRequest p, OptionalLong token) {
        S3Request s3 = p.s3();
        List<Map.Entry<String, String>> headers = Relay.forwardHeaders(exchange, p);
        token.ifPresent(t -> headers.addAll(ObjectMeta.tokenRecord(t)));
        try (UpstreamResponse response = p.send(upstream, "POST", s3.bucket(), s3.key(),
                s3.upstreamQuery(), headers, null)) {
            if (response.status() != 200) {
                Relay.relayResponse(response, exchange);
                return new WriteResult.Answered(response.status());
            }
            String xml = new String(response.readAll(64 * 1024), StandardCharsets.UTF_8);
            Matcher id = UPLOAD_ID.matcher(xml);
            if (!id.find()) {
                return S3Failures.answer(exchange, 502, "InternalError", "the upstream's CreateMultipartUpload answer "
                        + "has no UploadId");
            }
            String wrapped = ids.created(s3.namedBucket(), s3.namedKey(), S3Xml.unescape(id.group(1)), token);
            return send(exchange, response, xml.substring(0, id.start(1)) + S3Xml.escape(wrapped)
                    + xml.substring(id.end(1)));
        } catch (IOException e) {
            return failures.failure(exchange, new UncheckedIOException(e), true);
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, true);
        }
    }

    /**
     * ListMultipartUploads: relayed with each upload's ID replaced by a listed ID for its key, which lists the
     * upload's parts and aborts it, and nothing else. The markers ({@code UploadIdMarker}, {@code
     * NextUploadIdMarker}) stay the store's: they go back only as {@code upload-id-marker}, a position in the listing.
     */
    WriteResult listUploads(Exchange exchange, AdmittedRequest p) {
        S3Request s3 = p.s3();
        try (UpstreamResponse response = p.send(upstream, "GET", s3.bucket(), null, s3.upstreamQuery(),
                Relay.forwardHeaders(exchange, p), null)) {
            if (response.status() != 200) {
                Relay.relayResponse(response, exchange);
                return new WriteResult.Answered(response.status());
            }
            String xml = new String(response.readAll(MAX_LISTING), StandardCharsets.UTF_8);
            return send(exchange, response, listed(s3.namedBucket(), xml));
        } catch (IOException e) {
            return failures.failure(exchange, new UncheckedIOException(e), true);
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, true);
        }
    }

    /** A ListMultipartUploads answer with the listed IDs (an entry without a key keeps the store's: refused). */
    String listed(String bucket, String xml) {
        boolean urlEncoded = xml.contains("<EncodingType>url</EncodingType>");
        Matcher upload = UPLOAD.matcher(xml);
        StringBuilder out = new StringBuilder(xml.length() + 1024);
        while (upload.find()) {
            String entry = upload.group(1);
            Matcher key = KEY.matcher(entry);
            Matcher id = UPLOAD_ID.matcher(entry);
            if (key.find() && id.find()) {
                String wrapped = ids.listed(bucket, Listings.decode(key.group(1), urlEncoded),
                        S3Xml.unescape(id.group(1)));
                entry = entry.substring(0, id.start(1)) + S3Xml.escape(wrapped) + entry.substring(id.end(1));
            }
            upload.appendReplacement(out, Matcher.quoteReplacement("<Upload>" + entry + "</Upload>"));
        }
        upload.appendTail(out);
        return out.toString();
    }

    /** Answers 200 with the store's headers (its framing excepted) and a body the proxy rewrote. */
    private static WriteResult send(Exchange exchange, UpstreamResponse response, String xml) {
        var res = exchange.response();
        res.status(200);
        for (int i = 0; i < response.headerCount(); i++) {
            if (!FRAMING.contains(response.name(i).toLowerCase(Locale.ROOT))) {
                res.header(HeaderNames.create(response.name(i)), response.value(i));
            }
        }
        res.send(xml.getBytes(StandardCharsets.UTF_8));
        return new WriteResult.Answered(200);
    }
}
