package io.stockade.proxy;

import java.net.URI;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.function.Consumer;

import io.stockade.proxy.testing.RawHttp;

import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.awscore.AwsRequestOverrideConfiguration;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.S3Configuration;
import software.amazon.awssdk.services.s3.presigner.S3Presigner;

/**
 * A real S3 server in-process ({@code org.gaul:s3proxy} 3.0.0 over a transient blob store) with the Stockade
 * proxy in front of it, and AWS SDK v2 clients with default settings except endpoint, path style and
 * credentials.
 * <p>
 * s3proxy 3.0.0 honours {@code If-Match} / {@code If-None-Match} on PutObject one request at a time, but its
 * check-and-put is <em>not atomic</em> under concurrent writers (several winners per round, see S3RacingWritersIT). The
 * proxy serializes the writes of each object within one replica, so the tests here are correct for one proxy;
 * a cross-replica race against s3proxy would find violations caused by the store itself.
 */
public final class S3Fixture implements AutoCloseable {
    public static final String UPSTREAM_KEY = "upstream-key";
    public static final String UPSTREAM_SECRET = "upstream-secret";
    public static final String APP_KEY = "app-key";
    public static final String APP_SECRET = "app-secret";

    /** The policy with the backend's options at their defaults ({@link #policy}). */
    public static final String POLICY = policy(Map.of());

    public final S3Proxy s3proxy;
    public final BlobStoreContext blobs;
    public final ProxyFixture proxy;

    private S3Fixture(S3Proxy s3proxy, BlobStoreContext blobs, ProxyFixture proxy) {
        this.s3proxy = s3proxy;
        this.blobs = blobs;
        this.proxy = proxy;
    }

    public static S3Fixture start(Path journal) throws Exception {
        return start(journal, Map.of());
    }

    public static S3Fixture start(Path journal, Map<String, String> vars) throws Exception {
        return start(journal, vars, "transient", null);
    }

    /**
     * An s3proxy over the blob store {@code provider}: jclouds' {@code transient} (a map in memory), jclouds'
     * {@code filesystem} or s3proxy's own {@code filesystem-nio2} in the directory {@code filesystemRoot} (objects
     * are files there, their metadata in extended attributes; {@code scripts/s3proxy.sh} runs the latter).
     * Besides the policy's variables, {@code vars} may say {@code BUCKET_WRITES} (a YAML list) and
     * {@code DISTINCT_KEYS} (true or false): the backend options of those names, left out of the policy otherwise.
     */
    public static S3Fixture start(Path journal, Map<String, String> vars, String provider, Path filesystemRoot)
            throws Exception {
        Properties properties = new Properties();
        if (filesystemRoot != null) {
            properties.setProperty("jclouds.filesystem.basedir", filesystemRoot.toString());
        }
        BlobStoreContext blobs = ContextBuilder.newBuilder(provider)
                .credentials("identity", "credential")
                .overrides(properties)
                .build(BlobStoreContext.class);
        S3Proxy s3proxy = S3Proxy.builder()
                .blobStore(blobs.getBlobStore())
                .awsAuthentication(AuthenticationType.AWS_V4, UPSTREAM_KEY, UPSTREAM_SECRET)
                .endpoint(URI.create("http://127.0.0.1:0"))
                // s3proxy answers 501 to x-amz- headers it does not know, such as the x-amz-checksum-mode the
                // default SDK sends with GetObject, even straight from the SDK: not the proxy's business.
                .ignoreUnknownHeaders(true)
                .build();
        s3proxy.start();
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (!s3proxy.getState().equals("STARTED") && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        Map<String, String> env = new java.util.HashMap<>(vars);
        env.put("S3PORT", Integer.toString(s3proxy.getPort()));
        ProxyFixture proxy = ProxyFixture.start(journal, policy(vars), env);
        return new S3Fixture(s3proxy, blobs, proxy);
    }

    /**
     * The policy: {@code s3} (every path but the root) and {@code s3-root} (the root, ListBuckets) over the same s3
     * backend at {@code ${S3PORT}}, each option a variable with its default; with the backend options
     * {@code BUCKET_WRITES} and {@code DISTINCT_KEYS} when vars name them.
     */
    public static String policy(Map<String, String> vars) {
        List<String> options = new ArrayList<>(List.of(
                "access-key: " + UPSTREAM_KEY,
                "secret-key: " + UPSTREAM_SECRET,
                "auth: ${AUTH:-sigv4}",
                "signed-token: ${SIGNED_TOKEN:-true}",
                "token-from-metadata: ${TOKEN_FROM_METADATA:-false}",
                "unsigned-reads: ${UNSIGNED_READS:-refuse}",
                "fence-scope: ${FENCE_SCOPE:-object}",
                "conditional-writes: ${CONDITIONAL_WRITES:-true}",
                "etag-cache: ${ETAG_CACHE:-0}",
                "timeout: ${S3_TIMEOUT:-10s}"));
        if (vars.containsKey("BUCKET_WRITES")) {
            options.add("bucket-writes: " + vars.get("BUCKET_WRITES"));
        }
        if (vars.containsKey("DISTINCT_KEYS")) {
            options.add("distinct-keys: " + vars.get("DISTINCT_KEYS"));
        }
        options.add("clients:\n  - {access-key: " + APP_KEY + ", secret-key: " + APP_SECRET + "}");
        String endpoint = "endpoint: http://127.0.0.1:${S3PORT}";
        String[] backend = options.toArray(String[]::new);
        return TestPolicies.memoryStore()
                .server("limits: {read-timeout: \"${READ_TIMEOUT:-30s}\"}")
                .policy("s3", "/{path...}", "s3")
                .fence("missing: \"${MISSING_TOKEN:-reject}\"", "mode: \"${FENCE_MODE:-enforce}\"",
                        "equal: \"${EQUAL_TOKEN:-accept}\"", "max-advance: ${MAX_ADVANCE:-9223372036854775807}")
                .limits("body-timeout: \"${BODY_TIMEOUT:-5m}\"", "max-scope-bytes: ${MAX_SCOPE_BYTES:-4096}")
                .backend("s3", endpoint, backend)
                .policy("s3-root", "/", "s3")
                .backend("s3", endpoint, backend)
                .yaml();
    }

    /** A request's override that sends {@code token} as the {@code Fencing-Token} header (the SDK signs it). */
    public static Consumer<AwsRequestOverrideConfiguration.Builder> token(long token) {
        return o -> o.putHeader("Fencing-Token", Long.toString(token));
    }

    /** Another proxy (replica) in front of the same s3proxy, with the same policy and these variables. */
    public ProxyFixture anotherProxy(Path journal, Map<String, String> vars) throws Exception {
        Map<String, String> env = new java.util.HashMap<>(vars);
        env.putIfAbsent("S3PORT", Integer.toString(s3proxy.getPort()));
        return ProxyFixture.start(journal, policy(vars), env);
    }

    public URI proxyUri() {
        return proxy.uri("");
    }

    public URI directUri() {
        return URI.create("http://127.0.0.1:" + s3proxy.getPort());
    }

    /** An SDK client through the proxy: defaults except endpoint, path style and credentials. */
    public S3Client client() {
        return client(proxyUri(), APP_KEY, APP_SECRET);
    }

    /** An SDK client straight to s3proxy. */
    public S3Client direct() {
        return client(directUri(), UPSTREAM_KEY, UPSTREAM_SECRET);
    }

    public static S3Client client(URI endpoint, String key, String secret) {
        return S3Client.builder()
                .endpointOverride(endpoint)
                .region(Region.US_EAST_1)
                .forcePathStyle(true)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key, secret)))
                .build();
    }

    /**
     * An SDK client that computes request checksums only when an operation requires them: s3proxy refuses the SDK's
     * default trailing checksums ({@code XAmzContentSHA256Mismatch}), so a client writing straight to it needs this.
     */
    public static S3Client clientWithRequiredChecksumsOnly(URI endpoint, String key, String secret) {
        return S3Client.builder()
                .endpointOverride(endpoint)
                .region(Region.US_EAST_1)
                .forcePathStyle(true)
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(key, secret)))
                .build();
    }

    public S3Presigner presigner() {
        return S3Presigner.builder()
                .endpointOverride(proxyUri())
                .region(Region.US_EAST_1)
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(APP_KEY,
                        APP_SECRET)))
                .build();
    }

    /**
     * A request written byte for byte and signed with SigV4 by the client key ({@link #APP_KEY}), for what the SDK
     * will not send: a sub-resource with a body, a header left out of the signature, parameters a presigner of
     * another SDK hoists into the query. Query parameters and header values are given decoded.
     */
    public static final class Raw {
        private final String method;
        private String wireMethod;
        private final String path;
        private final java.util.List<Map.Entry<String, String>> query = new java.util.ArrayList<>();
        private final Map<String, String> signed = new java.util.TreeMap<>();
        private final Map<String, String> unsigned = new java.util.LinkedHashMap<>();
        private String body;
        private boolean presigned;
        private String secret = APP_SECRET;

        public Raw(String method, String path) {
            this.method = method;
            this.path = path;
        }

        public Raw query(String name, String value) {
            query.add(Map.entry(name, value));
            return this;
        }

        /** A header the signature covers. */
        public Raw header(String name, String value) {
            signed.put(name.toLowerCase(java.util.Locale.ROOT), value);
            return this;
        }

        /** A header sent but left out of the signature. */
        public Raw unsignedHeader(String name, String value) {
            unsigned.put(name, value);
            return this;
        }

        public Raw body(String text) {
            this.body = text;
            return this;
        }

        /** Sent with this spelling of the method, signed with the one given to the constructor. */
        public Raw sentAs(String spelling) {
            this.wireMethod = spelling;
            return this;
        }

        /** Signed in the query (a presigned URL, valid five minutes) instead of the Authorization header. */
        public Raw presigned() {
            this.presigned = true;
            return this;
        }

        /** Sends it to the proxy's port and reads the answer. */
        public io.stockade.testing.Http.Response send(int port) throws Exception {
            java.time.Instant now = java.time.Instant.now();
            String amzDate = java.time.format.DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
                    .withZone(java.time.ZoneOffset.UTC).format(now);
            String date = amzDate.substring(0, 8);
            String scope = date + "/us-east-1/s3/aws4_request";
            String host = "127.0.0.1:" + port;
            Map<String, String> headers = new java.util.TreeMap<>(signed);
            headers.put("host", host);
            java.util.List<Map.Entry<String, String>> params = new java.util.ArrayList<>(query);
            String payload = "UNSIGNED-PAYLOAD";
            if (presigned) {
                params.add(Map.entry("X-Amz-Algorithm", "AWS4-HMAC-SHA256"));
                params.add(Map.entry("X-Amz-Credential", APP_KEY + "/" + scope));
                params.add(Map.entry("X-Amz-Date", amzDate));
                params.add(Map.entry("X-Amz-Expires", "300"));
                params.add(Map.entry("X-Amz-SignedHeaders", String.join(";", headers.keySet())));
            } else {
                headers.put("x-amz-date", amzDate);
                headers.put("x-amz-content-sha256", payload);
            }
            // sorted by encoded name, then value, as AWS sorts them (not as "name=value" strings)
            java.util.List<String> canonicalQuery = params.stream()
                    .map(e -> Map.entry(encode(e.getKey()), encode(e.getValue())))
                    .sorted(Map.Entry.<String, String>comparingByKey().thenComparing(Map.Entry.comparingByValue()))
                    .map(e -> e.getKey() + "=" + e.getValue()).toList();
            StringBuilder canonicalHeaders = new StringBuilder();
            for (Map.Entry<String, String> h : headers.entrySet()) {
                canonicalHeaders.append(h.getKey()).append(':').append(h.getValue().trim()).append('\n');
            }
            String signedHeaders = String.join(";", headers.keySet());
            String canonical = method + "\n" + path + "\n" + String.join("&", canonicalQuery) + "\n"
                    + canonicalHeaders + "\n" + signedHeaders + "\n" + payload;
            String toSign = "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex(java.security.MessageDigest
                    .getInstance("SHA-256").digest(canonical.getBytes(java.nio.charset.StandardCharsets.UTF_8)));
            byte[] key = hmac(hmac(hmac(hmac(("AWS4" + secret).getBytes(java.nio.charset.StandardCharsets.UTF_8),
                    date), "us-east-1"), "s3"), "aws4_request");
            String signature = hex(hmac(key, toSign));
            StringBuilder target = new StringBuilder(path);
            char sep = '?';
            for (Map.Entry<String, String> e : params) {
                target.append(sep).append(encode(e.getKey()));
                if (!e.getValue().isEmpty() || presigned) {
                    target.append('=').append(encode(e.getValue()));
                }
                sep = '&';
            }
            StringBuilder request = new StringBuilder();
            if (presigned) {
                target.append(sep).append("X-Amz-Signature=").append(signature);
            }
            request.append(wireMethod == null ? method : wireMethod).append(' ').append(target)
                    .append(" HTTP/1.1\r\n");
            for (Map.Entry<String, String> h : headers.entrySet()) {
                request.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
            }
            if (!presigned) {
                request.append("Authorization: AWS4-HMAC-SHA256 Credential=").append(APP_KEY).append('/')
                        .append(scope).append(", SignedHeaders=").append(signedHeaders).append(", Signature=")
                        .append(signature).append("\r\n");
            }
            for (Map.Entry<String, String> h : unsigned.entrySet()) {
                request.append(h.getKey()).append(": ").append(h.getValue()).append("\r\n");
            }
            byte[] bytes = body == null ? new byte[0] : body.getBytes(java.nio.charset.StandardCharsets.UTF_8);
            if (body != null) {
                request.append("Content-Length: ").append(bytes.length).append("\r\n");
            }
            request.append("Connection: close\r\n\r\n");
            // RawHttp writes one byte per char: the body goes as its UTF-8 bytes, which Content-Length counted
            return RawHttp.send(port, request + new String(bytes, java.nio.charset.StandardCharsets.ISO_8859_1));
        }

        private static String encode(String text) {
            StringBuilder out = new StringBuilder();
            for (byte b : text.getBytes(java.nio.charset.StandardCharsets.UTF_8)) {
                char c = (char) (b & 0xff);
                if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-'
                        || c == '_' || c == '.' || c == '~') {
                    out.append(c);
                } else {
                    out.append('%').append(String.format("%02X", b & 0xff));
                }
            }
            return out.toString();
        }

        private static byte[] hmac(byte[] key, String text) throws Exception {
            javax.crypto.Mac mac = javax.crypto.Mac.getInstance("HmacSHA256");
            mac.init(new javax.crypto.spec.SecretKeySpec(key, "HmacSHA256"));
            return mac.doFinal(text.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        }

        private static String hex(byte[] bytes) {
            return java.util.HexFormat.of().formatHex(bytes);
        }
    }

    @Override
    public void close() throws Exception {
        proxy.close();
        s3proxy.stop();
        blobs.close();
    }
}
