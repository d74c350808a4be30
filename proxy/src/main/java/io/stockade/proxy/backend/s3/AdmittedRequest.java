package io.stockade.proxy.backend.s3;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

import io.stockade.proxy.upstream.UpstreamResponse;

import org.jspecify.annotations.Nullable;

/**
 * The request read as S3 and authenticated, once, by {@link S3Admission#admit} for the plan ({@link S3Planner});
 * the plan's actions act on it.
 *
 * @param s3          the request as S3
 * @param verified    its checked signature (null with auth: none, for an unsigned read and for a form)
 * @param upload      the multipart upload the request's upload id names ({@link Multipart}), or null
 * @param unsigned    an unsigned read (or CORS preflight) the policy forwards: sent upstream without the proxy's
 *                    signature, for the store to judge as the anonymous request it is
 * @param form        a browser-form upload, read up to its file; null for any other request
 * @param deletes     a DeleteObjects' body, read and parsed by the plan; null for any other request
 */
record AdmittedRequest(S3Request s3, ClientAuth.@Nullable Verified verified, UploadIds.@Nullable Id upload,
                       boolean unsigned, @Nullable Form form, @Nullable Deletes deletes) {
    AdmittedRequest(S3Request s3, ClientAuth.@Nullable Verified verified, UploadIds.@Nullable Id upload,
                    boolean unsigned) {
        this(s3, verified, upload, unsigned, null, null);
    }

    /** This request with the DeleteObjects body the plan read. */
    AdmittedRequest withDeletes(Deletes read) {
        return new AdmittedRequest(s3, verified, upload, unsigned, form, read);
    }

    /** The token the upload named by the request's {@code uploadId} was created with, if any. */
    OptionalLong uploadToken() {
        return upload == null ? OptionalLong.empty() : upload.token();
    }

    /**
     * Sends a request upstream on the client's behalf: signed by the proxy, or, for an unsigned read the policy
     * forwards, unsigned (the proxy's credentials never answer for an anonymous client).
     */
    UpstreamResponse send(Upstream upstream, String method, @Nullable String bucket, @Nullable String key,
                          List<Map.Entry<String, String>> query, List<Map.Entry<String, String>> headers,
                          Upstream.@Nullable Body body) {
        return unsigned ? upstream.sendUnsigned(method, bucket, key, query, headers, body)
                : upstream.send(method, bucket, key, query, headers, body);
    }

    /**
     * A browser-form upload (POST Object), read up to its file and judged in {@link FormAdmission#admit}.
     *
     * @param form      the form; its file is still to be read
     * @param key       the object's key ({@code ${filename}} filled in)
     * @param minLength the smallest file its policy allows
     * @param maxLength the largest file its policy allows
     * @param fields    its fields by lower-case name (the first of each name)
     */
    record Form(PostForm form, String key, long minLength, long maxLength, Map<String, String> fields) {
    }

    /**
     * A DeleteObjects' body as the plan read it: the bytes (relayed as they are when the store deletes the keys
     * itself), and the keys they name.
     */
    static final class Deletes {
        private final byte[] body;
        private final S3Xml.DeleteRequest request;

        Deletes(byte[] body, S3Xml.DeleteRequest request) {
            this.body = body.clone();
            this.request = request;
        }

        /** The body as the client sent it. */
        byte[] body() {
            return body.clone();
        }

        /** The keys it names, and whether the answer is quiet. */
        S3Xml.DeleteRequest request() {
            return request;
        }
    }
}
