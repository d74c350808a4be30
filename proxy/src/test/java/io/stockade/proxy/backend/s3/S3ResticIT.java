package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import io.stockade.proxy.ProxyFixture;
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
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * restic (Debian's 0.14) as a process, as docs/s3.md gives it ("restic"): it has no way to send a header or
 * metadata, so no write of it carries a token. Under an enforcing catch-all it is refused before anything is
 * written; its bucket given policies of its own in observe mode (S3 round four, item 4: a policy whose path begins
 * with more literal segments serves the requests it shares with the catch-all), it backs up, lists, prunes and
 * checks, while the catch-all still refuses tokenless writes. What reached the store is read straight from s3proxy.
 */
@RequiresTools(Tools.Tool.RESTIC)
class S3ResticIT {
    private static final Duration TIMEOUT = Duration.ofSeconds(120);
    /** The S3 fixture's policy shape, with the bucket "restic" given its own pair of policies in observe mode. */
    private static final String POLICY = """
            store: {type: memory, journal: "${JOURNAL}"}
            policies:
              - name: s3
                match: {path: "/{path...}"}
                scope: s3
                backend: &s3
                  type: s3
                  endpoint: http://127.0.0.1:${S3PORT}
                  access-key: upstream-key
                  secret-key: upstream-secret
                  auth: sigv4
                  clients:
                    - {access-key: app-key, secret-key: app-secret}
              - name: s3-root
                match: {path: "/"}
                scope: s3
                backend: *s3
              - name: restic
                match: {path: "/restic/{path...}"}
                scope: s3
                fence: {mode: observe}
                backend: *s3
              - name: restic-bucket
                match: {path: "/restic"}
                scope: s3
                fence: {mode: observe}
                backend: *s3
            """;
    @TempDir
    static Path journal;
    @TempDir
    static Path ownJournal;
    @TempDir
    static Path work;
    private static S3Fixture fixture;
    private static ProxyFixture own;
    private static S3Client direct;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal);
        own = ProxyFixture.start(ownJournal, POLICY, Map.of("S3PORT", Integer.toString(fixture.s3proxy.getPort())));
        direct = fixture.direct();
        direct.createBucket(b -> b.bucket("restic"));
        direct.createBucket(b -> b.bucket("vault"));
        Files.createDirectories(work.resolve("data/sub"));
        Files.writeString(work.resolve("data/a.txt"), "a");
        Files.writeString(work.resolve("data/sub/b.txt"), "b");
    }

    @AfterAll
    static void stop() throws Exception {
        if (own != null) {
            own.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    /** restic with the repository {@code s3:<proxy>/<bucket>/repo}, as the application's key. */
    private static ToolRun restic(java.net.URI proxy, String bucket, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("/usr/bin/restic", "--no-cache"));
        command.addAll(List.of(args));
        return ToolRun.run(command, work, work, k -> k.startsWith("AWS_") || k.startsWith("RESTIC_"),
                Map.of("AWS_ACCESS_KEY_ID", S3Fixture.APP_KEY, "AWS_SECRET_ACCESS_KEY", S3Fixture.APP_SECRET,
                        "RESTIC_PASSWORD", "correct horse", "RESTIC_REPOSITORY", "s3:" + proxy + "/" + bucket + "/repo",
                        "HOME", work.toString()), TIMEOUT);
    }

    private static ToolRun ok(ToolRun r) {
        assertEquals(0, r.code(), r.toString());
        return r;
    }

    private static List<String> stored(String bucket) {
        return direct.listObjectsV2(b -> b.bucket(bucket)).contents().stream().map(S3Object::key).toList();
    }

    @Test
    void underAnEnforcingPolicyResticIsRefusedBeforeItWritesAnything() throws Exception {
        ToolRun r = restic(fixture.proxyUri(), "vault", "init");
        assertNotEquals(0, r.code(), r.toString());
        assertTrue(r.err().contains("is fenced by policy 's3': send the token of your lock"), r.toString());
        assertEquals(List.of(), stored("vault"));
    }

    @Test
    void aBucketOfItsOwnInObserveModeTakesResticWhileTheCatchAllStillFences() throws Exception {
        ok(restic(own.uri(""), "restic", "init"));
        ok(restic(own.uri(""), "restic", "backup", "data"));
        ok(restic(own.uri(""), "restic", "backup", "data"));
        assertTrue(ok(restic(own.uri(""), "restic", "snapshots")).out().contains("2 snapshots"));
        ok(restic(own.uri(""), "restic", "forget", "--keep-last", "1", "--prune"));
        assertTrue(ok(restic(own.uri(""), "restic", "snapshots")).out().contains("1 snapshots"));
        ok(restic(own.uri(""), "restic", "check"));
        assertTrue(stored("restic").contains("repo/config"), stored("restic").toString());
        assertTrue(stored("restic").stream().noneMatch(k -> k.startsWith("repo/locks/")), "restic removed its locks");

        // the catch-all of the same proxy still refuses a tokenless write, and writes nothing
        S3Client app = S3Fixture.client(own.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET);
        S3Exception e = assertThrows(S3Exception.class, () -> app.putObject(b -> b.bucket("vault").key("k"),
                RequestBody.fromString("no token")));
        assertEquals(400, e.statusCode());
        assertEquals("MissingFencingToken", e.awsErrorDetails().errorCode());
        assertEquals(List.of(), stored("vault"));
    }
}
