package io.stockade.conformance.storage;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Duration;

import io.stockade.conformance.Template;

import org.jspecify.annotations.Nullable;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.ResponseBytes;
import software.amazon.awssdk.core.checksums.RequestChecksumCalculation;
import software.amazon.awssdk.core.checksums.ResponseChecksumValidation;
import software.amazon.awssdk.core.exception.SdkException;
import software.amazon.awssdk.http.apache5.Apache5HttpClient;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.GetObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * Reads an object straight from the bucket with the real AWS SDK v2 (GetObject with the bucket's own credentials),
 * never through the proxy. A missing object (404 / NoSuchKey) is absent. The SDK's own retries are off, so a failed
 * read is reported as failed, not hidden. Checksums are only used where the service requires them, so s3proxy and
 * MinIO answer as AWS S3 does.
 */
public final class S3Reader implements StorageReader {

    private final S3Client s3;
    private final String endpoint;
    private final String bucket;
    private final String keyTemplate;

    /**
     * @param endpoint    the bucket's endpoint, e.g. {@code https://s3.eu-west-1.amazonaws.com} or MinIO's URL
     * @param bucket      the bucket
     * @param keyTemplate the object key with {@code {key}}
     * @param pathStyle   path-style addressing ({@code /bucket/key}) rather than {@code bucket.host}
     */
    public S3Reader(String endpoint, String region, String accessKey, String secretKey, String bucket,
                    String keyTemplate, boolean pathStyle) {
        this.endpoint = endpoint;
        this.bucket = bucket;
        this.keyTemplate = keyTemplate;
        this.s3 = S3Client.builder()
                .endpointOverride(URI.create(endpoint))
                .region(Region.of(region))
                .forcePathStyle(pathStyle)
                .credentialsProvider(StaticCredentialsProvider.create(AwsBasicCredentials.create(accessKey,
                        secretKey)))
                .requestChecksumCalculation(RequestChecksumCalculation.WHEN_REQUIRED)
                .responseChecksumValidation(ResponseChecksumValidation.WHEN_REQUIRED)
                .overrideConfiguration(c -> c.retryStrategy(b -> b.maxAttempts(1))
                        .apiCallTimeout(Duration.ofSeconds(5)))
                .httpClientBuilder(Apache5HttpClient.builder().maxConnections(4))
                .build();
    }

    @Override
    public @Nullable String read(String key) throws IOException {
        String objectKey = Template.expand(keyTemplate, key);
        try {
            ResponseBytes<GetObjectResponse> r = s3.getObjectAsBytes(b -> b.bucket(bucket).key(objectKey));
            return r.asString(StandardCharsets.UTF_8);
        } catch (NoSuchKeyException e) {
            return null;
        } catch (S3Exception e) {
            if (e.statusCode() == 404) {
                return null;
            }
            throw new IOException("GetObject " + bucket + "/" + objectKey + " answered " + e.statusCode() + ": "
                    + e.getMessage(), e);
        } catch (SdkException e) {
            throw new IOException("GetObject " + bucket + "/" + objectKey + " failed: " + e.getMessage(), e);
        }
    }

    @Override
    public String describe() {
        return "s3 " + endpoint + " bucket " + bucket + " key " + keyTemplate;
    }

    @Override
    public void close() {
        s3.close();
    }
}
