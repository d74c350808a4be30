package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.S3Fixture;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.ToolRun;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;

import static io.stockade.proxy.S3Fixture.token;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * S3 as real tools use it, with rclone (Debian package {@code rclone}) as a process, through the proxy to s3proxy,
 * checked against
 * s3proxy read directly. rclone cannot sign an extra header (its {@code --header} is added after signing), so:
 * uploads carry the token as metadata ({@code --metadata --metadata-set fencing-token=N}, policy
 * {@code token-from-metadata: true}, signed like any metadata); deletes need {@code --header "Fencing-Token: N"},
 * which only a policy with {@code signed-token: false} accepts. Downloads must not trip over tombstones.
 */
@RequiresTools(Tools.Tool.RCLONE)
class S3RcloneIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    @TempDir
    static Path journal;
    @TempDir
    static Path unsignedJournal;
    @TempDir
    static Path work;
    private static String rclone;
    /** signed-token: true (the default), token-from-metadata: true */
    private static S3Fixture signed;
    /** signed-token: false, token-from-metadata: true */
    private static S3Fixture unsigned;

    @BeforeAll
    static void start() throws Exception {
        rclone = Files.isExecutable(Path.of("/usr/bin/rclone")) ? "/usr/bin/rclone" : null;
        signed = S3Fixture.start(journal, Map.of("TOKEN_FROM_METADATA", "true"));
        unsigned = S3Fixture.start(unsignedJournal, Map.of("TOKEN_FROM_METADATA", "true", "SIGNED_TOKEN", "false"));
        signed.direct().createBucket(b -> b.bucket("rcl"));
        unsigned.direct().createBucket(b -> b.bucket("rcl"));
    }

    @AfterAll
    static void stop() throws Exception {
        if (signed != null) {
            signed.close();
        }
        if (unsigned != null) {
            unsigned.close();
        }
    }

    /** rclone with the remote {@code stk:} pointing at the fixture's proxy; never more than one try per call. */
    private static ToolRun rclone(S3Fixture fixture, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(rclone, "--retries", "1", "--low-level-retries", "1"));
        command.addAll(List.of(args));
        return ToolRun.run(command, work, work, k -> k.startsWith("AWS_") || k.startsWith("RCLONE_"),
                Map.of("RCLONE_CONFIG", work.resolve("rclone.conf").toString(),
                "RCLONE_CONFIG_STK_TYPE", "s3", "RCLONE_CONFIG_STK_PROVIDER", "Other",
                "RCLONE_CONFIG_STK_ACCESS_KEY_ID", S3Fixture.APP_KEY,
                "RCLONE_CONFIG_STK_SECRET_ACCESS_KEY", S3Fixture.APP_SECRET,
                "RCLONE_CONFIG_STK_ENDPOINT", fixture.proxyUri().toString(),
                "RCLONE_CONFIG_STK_FORCE_PATH_STYLE", "true", "RCLONE_CONFIG_STK_REGION", "us-east-1",
                "RCLONE_CONFIG_STK_NO_CHECK_BUCKET", "true", "HOME", work.toString()), TIMEOUT);
    }

    private static ToolRun ok(ToolRun r) {
        assertEquals(0, r.code(), r.toString());
        return r;
    }

    private static ToolRun failed(ToolRun r, String expected) {
        assertNotEquals(0, r.code(), r.toString());
        assertTrue(r.err().contains(expected), "expected '" + expected + "' in\n" + r);
        return r;
    }

    private static HeadObjectResponse stored(S3Fixture fixture, String key) {
        return fixture.direct().headObject(b -> b.bucket("rcl").key(key));
    }

    private static String storedBody(S3Fixture fixture, String key) {
        return fixture.direct().getObjectAsBytes(b -> b.bucket("rcl").key(key)).asUtf8String();
    }

    private static Path dir(String name, Map<String, String> files) throws Exception {
        Path d = work.resolve(name);
        Files.createDirectories(d);
        for (Map.Entry<String, String> f : files.entrySet()) {
            Files.writeString(d.resolve(f.getKey()), f.getValue());
        }
        return d;
    }

    @Test
    void uploadsCarryTheTokenAsMetadataAndAStaleCopyChangesNothing() throws Exception {
        Path job = dir("job", Map.of("a.txt", "a from 10", "b.txt", "b from 10"));
        ok(rclone(signed, "copy", job.toString(), "stk:rcl/meta", "--metadata", "--metadata-set",
                "fencing-token=10"));
        assertEquals("a from 10", storedBody(signed, "meta/a.txt"));
        assertEquals("10", stored(signed, "meta/a.txt").metadata().get("fencing-token"));

        Path zombie = dir("zombie", Map.of("a.txt", "a from the zombie 9"));
        failed(rclone(signed, "copy", zombie.toString(), "stk:rcl/meta", "--metadata", "--metadata-set",
                "fencing-token=9"), "PreconditionFailed");
        assertEquals("a from 10", storedBody(signed, "meta/a.txt"));
        assertEquals("10", stored(signed, "meta/a.txt").metadata().get("fencing-token"));

        // a delete cannot carry metadata, and rclone's --header is not signed: refused under signed-token
        failed(rclone(signed, "delete", "stk:rcl/meta/b.txt"), "MissingFencingToken");
        failed(rclone(signed, "delete", "stk:rcl/meta/b.txt", "--header", "Fencing-Token: 11"), "AccessDenied");
        assertEquals("b from 10", storedBody(signed, "meta/b.txt"));
    }

    @Test
    void downloadsSkipTombstones() throws Exception {
        S3Client s3 = signed.client();
        for (String k : List.of("live.txt", "gone.txt", "sub/gone.txt", "sub/live.txt")) {
            s3.putObject(b -> b.bucket("rcl").key("down/" + k).overrideConfiguration(token(3)),
                    RequestBody.fromString(k));
        }
        s3.deleteObject(b -> b.bucket("rcl").key("down/gone.txt").overrideConfiguration(token(4)));
        s3.deleteObject(b -> b.bucket("rcl").key("down/sub/gone.txt").overrideConfiguration(token(4)));
        Path local = work.resolve("download");
        ok(rclone(signed, "copy", "stk:rcl/down", local.toString()));
        try (var files = Files.walk(local)) {
            assertEquals(List.of("live.txt", "sub/live.txt"), files.filter(Files::isRegularFile)
                    .map(p -> local.relativize(p).toString()).sorted().toList());
        }
        String listed = ok(rclone(signed, "lsf", "-R", "stk:rcl/down")).out();
        assertEquals(List.of("live.txt", "sub/", "sub/live.txt"), listed.lines().sorted().toList());
        assertEquals("true", stored(signed, "down/gone.txt").metadata().get("fencing-deleted"));
    }

    @Test
    void withSignedTokenOffTheHeaderFencesAWholeSyncDeletesIncluded() throws Exception {
        Path job = dir("sync", Map.of("a.txt", "a1", "b.txt", "b1"));
        ok(rclone(unsigned, "sync", job.toString(), "stk:rcl/sync", "--header", "Fencing-Token: 20"));
        assertEquals("20", stored(unsigned, "sync/b.txt").metadata().get("fencing-token"));
        Files.delete(job.resolve("b.txt"));
        ok(rclone(unsigned, "sync", job.toString(), "stk:rcl/sync", "--header", "Fencing-Token: 20"));
        HeadObjectResponse tombstone = stored(unsigned, "sync/b.txt");
        assertEquals("true", tombstone.metadata().get("fencing-deleted"));
        assertEquals("20", tombstone.metadata().get("fencing-token"));
        // a zombie's sync with 19 (which would recreate b.txt and delete a.txt): its upload is refused (rclone
        // then skips its deletes), and a delete of its own is refused too: nothing changes
        Path old = dir("old", Map.of("b.txt", "zombie b"));
        failed(rclone(unsigned, "sync", old.toString(), "stk:rcl/sync", "--header", "Fencing-Token: 19"),
                "PreconditionFailed");
        failed(rclone(unsigned, "delete", "stk:rcl/sync/a.txt", "--header", "Fencing-Token: 19"),
                "PreconditionFailed");
        assertEquals("a1", storedBody(unsigned, "sync/a.txt"));
        assertEquals("true", stored(unsigned, "sync/b.txt").metadata().get("fencing-deleted"));
        assertEquals("20", stored(unsigned, "sync/b.txt").metadata().get("fencing-token"));
    }
}
