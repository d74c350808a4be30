package io.stockade.proxy.backend.s3;

import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.Fencing;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.upstream.UpstreamFailure;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;

/**
 * The atomic class's CopyObject ({@link AtomicClass}): a read of the source and a conditional PUT of the
 * destination through the proxy ({@link ConditionalWrite}), the source's metadata kept or replaced as the request
 * says, the proxy's own metadata never copied; a tombstone as the source is a missing one.
 */
final class ConditionalCopy {
    private static final DateTimeFormatter ISO = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'")
            .withZone(ZoneOffset.UTC);

    private final Upstream upstream;
    private final ConditionalWrite writes;

    ConditionalCopy(Upstream upstream, ConditionalWrite writes) {
        this.upstream = upstream;
        this.writes = writes;
    }

    /** CopyObject under {@code token}, judged by the plan's {@code rule} on the destination. */
    WriteResult write(Exchange exchange, AdmittedRequest p, long token, Fencing.Rule rule) {
        S3Request s3 = p.s3();
        ServerRequest req = exchange.request();
        CopySource source = CopySource.of(req);
        String srcBucket = source.bucket();
        String srcKey = source.key();
        List<Map.Entry<String, String>> srcQuery = source.query();
        List<Map.Entry<String, String>> srcConditions = new ArrayList<>();
        for (String c : List.of("if-match", "if-none-match", "if-modified-since", "if-unmodified-since")) {
            req.headers().first(HeaderNames.create("x-amz-copy-source-" + c))
                    .ifPresent(v -> srcConditions.add(Map.entry(c, v)));
        }
        boolean replace = req.headers().first(HeaderNames.create("x-amz-metadata-directive"))
                .map(v -> v.equalsIgnoreCase("REPLACE")).orElse(false);
        List<Map.Entry<String, String>> clientHeaders = new ArrayList<>();
        for (Map.Entry<String, String> h : Relay.forwardHeaders(exchange, p)) {
            String n = h.getKey();
            if (n.startsWith("x-amz-copy-source") || n.equals("x-amz-metadata-directive")
                    || (!replace && (n.startsWith("x-amz-meta-") || n.equals("content-type")))) {
                continue;
            }
            clientHeaders.add(h);
        }
        // The copy is a read of the source and a conditional PUT of the destination through the proxy: S3's
        // conditional writes are documented for PutObject, not reliably for CopyObject at every store.
        String[] lastEtag = new String[1];
        return writes.write(exchange, s3.namedBucket(), s3.namedKey(), token, rule,
                true, ConditionalWrite.Remember.OBJECT, etag -> {
            UpstreamResponse src = upstream.send("GET", srcBucket, srcKey, srcQuery, srcConditions, null);
            int status = src.status();
            if (status != 200 || (src.first(ObjectMeta.DELETED_META) != null)) {
                try (src) {
                    if (status == 200 || status == 404) {
                        throw new ConditionalWrite.Answered(S3Failures.answer(exchange, 404, "NoSuchKey",
                                "The specified copy source does not exist."));
                    }
                    int mapped = status == 304 || status == 412 ? 412 : status;
                    throw new ConditionalWrite.Answered(S3Failures.answer(exchange, mapped,
                            mapped == 412 ? "PreconditionFailed" : "CopySourceUnavailable",
                            "the copy source answered " + status));
                }
            }
            List<Map.Entry<String, String>> headers = new ArrayList<>(clientHeaders);
            if (!replace) {
                for (int i = 0; i < src.headerCount(); i++) {
                    String n = src.name(i).toLowerCase(Locale.ROOT);
                    if ((n.startsWith("x-amz-meta-") && !ObjectMeta.OWN_META.contains(n))
                            || n.equals("content-type") || n.equals("cache-control") || n.equals("content-disposition")
                            || n.equals("content-encoding") || n.equals("content-language") || n.equals("expires")) {
                        headers.add(Map.entry(n, src.value(i)));
                    }
                }
            }
            headers.addAll(ObjectMeta.tokenRecord(token));
            long length;
            try {
                length = src.contentLength().orElse(0);
            } catch (UpstreamFailure e) {
                src.close();
                throw new UncheckedIOException(e.getMessage(), e);
            }
            InputStream in = src.body();
            try {
                return upstream.send("PUT", s3.bucket(), s3.key(), List.of(),
                        ConditionalWrite.conditional(headers, etag), length == 0 ? null : Upstream.Body.of(in, length));
            } finally {
                src.close();
            }
        }, response -> {
            lastEtag[0] = Objects.requireNonNullElse(response.first("ETag"), "");
            String xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<CopyObjectResult xmlns=\"" + S3Xml.NS
                    + "\"><LastModified>" + ISO.format(Instant.now()) + "</LastModified><ETag>"
                    + S3Xml.escape(lastEtag[0]) + "</ETag></CopyObjectResult>";
            exchange.response().header(HeaderNames.CONTENT_TYPE, "application/xml");
            exchange.response().status(200).send(xml.getBytes(StandardCharsets.UTF_8));
            return new WriteResult.Answered(200);
        });
    }
}
