package io.stockade.proxy.backend.s3;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.EnumMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;

import org.junit.jupiter.params.provider.Arguments;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * The store × class matrix the S3 integration tests run through: s3proxy over each of its stores ({@link Store}),
 * and in front of each a proxy of each class of the backend ({@link Fence}: atomic, the token in the object's
 * metadata; serialized, {@code conditional-writes: false}, the token in the proxy's journal), with an SDK client of
 * each and one straight to s3proxy, to read what a request left in the store.
 */
final class S3Matrix implements AutoCloseable {
    /** s3proxy's stores: jclouds' transient (a map) and filesystem, and s3proxy's own filesystem-nio2. */
    enum Store {
        TRANSIENT("transient"), FILESYSTEM("filesystem"), FILESYSTEM_NIO2("filesystem-nio2");

        final String provider;

        Store(String provider) {
            this.provider = provider;
        }
    }

    /** The class of the backend a proxy of the matrix runs. */
    enum Fence { ATOMIC, SERIALIZED }

    /** One s3proxy, and a proxy of each class in front of it; {@code bucket} is the tests' bucket. */
    record Setup(String bucket, S3Fixture fixture, ProxyFixture serialized, S3Client direct, S3Client atomicClient,
                 S3Client serializedClient) {
        int port(Fence fence) {
            return (fence == Fence.ATOMIC ? fixture.proxy : serialized).server().port();
        }

        S3Client client(Fence fence) {
            return fence == Fence.ATOMIC ? atomicClient : serializedClient;
        }

        /** A PutObject of {@code body} under {@code token}, through the proxy of {@code fence}. */
        void put(Fence fence, String key, long token, String body) {
            client(fence).putObject(b -> b.bucket(bucket).key(key).overrideConfiguration(S3Fixture.token(token)),
                    RequestBody.fromString(body));
        }

        /** The object as s3proxy holds it: its bytes and its token, read straight from the store. */
        void assertStored(String key, byte[] body, long token) {
            assertArrayEquals(body, direct.getObjectAsBytes(b -> b.bucket(bucket).key(key)).asByteArray(), key);
            HeadObjectResponse head = direct.headObject(b -> b.bucket(bucket).key(key));
            assertEquals(Long.toString(token), head.metadata().get("fencing-token"), key + ": " + head.metadata());
        }

        void assertStored(String key, String body, long token) {
            assertStored(key, bytes(body), token);
        }

        /** The fence did not move: a write with a token below the stored one is still refused, the object as it was. */
        void assertStillFenced(Fence fence, String key, byte[] body, long token) {
            S3Exception stale = assertThrows(S3Exception.class, () -> put(fence, key, token - 1, "zombie"));
            assertEquals(412, stale.statusCode(), stale.getMessage());
            assertStored(key, body, token);
        }

        void assertStillFenced(Fence fence, String key, String body, long token) {
            assertStillFenced(fence, key, bytes(body), token);
        }
    }

    /** Every store with every class, for a {@code @MethodSource}. */
    static Stream<Arguments> storesAndClasses() {
        return Stream.of(Store.values()).flatMap(s -> Stream.of(Fence.values()).map(f -> Arguments.of(s, f)));
    }

    static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }

    private final Map<Store, Setup> setups = new EnumMap<>(Store.class);
    private final Path dir;

    private S3Matrix(Path dir) {
        this.dir = dir;
    }

    /**
     * Starts the matrix in a new temporary directory named for {@code name}: in each store the tests' {@code bucket}
     * and the {@code others}, each serialized proxy open for writes.
     */
    static S3Matrix start(String name, String bucket, String... others) throws Exception {
        S3Matrix matrix = new S3Matrix(Files.createTempDirectory(name));
        try {
            for (Store store : Store.values()) {
                matrix.startIn(store, bucket, others);
            }
        } catch (Exception | Error e) {
            matrix.close();
            throw e;
        }
        return matrix;
    }

    private void startIn(Store store, String bucket, String... others) throws Exception {
        Path root = store == Store.TRANSIENT ? null : Files.createDirectories(dir.resolve("blobs-" + store));
        S3Fixture fixture = S3Fixture.start(dir.resolve("journal-" + store), Map.of(), store.provider, root);
        ProxyFixture serialized = fixture.anotherProxy(dir.resolve("journal-serialized-" + store),
                Map.of("CONDITIONAL_WRITES", "false", "S3_TIMEOUT", "2s"));
        S3Client direct = S3Fixture.clientWithRequiredChecksumsOnly(fixture.directUri(), S3Fixture.UPSTREAM_KEY,
                S3Fixture.UPSTREAM_SECRET);
        direct.createBucket(b -> b.bucket(bucket));
        for (String other : others) {
            direct.createBucket(b -> b.bucket(other));
        }
        S3Client serializedClient = S3Fixture.client(serialized.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET);
        setups.put(store, new Setup(bucket, fixture, serialized, direct, fixture.client(), serializedClient));
        awaitOpen(serializedClient, bucket);
    }

    /** The setup of {@code store}. */
    Setup setup(Store store) {
        return setups.get(store);
    }

    /** The matrix's temporary directory, for the journals of other proxies. */
    Path dir() {
        return dir;
    }

    /** A serialized policy refuses writes for its timeout after it starts (a crashed run's write may still land). */
    static void awaitOpen(S3Client client, String bucket) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (true) {
            try {
                client.putObject(b -> b.bucket(bucket).key("warm-up").overrideConfiguration(S3Fixture.token(1)),
                        RequestBody.fromString("x"));
                return;
            } catch (S3Exception e) {
                if (e.statusCode() != 503 || System.nanoTime() > deadline) {
                    throw e;
                }
                Thread.sleep(100);
            }
        }
    }

    @Override
    public void close() throws Exception {
        for (Setup setup : setups.values()) {
            setup.serialized().close();
            setup.fixture().close();
        }
    }
}
