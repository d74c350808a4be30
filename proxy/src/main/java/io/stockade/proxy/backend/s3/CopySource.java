package io.stockade.proxy.backend.s3;

import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.stockade.policy.RequestTarget;

import io.helidon.http.HeaderNames;
import io.helidon.webserver.http.ServerRequest;
import org.jspecify.annotations.Nullable;

/**
 * The object a CopyObject or UploadPartCopy reads ({@code x-amz-copy-source}), and its version query.
 *
 * @param bucket the source's bucket
 * @param key    the source's key
 * @param query  its {@code versionId}, if any
 */
record CopySource(String bucket, String key, List<Map.Entry<String, String>> query) {

    /** The request's {@code x-amz-copy-source}; a malformed one is a {@link ClientError} (400). */
    static CopySource of(ServerRequest req) {
        String source = req.headers().first(HeaderNames.create("x-amz-copy-source")).orElse("");
        String decoded;
        try {
            decoded = SigV4.decode(source);
        } catch (IllegalArgumentException e) {
            throw new ClientError(400, "InvalidArgument", "x-amz-copy-source has a bad escape");
        }
        String versionId = null;
        int q = decoded.indexOf("?versionId=");
        if (q >= 0) {
            versionId = decoded.substring(q + "?versionId=".length());
            decoded = decoded.substring(0, q);
        }
        if (decoded.startsWith("/")) {
            decoded = decoded.substring(1);
        }
        int slash = decoded.indexOf('/');
        if (slash <= 0 || slash == decoded.length() - 1) {
            throw new ClientError(400, "InvalidArgument", "x-amz-copy-source must be bucket/key");
        }
        return new CopySource(decoded.substring(0, slash), decoded.substring(slash + 1), versionId == null
                ? List.of() : List.of(Map.entry("versionId", versionId)));
    }

    /**
     * The request target a GET of the source would be routed by: {@code /bucket/key}, or {@code /key} when the
     * request names its bucket in its host ({@code hostBucket}, virtual-host style) and the source is in that bucket;
     * empty when no target of the proxy names it (another bucket under virtual-host style, a key the proxy refuses).
     */
    Optional<RequestTarget> target(@Nullable String hostBucket) {
        StringBuilder path = new StringBuilder();
        if (hostBucket == null) {
            path.append('/').append(RequestTarget.encodeSegment(bucket));
        } else if (!hostBucket.equals(bucket)) {
            return Optional.empty();
        }
        for (String segment : key.split("/", -1)) {
            path.append('/').append(RequestTarget.encodeSegment(segment));
        }
        return RequestTarget.of(path.toString());
    }
}
