package io.stockade.proxy.backend.s3;

import java.io.InputStream;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;

import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.testing.PatternStream;
import io.stockade.testing.ChildProxy;
import io.stockade.testing.Jvm;

import org.gaul.s3proxy.AuthenticationType;
import org.gaul.s3proxy.S3Proxy;
import org.jclouds.ContextBuilder;
import org.jclouds.blobstore.BlobStoreContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.ResponseInputStream;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A 512 MiB PutObject and GetObject with the default AWS SDK v2 {@link S3Client} (aws-chunked upload with chunk
 * signatures and a trailing checksum) through the proxy running as a child process with a 128 MiB heap (the body
 * four times the heap), in front of
 * an s3proxy in this JVM over a filesystem blob store in a temp dir. The file s3proxy stored and the bytes the client
 * read back through the proxy are each compared byte for byte with the pattern the client sent ({@link PatternStream}:
 * not a SHA-256 of each, which costs 7 s a GiB on the test JVM's C1). Bounded: the whole test is stopped after
 * 6 minutes.
 */
@Timeout(value = 6, unit = TimeUnit.MINUTES, threadMode = Timeout.ThreadMode.SEPARATE_THREAD)
class S3StreamingIT {
    /** Four times the proxy's heap (1 GiB through 256 MiB before: the same ratio at half the time). */
    static final long BODY = 512L << 20;
    static final String BUCKET = "big";

    @TempDir
    Path dir;

    @Test
    void aBodyFourTimesTheHeapWithTheDefaultSdk() throws Exception {
        Path blobRoot = Files.createDirectories(dir.resolve("blobs"));
        Properties properties = new Properties();
        properties.setProperty("jclouds.filesystem.basedir", blobRoot.toString());
        BlobStoreContext blobs = ContextBuilder.newBuilder("filesystem")
                .credentials("identity", "credential")
                .overrides(properties)
                .build(BlobStoreContext.class);
        S3Proxy s3proxy = S3Proxy.builder()
                .blobStore(blobs.getBlobStore())
                .awsAuthentication(AuthenticationType.AWS_V4, S3Fixture.UPSTREAM_KEY, S3Fixture.UPSTREAM_SECRET)
                .endpoint(URI.create("http://127.0.0.1:0"))
                .ignoreUnknownHeaders(true)
                .build();
        s3proxy.start();
        try {
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (!s3proxy.getState().equals("STARTED") && System.nanoTime() < deadline) {
                Thread.sleep(10);
            }
            Path config = dir.resolve("stockade.yaml");
            Files.writeString(config, """
                    server:
                      port: 0
                    store:
                      type: memory
                      journal: %s
                    policies:
                      - name: s3
                        match: {path: "/{path...}"}
                        scope: s3
                        backend: &s3
                          type: s3
                          endpoint: http://127.0.0.1:%d
                          access-key: %s
                          secret-key: %s
                          auth: sigv4
                          timeout: 300s
                          clients:
                            - {access-key: %s, secret-key: %s}
                      - name: s3-root
                        match: {path: "/"}
                        scope: s3
                        backend: *s3
                    """.formatted(dir.resolve("journal"), s3proxy.getPort(), S3Fixture.UPSTREAM_KEY,
                    S3Fixture.UPSTREAM_SECRET, S3Fixture.APP_KEY, S3Fixture.APP_SECRET));
            Path childLog;
            try (S3Client direct = S3Fixture.client(URI.create("http://127.0.0.1:" + s3proxy.getPort()),
                    S3Fixture.UPSTREAM_KEY, S3Fixture.UPSTREAM_SECRET);
                 ChildProxy proxy = ChildProxy.start(config, List.of("-Xmx128m", Jvm.FULL_JIT));
                 S3Client s3 = S3Fixture.client(proxy.baseUri(), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
                childLog = proxy.logFile();
                direct.createBucket(b -> b.bucket(BUCKET));

                s3.putObject(b -> b.bucket(BUCKET).key("one.gib").overrideConfiguration(S3Fixture.token(1)),
                        RequestBody.fromContentProvider(() -> new PatternStream(BODY), BODY,
                                "application/octet-stream"));

                HeadObjectResponse head = direct.headObject(b -> b.bucket(BUCKET).key("one.gib"));
                assertEquals(BODY, head.contentLength());
                assertEquals("1", head.metadata().get("fencing-token"));
                Path stored = blobRoot.resolve(BUCKET).resolve("one.gib");
                assertEquals(BODY, Files.size(stored));
                try (InputStream in = Files.newInputStream(stored)) {
                    PatternStream.assertIsPattern(in, BODY, "what s3proxy stored");
                }

                try (ResponseInputStream<GetObjectResponse> in = s3.getObject(b -> b.bucket(BUCKET).key("one.gib"))) {
                    assertEquals(BODY, in.response().contentLength());
                    PatternStream.assertIsPattern(in, BODY, "what the client read back through the proxy");
                }
                assertTrue(proxy.isAlive(), proxy.log());
                assertFalse(proxy.log().contains("OutOfMemoryError"), proxy.log());
            }
            // Passed: the child's log directory goes too (kept on failure, its path is in the message).
            Files.deleteIfExists(childLog);
            Files.deleteIfExists(childLog.getParent());
        } finally {
            s3proxy.stop();
            blobs.close();
        }
    }
}
