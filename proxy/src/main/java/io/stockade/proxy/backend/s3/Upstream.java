package io.stockade.proxy.backend.s3;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import javax.net.ssl.SSLContext;

import io.stockade.policy.BackendConfig;
import io.stockade.proxy.tls.ClientTlsFiles;
import io.stockade.proxy.upstream.UpstreamClient;
import io.stockade.proxy.upstream.UpstreamFailure;
import io.stockade.proxy.upstream.UpstreamResponse;

import org.jspecify.annotations.Nullable;

/**
 * The proxy's own S3 client: signs each request with SigV4 and the proxy's credentials ({@code UNSIGNED-PAYLOAD},
 * so bodies stream without being read twice) and sends it through the proxy's pooled keep-alive
 * {@link UpstreamClient}. What is signed is exactly what goes on the wire: the path (built from the decoded bucket
 * and key) and the query are written once in SigV4's canonical encoding and sent byte for byte.
 */
final class Upstream {
    private final BackendConfig.S3 config;
    private final UpstreamClient client;
    private final String host;
    private final String basePath;

    Upstream(BackendConfig.S3 config) {
        this.config = config;
        URI endpoint = config.endpoint();
        String path = endpoint.getRawPath();
        this.basePath = path == null || path.equals("/") ? "" : path.replaceAll("/+$", "");
        String name = endpoint.getHost();
        this.host = name.startsWith("[") ? name.substring(1, name.length() - 1) : name;
        try {
            SSLContext ssl = config.tls() == null ? null
                    : ClientTlsFiles.read(config.tls(), "backend " + config.endpoint() + " tls").sslContext();
            this.client = UpstreamClient.create(endpoint, ssl, Duration.ofSeconds(5), config.maxConnections());
        } catch (IOException e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    /** A request body: its exact length and a way to write it. */
    interface Body {
        long length();

        void writeTo(OutputStream out) throws IOException;

        static Body of(byte[] bytes) {
            return new Body() {
                @Override
                public long length() {
                    return bytes.length;
                }

                @Override
                public void writeTo(OutputStream out) throws IOException {
                    out.write(bytes);
                }
            };
        }

        static Body of(InputStream in, long length) {
            return new Body() {
                @Override
                public long length() {
                    return length;
                }

                @Override
                public void writeTo(OutputStream out) throws IOException {
                    byte[] buffer = new byte[64 * 1024];
                    long left = length;
                    int n;
                    while (left > 0 && (n = in.read(buffer, 0, (int) Math.min(buffer.length, left))) >= 0) {
                        out.write(buffer, 0, n);
                        left -= n;
                    }
                    if (left > 0) {
                        throw new IOException("the body ended " + left + " bytes short of its declared length");
                    }
                    if (in.read() >= 0) {
                        throw new PayloadReader.Rejected(400, "IncompleteBody",
                                "the body is longer than its declared length");
                    }
                }
            };
        }
    }

    /**
     * Sends a signed request. The caller closes the response.
     *
     * @param headers headers to send (lower-case names); the proxy's own Host, date, payload and
     *                Authorization are added here
     * @param body    the body, or null
     * @throws UncheckedIOException with an {@link UpstreamFailure} as its cause when no answer came; a body that
     *                              could not be read is an {@link UpstreamClient.AbandonedBody} whose cause says why
     */
    UpstreamResponse send(String method, @Nullable String bucket, @Nullable String key,
                          List<Map.Entry<String, String>> query, List<Map.Entry<String, String>> headers,
                          @Nullable Body body) {
        return send(method, bucket, key, query, headers, body, true);
    }

    /**
     * Sends a request <em>without</em> the proxy's signature (no {@code Authorization}, no SigV4 headers): for an
     * unsigned read a policy forwards ({@code unsigned-reads: forward}), which the store then judges as the
     * anonymous request it is. Otherwise as {@link #send(String, String, String, List, List, Body)}.
     */
    UpstreamResponse sendUnsigned(String method, @Nullable String bucket, @Nullable String key,
                                  List<Map.Entry<String, String>> query, List<Map.Entry<String, String>> headers,
                                  @Nullable Body body) {
        return send(method, bucket, key, query, headers, body, false);
    }

    private UpstreamResponse send(String method, @Nullable String bucket, @Nullable String key,
                                  List<Map.Entry<String, String>> query, List<Map.Entry<String, String>> headers,
                                  @Nullable Body body, boolean sign) {
        String targetHost = config.pathStyle() || bucket == null ? host : bucket + "." + host;
        String decodedPath = basePath.isEmpty() ? "" : SigV4.decode(basePath);
        if (config.pathStyle()) {
            decodedPath += "/" + (bucket == null ? "" : bucket + (key == null ? "" : "/" + key));
        } else {
            decodedPath += "/" + (key == null ? "" : key);
        }
        String amzDate = ClientAuth.AMZ_DATE.format(Instant.now());
        TreeMap<String, String> signed = new TreeMap<>();
        signed.put("host", client.authority(targetHost));
        signed.put("x-amz-date", amzDate);
        signed.put("x-amz-content-sha256", SigV4.UNSIGNED_PAYLOAD);
        List<Map.Entry<String, String>> unsigned = new ArrayList<>();
        for (Map.Entry<String, String> h : headers) {
            String name = h.getKey();
            if (name.startsWith("x-amz-") || name.equals("content-md5") || name.equals("content-type")) {
                signed.merge(name, h.getValue(), (a, b) -> a + "," + b);
            } else {
                unsigned.add(h);
            }
        }
        String date = amzDate.substring(0, 8);
        String scope = date + "/" + config.region() + "/s3/aws4_request";
        String canonical = SigV4.canonicalRequest(method, decodedPath, query, signed, SigV4.UNSIGNED_PAYLOAD);
        String signature = SigV4.signature(SigV4.signingKey(config.secretKey(), date, config.region(), "s3"),
                SigV4.stringToSign(amzDate, scope, canonical));
        String authorization = SigV4.ALGORITHM + " Credential=" + config.accessKey() + "/" + scope
                + ", SignedHeaders=" + String.join(";", signed.keySet()) + ", Signature=" + signature;

        String canonicalQuery = SigV4.canonicalQuery(query);
        String target = SigV4.encode(decodedPath, false) + (canonicalQuery.isEmpty() ? "" : "?" + canonicalQuery);
        UpstreamClient.Request request = client.request(method, targetHost, target);
        signed.forEach((name, value) -> {
            if (!name.equals("host") && (sign || !(name.equals("x-amz-date") || name.equals("x-amz-content-sha256")))) {
                request.header(name, value);
            }
        });
        unsigned.forEach(h -> request.header(h.getKey(), h.getValue()));
        if (sign) {
            request.header("authorization", authorization);
        }
        try {
            if (body == null) {
                if (method.equals("PUT") || method.equals("POST")) {
                    request.header("content-length", "0");
                }
                return request.send(config.timeout());
            }
            if (body.length() == 0) {
                request.header("content-length", "0");
                return request.send(config.timeout());
            }
            return request.send(config.timeout(), body.length(), body::writeTo);
        } catch (UpstreamFailure e) {
            throw new UncheckedIOException(e.getMessage(), e);
        }
    }

    /** A start-up check of the endpoint (see {@link UpstreamClient#probe}). */
    Optional<UpstreamFailure> probe() {
        return client.probe(host);
    }

    void close() {
        client.close();
    }
}
