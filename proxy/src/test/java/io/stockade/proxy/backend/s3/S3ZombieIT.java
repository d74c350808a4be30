package io.stockade.proxy.backend.s3;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import io.stockade.proxy.S3Fixture;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.auth.credentials.AwsBasicCredentials;
import software.amazon.awssdk.auth.credentials.StaticCredentialsProvider;
import software.amazon.awssdk.core.interceptor.Context;
import software.amazon.awssdk.core.interceptor.ExecutionAttributes;
import software.amazon.awssdk.core.interceptor.ExecutionInterceptor;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.regions.Region;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A zombie writer that is really paused: its thread is inside {@code S3Client.putObject} with token 20, the
 * request already built and signed, and is stopped right before the bytes leave (an SDK execution interceptor
 * blocks it, as a GC pause or a SIGSTOP would). While it is stopped its lease passes to a new holder, who writes
 * with token 21. When the zombie's thread resumes, the very request it had signed goes out and is refused with 412,
 * and the object read straight from s3proxy is the new holder's.
 */
@Timeout(value = 2, unit = TimeUnit.MINUTES)
class S3ZombieIT {
    static final String BUCKET = "zombie";

    @TempDir
    Path dir;

    /** Stops the calling thread before transmission while armed (once), until released. */
    static final class Pause implements ExecutionInterceptor {
        final AtomicBoolean armed = new AtomicBoolean();
        final CountDownLatch paused = new CountDownLatch(1);
        final CountDownLatch resume = new CountDownLatch(1);

        @Override
        public void beforeTransmission(Context.BeforeTransmission context, ExecutionAttributes attributes) {
            if (!armed.compareAndSet(true, false)) {
                return;
            }
            paused.countDown();
            try {
                if (!resume.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("never resumed");
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
    }

    @Test
    void aWriterPausedInsideItsPutIsRefusedAfterTheNewHolderWrote() throws Exception {
        try (S3Fixture fixture = S3Fixture.start(dir.resolve("j"));
             S3Client direct = fixture.direct();
             S3Client newHolder = fixture.client()) {
            direct.createBucket(b -> b.bucket(BUCKET));
            Pause pause = new Pause();
            try (S3Client zombie = S3Client.builder()
                    .endpointOverride(fixture.proxyUri())
                    .region(Region.US_EAST_1)
                    .forcePathStyle(true)
                    .credentialsProvider(StaticCredentialsProvider.create(
                            AwsBasicCredentials.create(S3Fixture.APP_KEY, S3Fixture.APP_SECRET)))
                    .overrideConfiguration(c -> c.addExecutionInterceptor(pause))
                    .build()) {
                // The zombie holds the lease (token 20) and writes with it.
                zombie.putObject(b -> b.bucket(BUCKET).key("lease.txt").overrideConfiguration(S3Fixture.token(20)),
                        RequestBody.fromString("zombie while it held the lease"));

                // It starts its next write and is stopped inside the SDK call, after signing.
                pause.armed.set(true);
                CompletableFuture<Throwable> late = new CompletableFuture<>();
                Thread zombieThread = Thread.ofPlatform().name("zombie").start(() -> {
                    try {
                        zombie.putObject(b -> b.bucket(BUCKET).key("lease.txt")
                                        .overrideConfiguration(S3Fixture.token(20)),
                                RequestBody.fromString("zombie wakes up"));
                        late.complete(null);
                    } catch (Throwable t) {
                        late.complete(t);
                    }
                });
                assertTrue(pause.paused.await(30, TimeUnit.SECONDS), "the zombie never reached its pause");
                Thread.sleep(200);
                assertTrue(zombieThread.isAlive() && !late.isDone(), "the zombie is paused mid-call");
                assertTrue(zombieThread.getState() == Thread.State.TIMED_WAITING, zombieThread.getState().toString());

                // Its lease expires; the new holder gets token 21 and writes.
                newHolder.putObject(b -> b.bucket(BUCKET).key("lease.txt")
                        .overrideConfiguration(S3Fixture.token(21)), RequestBody.fromString("new holder"));
                assertEquals("new holder", S3RacingWritersIT.readDirect(direct, "lease.txt", BUCKET));

                // The zombie wakes up and its signed request goes out: refused, and nothing changes.
                pause.resume.countDown();
                zombieThread.join(30_000);
                Throwable outcome = late.get(1, TimeUnit.SECONDS);
                S3Exception refused = assertInstanceOf(S3Exception.class, outcome, String.valueOf(outcome));
                assertEquals(412, refused.statusCode());
                assertEquals("PreconditionFailed", refused.awsErrorDetails().errorCode());
                assertTrue(refused.awsErrorDetails().errorMessage().contains("20")
                        && refused.awsErrorDetails().errorMessage().contains("21"), refused.getMessage());
                assertEquals("new holder", S3RacingWritersIT.readDirect(direct, "lease.txt", BUCKET));
                assertEquals("21", direct.headObject(b -> b.bucket(BUCKET).key("lease.txt")).metadata()
                        .get("fencing-token"));
            }
        }
    }
}
