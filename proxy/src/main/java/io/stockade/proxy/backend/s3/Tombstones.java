package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.backend.Exchange;
import io.stockade.proxy.backend.WriteResult;
import io.stockade.proxy.upstream.UpstreamResponse;

import io.helidon.http.HeaderNames;
import org.jspecify.annotations.Nullable;

/**
 * What the atomic class's tombstones change for the requests it forwards: a listing is answered without them
 * ({@link Listings}), a bucket only tombstones keep is not removed (DeleteBucket), and an anonymous read of one is
 * told the key is missing when S3 would say so. A tombstone itself is written by {@link AtomicClass} (its bytes:
 * {@link Tombstone}).
 */
final class Tombstones {
    private final Upstream upstream;
    private final ConditionalWrite writes;
    private final S3Failures failures;

    Tombstones(Upstream upstream, ConditionalWrite writes, S3Failures failures) {
        this.upstream = upstream;
        this.writes = writes;
        this.failures = failures;
    }

    /**
     * An unsigned read the store refused (403): whether the key is a tombstone that an anonymous client would be
     * told is missing: the atomic class hands it to {@link Relay} with each read it forwards.
     */
    boolean deletedForAnonymous(String bucket, String key) {
        ConditionalWrite.Head head = writes.head(bucket, key);
        return !head.failed() && head.tombstone() && anonymousMayList(bucket, key);
    }

    /** Whether an anonymous client may list a bucket (S3 then answers 404 for a missing key, else 403). */
    private boolean anonymousMayList(String bucket, String key) {
        try (UpstreamResponse r = upstream.sendUnsigned("GET", bucket, null, List.of(Map.entry("list-type", "2"),
                Map.entry("max-keys", "1"), Map.entry("prefix", key)), List.of(), null)) {
            return r.status() == 200;
        } catch (RuntimeException e) {
            return false;
        }
    }

    /** The most bytes of a listing the proxy reads to edit (a page of 1000 keys of 1024 bytes is ~1.5 MB). */
    private static final int MAX_LISTING = 32 * 1024 * 1024;

    /** A listing answered without its tombstones ({@link Listings}). */
    WriteResult listing(Exchange exchange, AdmittedRequest p) {
        S3Request s3 = p.s3();
        try (UpstreamResponse response = p.send(upstream, "GET", s3.bucket(), null, s3.upstreamQuery(),
                Relay.forwardHeaders(exchange, p), null)) {
            if (response.status() != 200) {
                return relayed(exchange, response);
            }
            String xml = new String(response.readAll(MAX_LISTING), StandardCharsets.UTF_8);
            Listings.Kind kind = s3.operation() == S3Request.Operation.LIST_OBJECT_VERSIONS ? Listings.Kind.VERSIONS
                    : s3.param("list-type").orElse("1").equals("2") ? Listings.Kind.V2 : Listings.Kind.V1;
            boolean urlEncoded = s3.param("encoding-type").map("url"::equalsIgnoreCase).orElse(false);
            Listings.Filtered filtered;
            try {
                filtered = Listings.filter(xml, kind, urlEncoded, probe(s3.namedBucket()));
            } catch (Listings.Unavailable e) {
                return answer(exchange, 503, "ServiceUnavailable", "the listing could not be answered without its "
                        + "tombstones: " + e.getMessage());
            }
            var res = exchange.response();
            res.status(200);
            for (int i = 0; i < response.headerCount(); i++) {
                String name = response.name(i).toLowerCase(Locale.ROOT);
                if (!name.equals("content-length") && !name.equals("transfer-encoding") && !name.equals("connection")
                        && !name.equals("keep-alive") && !name.equals("content-md5")) {
                    res.header(HeaderNames.create(response.name(i)), response.value(i));
                }
            }
            res.send(filtered.xml().getBytes(StandardCharsets.UTF_8));
            return new WriteResult.Answered(200);
        } catch (IOException e) {
            return failures.failure(exchange, new UncheckedIOException(e), true);
        } catch (ClientError e) {
            return answer(exchange, e.status, e.code, e.getMessage());
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, true);
        }
    }

    /** The store's view of a bucket's entries: HEAD for tombstones, a listing for prefixes. */
    private Listings.Probe probe(String bucket) {
        return new Listings.Probe() {
            @Override
            public boolean tombstone(String key, @Nullable String versionId) {
                List<Map.Entry<String, String>> query = versionId == null ? List.of()
                        : List.of(Map.entry("versionId", versionId));
                try (UpstreamResponse r = upstream.send("HEAD", bucket, key, query, List.of(), null)) {
                    return switch (r.status()) {
                        case 200 -> r.first(ObjectMeta.DELETED_META) != null;
                        case 404 -> true; // gone since it was listed: nothing to show
                        default -> throw new Listings.Unavailable("HEAD of '" + key + "' answered " + r.status());
                    };
                }
            }

            @Override
            public boolean live(String prefix) {
                return onlyTombstones(bucket, prefix, PREFIX_PAGES).isEmpty();
            }
        };
    }

    /** How many pages of a prefix are read to find it holds only tombstones; past that it is taken as live. */
    private static final int PREFIX_PAGES = 3;

    /**
     * Whether only tombstones are left under a prefix of a bucket, reading at most {@code pages} pages.
     *
     * @return empty when something else lives there (or the pages ran out: taken as live); else the count of
     * tombstones and the highest token they hold
     */
    private Optional<long[]> onlyTombstones(String bucket, String prefix, int pages) {
        long count = 0;
        long highest = -1;
        String next = null;
        for (int page = 0; page < pages; page++) {
            List<Map.Entry<String, String>> query = new ArrayList<>();
            query.add(Map.entry("list-type", "2"));
            query.add(Map.entry("max-keys", "1000"));
            if (!prefix.isEmpty()) {
                query.add(Map.entry("prefix", prefix));
            }
            if (next != null) {
                query.add(Map.entry("continuation-token", next));
            }
            Listings.Page listed;
            try (UpstreamResponse r = upstream.send("GET", bucket, null, query, List.of(), null)) {
                if (r.status() != 200) {
                    throw new Listings.Unavailable("listing '" + prefix + "' answered " + r.status());
                }
                listed = Listings.page(new String(r.readAll(MAX_LISTING), StandardCharsets.UTF_8));
            } catch (IOException e) {
                throw new Listings.Unavailable("listing '" + prefix + "' failed: " + e.getMessage());
            }
            for (Listings.Entry entry : listed.entries()) {
                if (!Tombstone.maySize(entry.size())) {
                    return Optional.empty();
                }
                ConditionalWrite.Head head = writes.head(bucket, entry.key());
                String failure = head.failure();
                if (failure != null) { // head.failed()
                    throw new Listings.Unavailable(failure);
                }
                if (head.exists() && !head.tombstone()) {
                    return Optional.empty();
                }
                if (head.tombstone()) {
                    count++;
                    highest = Math.max(highest, head.token());
                }
            }
            if (listed.next() == null) {
                return Optional.of(new long[]{count, highest});
            }
            next = listed.next();
        }
        return Optional.empty();
    }

    /** How many pages of a bucket DeleteBucket reads to tell "only tombstones" (and say how many). */
    private static final int BUCKET_PAGES = 10;

    /**
     * DeleteBucket. Removing a bucket that holds only tombstones would drop the fences of its deleted objects: a
     * writer with an older lease could then recreate the bucket and those objects. So the proxy does not remove
     * them; when the store refuses the bucket as not empty and only tombstones are left, the answer says so, with
     * how many and the highest token, and what to do (docs/s3.md).
     */
    WriteResult deleteBucket(Exchange exchange, AdmittedRequest p) {
        S3Request s3 = p.s3();
        try (UpstreamResponse response = p.send(upstream, "DELETE", s3.bucket(), null, s3.upstreamQuery(),
                Relay.forwardHeaders(exchange, p), null)) {
            if (response.status() != 409) {
                return relayed(exchange, response);
            }
            byte[] body = response.readAll(64 * 1024);
            String xml = new String(body, StandardCharsets.UTF_8);
            Optional<long[]> tombstones = xml.contains("BucketNotEmpty")
                    ? onlyTombstones(s3.namedBucket(), "", BUCKET_PAGES) : Optional.empty();
            if (tombstones.isEmpty()) {
                exchange.response().status(409);
                exchange.response().header(HeaderNames.CONTENT_TYPE, "application/xml");
                exchange.response().send(body);
                return new WriteResult.Answered(409);
            }
            long[] t = tombstones.get();
            return answer(exchange, 409, "BucketNotEmpty", "The bucket you tried to delete is not empty: it holds no "
                    + "objects, but " + t[0] + " tombstone" + (t[0] == 1 ? "" : "s") + " (the fencing tokens of "
                    + "deleted objects, highest " + t[1] + "). The fencing proxy keeps them: removing the bucket "
                    + "would let a writer holding a lease older than token " + t[1] + " recreate the bucket and "
                    + "those objects. Once no such writer can be alive, remove the bucket at the store itself "
                    + "(aws --endpoint-url <store> s3 rb --force s3://" + s3.bucket() + "); see docs/s3.md");
        } catch (Listings.Unavailable e) {
            return answer(exchange, 503, "ServiceUnavailable", "the bucket is not empty and the proxy could not tell "
                    + "whether only tombstones are left: " + e.getMessage());
        } catch (IOException e) {
            return failures.failure(exchange, new UncheckedIOException(e), true);
        } catch (RuntimeException e) {
            return failures.failure(exchange, e, true);
        }
    }

    private WriteResult answer(Exchange exchange, int status, String code, String message) {
        return S3Failures.answer(exchange, status, code, message);
    }

    private static WriteResult relayed(Exchange exchange, UpstreamResponse response) {
        return ConditionalWrite.relayed(exchange, response);
    }
}
