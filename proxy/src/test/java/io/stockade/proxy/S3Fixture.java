package io.stockade.proxy;

import java.net.URI;
import java.nio.file.Path;
import java.util.Map;
import java.util.Properties;

import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
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

    static final String POLICY = """
            server:
              limits: {read-timeout: "${READ_TIMEOUT:-30s}"}
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: s3
                match: {path: "/{path...}"}
                scope: s3
                fence: {missing: "${MISSING_TOKEN:-reject}"}
                limits: {body-timeout: "${BODY_TIMEOUT:-5m}"}
                backend: &s3
                  type: s3
                  endpoint: http://127.0.0.1:${S3PORT}
                  access-key: upstream-key
                  secret-key: upstream-secret
                  auth: ${AUTH:-sigv4}
                  signed-token: ${SIGNED_TOKEN:-true}
                  token-from-metadata: ${TOKEN_FROM_METADATA:-false}
                  unsigned-reads: ${UNSIGNED_READS:-refuse}
                  fence-scope: ${FENCE_SCOPE:-object}
                  etag-cache: ${ETAG_CACHE:-0}
                  timeout: 10s
                  clients:
                    - {access-key: app-key, secret-key: app-secret}
              - name: s3-root
                match: {path: "/"}
                scope: s3
                backend: *s3
            """;

    final S3Proxy s3proxy;
    final BlobStoreContext blobs;
    final ProxyFixture proxy;

    private S3Fixture(S3Proxy s3proxy, BlobStoreContext blobs, ProxyFixture proxy) {
        this.s3proxy = s3proxy;
        this.blobs = blobs;
        this.proxy = proxy;
    }

    public static S3Fixture start(Path journal) throws Exception {
        return start(journal, Map.of());
    }

    public static S3Fixture start(Path journal, Map<String, String> vars) throws Exception {
        Properties properties = new Properties();
        BlobStoreContext blobs = ContextBuilder.newBuilder("transient")
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
        ProxyFixture proxy = ProxyFixture.start(journal, POLICY, env);
        return new S3Fixture(s3proxy, blobs, proxy);
    }

    /** Another proxy (replica) in front of the same s3proxy, with the same policy and these variables. */
    public ProxyFixture anotherProxy(Path journal, Map<String, String> vars) throws Exception {
        Map<String, String> env = new java.util.HashMap<>(vars);
        env.putIfAbsent("S3PORT", Integer.toString(s3proxy.getPort()));
        return ProxyFixture.start(journal, POLICY, env);
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

    S3Presigner presigner() {
        return S3Presigner.builder()
                .endpointOverride(proxyUri())
                .region(Region.US_EAST_1)
                .serviceConfiguration(S3Configuration.builder().pathStyleAccessEnabled(true).build())
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(APP_KEY,
                        APP_SECRET)))
                .build();
    }

    @Override
    public void close() throws Exception {
        proxy.close();
        s3proxy.stop();
        blobs.close();
    }
}
