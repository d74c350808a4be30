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
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * s3cmd (Debian's 2.3) as a process, as docs/s3.md gives it ("s3cmd"), through the proxy to s3proxy, with the
 * policy's {@code token-from-metadata} on (the case where a copied token did harm). What it did is read straight
 * from s3proxy: bytes, user metadata, the proxy's record of the token.
 * <ul>
 *   <li>{@code --add-header=Fencing-Token:N} reaches uploads and server-side copies ({@code put}, {@code sync},
 *   {@code cp}, {@code modify}), signed like every header s3cmd sends;</li>
 *   <li>{@code modify}, {@code cp} and {@code mv} read the object's headers and send them back (REPLACE): the proxy's
 *   own metadata is not among them (S3 round four, item 1: a tokenless {@code modify} was stored under the current
 *   token, and one with a higher token was refused as naming two tokens);</li>
 *   <li>{@code del}, {@code sync --delete-removed} and the delete of {@code mv} carry no {@code --add-header}: refused,
 *   nothing deleted.</li>
 * </ul>
 */
@RequiresTools(Tools.Tool.S3CMD)
class S3CmdIT {
    private static final String BUCKET = "s3cmd";
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    @TempDir
    static Path journal;
    @TempDir
    static Path work;
    private static S3Fixture fixture;
    private static S3Client direct;
    private static Path config;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal, Map.of("TOKEN_FROM_METADATA", "true"));
        direct = fixture.direct();
        direct.createBucket(b -> b.bucket(BUCKET));
        config = s3cfg("s3cfg", fixture.proxyUri().getPort());
    }

    @AfterAll
    static void stop() throws Exception {
        if (fixture != null) {
            fixture.close();
        }
    }

    /** An s3cmd configuration for the proxy at {@code port}, path-style, SigV4, as docs/s3.md gives it. */
    static Path s3cfg(String name, int port) throws Exception {
        return Files.writeString(work.resolve(name), """
                [default]
                access_key = %s
                secret_key = %s
                host_base = 127.0.0.1:%d
                host_bucket = 127.0.0.1:%d
                use_https = False
                signature_v2 = False
                bucket_location = us-east-1
                """.formatted(S3Fixture.APP_KEY, S3Fixture.APP_SECRET, port, port));
    }

    /** s3cmd with the proxy's configuration. */
    static ToolRun s3cmd(Path cfg, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("/usr/bin/s3cmd", "-c", cfg.toString()));
        command.addAll(List.of(args));
        return ToolRun.run(command, work, work, k -> k.startsWith("AWS_") || k.startsWith("S3CMD"),
                Map.of("HOME", work.toString()), TIMEOUT);
    }

    static ToolRun ok(ToolRun r) {
        assertEquals(0, r.code(), r.toString());
        return r;
    }

    static ToolRun failed(ToolRun r, String expected) {
        assertNotEquals(0, r.code(), r.toString());
        assertTrue((r.out() + r.err()).contains(expected), "expected '" + expected + "' in\n" + r);
        return r;
    }

    private static Map<String, String> stored(String key) {
        return direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata();
    }

    private static String storedBody(String key) {
        try {
            return direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String();
        } catch (NoSuchKeyException e) {
            return null;
        }
    }

    private static Path file(String name, String text) throws Exception {
        return Files.writeString(work.resolve(name), text);
    }

    @Test
    void modifyAndCopySendBackNoTokenOfTheProxys() throws Exception {
        ok(s3cmd(config, "put", file("r.txt", "report 5").toString(), "s3://" + BUCKET + "/r.txt",
                "--add-header=Fencing-Token:5"));
        assertEquals("5", stored("r.txt").get("stockade-fence"));
        assertFalse(ok(s3cmd(config, "info", "s3://" + BUCKET + "/r.txt")).out().contains("fencing"),
                "the proxy's metadata is not shown");

        // before: the copied x-amz-meta-fencing-token: 5 was the token, and this modify landed under 5
        failed(s3cmd(config, "modify", "--add-header=x-amz-meta-note:x", "s3://" + BUCKET + "/r.txt"),
                "MissingFencingToken");
        assertNull(stored("r.txt").get("note"));
        assertEquals("5", stored("r.txt").get("stockade-fence"));

        // before: 400, "Fencing-Token (7) and x-amz-meta-fencing-token (5) name two different tokens"
        ok(s3cmd(config, "modify", "--add-header=Fencing-Token:7", "--add-header=x-amz-meta-note:x",
                "s3://" + BUCKET + "/r.txt"));
        Map<String, String> meta = stored("r.txt");
        assertEquals("x", meta.get("note"));
        assertEquals("7", meta.get("stockade-fence"));
        assertEquals("7", meta.get("fencing-token"));
        assertEquals("report 5", storedBody("r.txt"));

        ok(s3cmd(config, "cp", "--add-header=Fencing-Token:7", "s3://" + BUCKET + "/r.txt",
                "s3://" + BUCKET + "/copy.txt"));
        assertEquals("report 5", storedBody("copy.txt"));
        assertEquals("7", stored("copy.txt").get("stockade-fence"));

        // a zombie's modify with 6: refused, nothing changed
        failed(s3cmd(config, "modify", "--add-header=Fencing-Token:6", "--add-header=x-amz-meta-note:zombie",
                "s3://" + BUCKET + "/r.txt"), "PreconditionFailed");
        assertEquals("x", stored("r.txt").get("note"));
        assertEquals("7", stored("r.txt").get("stockade-fence"));
    }

    @Test
    void deletesCarryNoHeaderAndAreRefusedWithNothingDeleted() throws Exception {
        Path job = work.resolve("job");
        Files.createDirectories(job);
        Files.writeString(job.resolve("a.txt"), "a1");
        Files.writeString(job.resolve("b.txt"), "b1");
        ok(s3cmd(config, "sync", "--add-header=Fencing-Token:3", job + "/", "s3://" + BUCKET + "/job/"));
        assertEquals("3", stored("job/b.txt").get("stockade-fence"));

        failed(s3cmd(config, "del", "--add-header=Fencing-Token:3", "s3://" + BUCKET + "/job/b.txt"),
                "MissingFencingToken");
        assertEquals("b1", storedBody("job/b.txt"));

        Files.delete(job.resolve("b.txt"));
        Files.writeString(job.resolve("a.txt"), "a2");
        failed(s3cmd(config, "sync", "--add-header=Fencing-Token:3", "--delete-removed", job + "/",
                "s3://" + BUCKET + "/job/"), "MissingFencingToken");
        assertEquals("b1", storedBody("job/b.txt"), "the removed file's object stays");
        // s3cmd deletes before it uploads (unless --delete-after), and stops at the refused delete
        assertEquals("a1", storedBody("job/a.txt"), "the whole sync stopped");

        // mv: the copy lands (it carries the header), the delete of its source is refused: a move half done
        failed(s3cmd(config, "mv", "--add-header=Fencing-Token:3", "s3://" + BUCKET + "/job/b.txt",
                "s3://" + BUCKET + "/job/moved.txt"), "MissingFencingToken");
        assertEquals("b1", storedBody("job/moved.txt"));
        assertEquals("b1", storedBody("job/b.txt"));
    }
}
