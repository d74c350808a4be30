package io.stockade.proxy.backend.s3;

import io.helidon.common.socket.SocketOptions;
import io.helidon.http.HeaderNames;
import io.helidon.http.Method;
import io.helidon.webclient.api.HttpClientRequest;
import io.helidon.webclient.api.HttpClientResponse;
import io.helidon.webclient.api.WebClient;
import io.helidon.webclient.api.WebClientConfig;
import io.stockade.policy.BackendConfig;
import io.stockade.proxy.http.UpstreamTls;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URI;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;

/**
 * The proxy's own S3 client: signs each request with SigV4 and the proxy's credentials ({@code UNSIGNED-PAYLOAD},
 * so bodies stream without being read twice) and sends it through a pooled keep-alive Helidon client. What is
 * signed is exactly what goes on the wire: the path and query are written in SigV4's canonical encoding.
 */
final class Upstream {
    private final BackendConfig.S3 config;
    private final WebClient client;
    private final String scheme;
    private final String host;
    private final String basePath;

    Upstream(BackendConfig.S3 config) {
        this.config = config;
        URI endpoint = config.endpoint();
        this.scheme = endpoint.getScheme().toLowerCase(Locale.ROOT);
        int port = endpoint.getPort();
        boolean defaultPort = port < 0 || (scheme.equals("http") && port == 80) || (scheme.equals("https")
                && port == 443);
        this.host = endpoint.getHost() + (defaultPort ? "" : ":" + port);
        String path = endpoint.getRawPath();
        this.basePath = path == null || path.equals("/") ? "" : path.replaceAll("/+$", "");
        WebClientConfig.Builder builder = WebClient.builder();
        try {
            UpstreamTls.configure(builder, endpoint, config.tls(), "backend " + config.endpoint() + " tls");
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e.getMessage(), e);
        }
        this.client = builder
                .followRedirects(false)
                .shareConnectionCache(false)
                .connectionCacheSize(config.maxConnections())
                .sendExpectContinue(false)
                .socketOptions(SocketOptions.builder()
                        .connectTimeout(java.time.Duration.ofSeconds(5))
                        .readTimeout(config.timeout())
                        .build())
                .build();
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
     */
    HttpClientResponse send(String method, String bucket, String key, List<Map.Entry<String, String>> query,
                            List<Map.Entry<String, String>> headers, Body body) {
        String targetHost = config.pathStyle() || bucket == null ? host : bucket + "." + host;
        String decodedPath = basePath.isEmpty() ? "" : SigV4.decode(basePath);
        if (config.pathStyle()) {
            decodedPath += "/" + (bucket == null ? "" : bucket + (key == null ? "" : "/" + key));
        } else {
            decodedPath += "/" + (key == null ? "" : key);
        }
        String amzDate = ClientAuth.AMZ_DATE.format(Instant.now());
        TreeMap<String, String> signed = new TreeMap<>();
        signed.put("host", targetHost);
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
        String uri = scheme + "://" + targetHost + SigV4.encode(decodedPath, false)
                + (canonicalQuery.isEmpty() ? "" : "?" + canonicalQuery);
        HttpClientRequest request = client.method(Method.create(method))
                .uri(uri)
                .skipUriEncoding(true)
                .readTimeout(config.timeout());
        signed.forEach((name, value) -> {
            if (!name.equals("host")) {
                request.header(HeaderNames.create(name), value);
            }
        });
        unsigned.forEach(h -> request.header(HeaderNames.create(h.getKey()), h.getValue()));
        request.header(HeaderNames.AUTHORIZATION, authorization);
        if (body == null) {
            if (method.equals("PUT") || method.equals("POST")) {
                request.header(HeaderNames.CONTENT_LENGTH, "0");
            }
            return request.request();
        }
        request.header(HeaderNames.CONTENT_LENGTH, Long.toString(body.length()));
        if (body.length() == 0) {
            return request.submit(new byte[0]);
        }
        return request.outputStream(out -> {
            try {
                body.writeTo(out);
                out.close(); // checks the length; only a whole body completes the request
            } catch (IOException | RuntimeException | Error e) {
                // The request stays incomplete (fewer bytes than its Content-Length), so nothing lands; its
                // connection is closed, as Helidon leaves it open when this handler throws.
                io.stockade.proxy.http.AbandonedConnection.close(out);
                throw e;
            }
        });
    }

    void close() {
        // The client's pooled connections close with the JVM.
    }
}
