package io.stockade.proxy.backend.s3;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.TcpRelay;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;
import software.amazon.awssdk.services.s3.model.S3Object;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Job-level leases over many objects: a lease that covers a whole job under a prefix ({@code aws s3 sync --delete},
 * {@code aws s3 mv --recursive}, {@code aws s3 rm --recursive}, {@code rclone sync}), with Debian's AWS CLI (the
 * shipped hook as a plugin) and rclone as processes, through the proxy to an in-process s3proxy read directly.
 * <ul>
 *   <li>With {@code fence-scope: object} (the atomic class) the fence is per object, and sync tools skip unchanged
 *   files: a zombie job's sync after a newer job's sync that changed only one key rewrites and deletes the keys the
 *   newer job did not touch. A documented demonstration: the test asserts that it happens.</li>
 *   <li>With {@code fence-scope: prefix} (serialized) the same zombie changes nothing; and in a race, with the
 *   zombie job held mid-job on the network (a relay holds its last writes) while the newer job runs, nothing the
 *   zombie sends after the newer job's first acknowledged write lands anywhere under the prefix: every key's bytes
 *   and token, and which keys exist, are the same after the zombie ended as when the newer job ended.</li>
 * </ul>
 */
@RequiresTools({Tools.Tool.AWS_CLI, Tools.Tool.RCLONE})
class S3JobZombieIT {
    /** the atomic class: fence-scope object */
    private static final String OBJECT = "jobs-object";
    /** fence-scope prefix, prefix-segments 1: one scope per top-level folder (AWS CLI, signed token) */
    private static final String PREFIX = "jobs-prefix";
    /** fence-scope prefix as above, through the policy rclone's deletes need (signed-token: false) */
    private static final String RCLONE = "jobs-rclone";
    private static final Path HOOK_DIR = Path.of("..", "client-sdk", "python").toAbsolutePath().normalize();
    private static final long TIMEOUT_SECONDS = 120;
    /** the keys of a racing job: s01 to s09 land before the relay holds the zombie's writes of s10 to s12 */
    private static final List<String> KEYS = List.of("s01", "s02", "s03", "s04", "s05", "s06", "s07", "s08", "s09",
            "s10", "s11", "s12");
    @TempDir
    static Path journal;
    @TempDir
    static Path work;
    /** fence-scope: prefix, token-from-metadata: true */
    private static S3Fixture fixture;
    /** fence-scope: object (atomic), signed-token: false for rclone's deletes */
    private static ProxyFixture object;
    /** fence-scope: prefix, signed-token: false for rclone's deletes */
    private static ProxyFixture rclonePrefix;
    private static S3Client direct;
    private static Path config;
    private static Path plainConfig;

    @BeforeAll
    static void start() throws Exception {
        assertTrue(Files.isRegularFile(HOOK_DIR.resolve("stockade_fencing.py")), HOOK_DIR.toString());
        fixture = S3Fixture.start(journal.resolve("prefix"), Map.of("FENCE_SCOPE", "prefix",
                "TOKEN_FROM_METADATA", "true", "S3_TIMEOUT", "2s"));
        object = fixture.anotherProxy(journal.resolve("object"), Map.of("SIGNED_TOKEN", "false",
                "TOKEN_FROM_METADATA", "true"));
        rclonePrefix = fixture.anotherProxy(journal.resolve("rclone"), Map.of("FENCE_SCOPE", "prefix",
                "SIGNED_TOKEN", "false", "TOKEN_FROM_METADATA", "true", "S3_TIMEOUT", "2s"));
        direct = fixture.direct();
        for (String bucket : List.of(OBJECT, PREFIX, RCLONE)) {
            direct.createBucket(b -> b.bucket(bucket));
        }
        String plugin = "[plugins]\ncli_legacy_plugin_path = " + HOOK_DIR + "\nstockade_fencing = stockade_fencing\n";
        String base = "[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n";
        config = Files.writeString(work.resolve("config"), base + plugin);
        plainConfig = Files.writeString(work.resolve("config-plain"), base);
        // a serialized policy refuses writes for its timeout after it starts
        awaitSettled(fixture.proxyUri(), PREFIX);
        awaitSettled(rclonePrefix.uri(""), RCLONE);
    }

    @AfterAll
    static void stop() throws Exception {
        if (rclonePrefix != null) {
            rclonePrefix.close();
        }
        if (object != null) {
            object.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    private static void awaitSettled(URI endpoint, String bucket) throws Exception {
        try (S3Client client = S3Fixture.client(endpoint, S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (true) {
                try {
                    client.putObject(b -> b.bucket(bucket).key("warm-up/x").overrideConfiguration(
                            S3Fixture.token(1)), RequestBody.fromString("x"));
                    return;
                } catch (S3Exception e) {
                    assertTrue(e.statusCode() == 503 && System.nanoTime() < deadline, e.getMessage());
                    Thread.sleep(100);
                }
            }
        }
    }

    // ---- the tools as processes ----

    record Result(int code, String out, String err) {
        @Override
        public String toString() {
            return "exit " + code + "\n--- stdout\n" + out + "\n--- stderr\n" + err;
        }

        /** How many times the tool reports a refusal as stale. */
        int stale() {
            return (int) (out + err).lines().filter(l -> l.contains("PreconditionFailed")).count();
        }
    }

    /** A tool started as a process, not yet awaited. */
    record Running(List<String> command, Process process, Path out, Path err) {
        Result await() throws Exception {
            if (!process.waitFor(TIMEOUT_SECONDS, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new AssertionError(command + " did not finish in " + TIMEOUT_SECONDS + " s");
            }
            return new Result(process.exitValue(), Files.readString(out), Files.readString(err));
        }
    }

    private static Running start(List<String> command, Map<String, String> env) throws Exception {
        ProcessBuilder pb = new ProcessBuilder(command).directory(work.toFile());
        Path out = Files.createTempFile(work, "out", ".txt");
        Path err = Files.createTempFile(work, "err", ".txt");
        pb.redirectOutput(out.toFile()).redirectError(err.toFile());
        pb.environment().keySet().removeIf(k -> k.startsWith("AWS_") || k.startsWith("RCLONE_")
                || k.equals("FENCING_TOKEN"));
        pb.environment().putAll(env);
        pb.environment().put("HOME", work.toString());
        return new Running(command, pb.start(), out, err);
    }

    /** The AWS CLI against {@code endpoint}, $FENCING_TOKEN = token (read by the hook when the config loads it). */
    private static Running aws(URI endpoint, Path configFile, long token, String... args) throws Exception {
        Map<String, String> env = new HashMap<>();
        env.put("AWS_CONFIG_FILE", configFile.toString());
        env.put("AWS_SHARED_CREDENTIALS_FILE", work.resolve("no-credentials").toString());
        env.put("AWS_ACCESS_KEY_ID", S3Fixture.APP_KEY);
        env.put("AWS_SECRET_ACCESS_KEY", S3Fixture.APP_SECRET);
        env.put("AWS_EC2_METADATA_DISABLED", "true");
        env.put("AWS_PAGER", "");
        env.put("FENCING_TOKEN", Long.toString(token));
        List<String> command = new ArrayList<>(List.of("/usr/bin/aws", "--endpoint-url", endpoint.toString()));
        command.addAll(List.of(args));
        return start(command, env);
    }

    /** rclone with the remote {@code stk:} at {@code endpoint}, the token as its (unsigned) header. */
    private static Running rclone(URI endpoint, long token, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of("/usr/bin/rclone", "--retries", "1", "--low-level-retries",
                "1", "--header", "Fencing-Token: " + token));
        command.addAll(List.of(args));
        return start(command, Map.of("RCLONE_CONFIG", work.resolve("rclone.conf").toString(),
                "RCLONE_CONFIG_STK_TYPE", "s3", "RCLONE_CONFIG_STK_PROVIDER", "Other",
                "RCLONE_CONFIG_STK_ACCESS_KEY_ID", S3Fixture.APP_KEY,
                "RCLONE_CONFIG_STK_SECRET_ACCESS_KEY", S3Fixture.APP_SECRET,
                "RCLONE_CONFIG_STK_ENDPOINT", endpoint.toString(),
                "RCLONE_CONFIG_STK_FORCE_PATH_STYLE", "true", "RCLONE_CONFIG_STK_REGION", "us-east-1",
                "RCLONE_CONFIG_STK_NO_CHECK_BUCKET", "true"));
    }

    private static Result ok(Running r) throws Exception {
        Result result = r.await();
        assertEquals(0, result.code(), result.toString());
        return result;
    }

    private static Result stale(Running r) throws Exception {
        Result result = r.await();
        assertNotEquals(0, result.code(), result.toString());
        assertTrue(result.stale() > 0, "expected PreconditionFailed in\n" + result);
        return result;
    }

    // ---- local directories and the store ----

    /**
     * The files job 6 wrote, dated an hour ago (before their upload, as a checkout is): a copy of them keeps that
     * date, so that a sync tool sees a copy as unchanged.
     */
    private static Path seedDir(String name, Map<String, String> files) throws Exception {
        Path d = dir(name, files);
        FileTime anHourAgo = FileTime.from(Instant.now().minus(Duration.ofHours(1)));
        for (String f : files.keySet()) {
            Files.setLastModifiedTime(d.resolve(f), anHourAgo);
        }
        return d;
    }

    /** Job 6's uploads of {@code dir}'s files under {@code prefix}, through the proxy at {@code endpoint}. */
    private static void upload6(URI endpoint, String bucket, String prefix, Path dir) throws Exception {
        try (S3Client client = S3Fixture.client(endpoint, S3Fixture.APP_KEY, S3Fixture.APP_SECRET);
             var files = Files.list(dir)) {
            for (Path f : files.toList()) {
                client.putObject(b -> b.bucket(bucket).key(prefix + f.getFileName()).overrideConfiguration(
                        S3Fixture.token(6)), RequestBody.fromFile(f));
            }
        }
    }

    /** A directory with these files, written now. */
    private static Path dir(String name, Map<String, String> files) throws Exception {
        Path d = work.resolve(name);
        Files.createDirectories(d);
        for (Map.Entry<String, String> f : files.entrySet()) {
            Files.writeString(d.resolve(f.getKey()), f.getValue());
        }
        return d;
    }

    /**
     * A copy of {@code from} (modification times kept, as a job's checkout of the same files has them) with
     * {@code changes} written over it: what a sync tool then sees as changed is exactly those.
     */
    private static Path copy(Path from, String name, Map<String, String> changes) throws Exception {
        Path d = work.resolve(name);
        Files.createDirectories(d);
        try (var files = Files.list(from)) {
            for (Path f : files.toList()) {
                Files.copy(f, d.resolve(f.getFileName()), StandardCopyOption.COPY_ATTRIBUTES);
            }
        }
        for (Map.Entry<String, String> f : changes.entrySet()) {
            Files.writeString(d.resolve(f.getKey()), f.getValue());
        }
        return d;
    }

    /** An object as the store holds it: bytes, {@code fencing-token}, whether it is a tombstone. */
    record State(String body, String token, boolean tombstone) {
        @Override
        public String toString() {
            return (tombstone ? "tombstone" : "'" + body + "'") + " token " + token;
        }
    }

    /** Every key under {@code prefix} of {@code bucket}, read straight from s3proxy. */
    private static Map<String, State> store(String bucket, String prefix) {
        Map<String, State> keys = new TreeMap<>();
        for (S3Object o : direct.listObjectsV2Paginator(b -> b.bucket(bucket).prefix(prefix)).contents()) {
            try {
                HeadObjectResponse head = direct.headObject(b -> b.bucket(bucket).key(o.key()));
                String body = direct.getObjectAsBytes(b -> b.bucket(bucket).key(o.key())).asUtf8String();
                keys.put(o.key().substring(prefix.length()), new State(body, head.metadata().get("fencing-token"),
                        "true".equals(head.metadata().get("fencing-deleted"))));
            } catch (NoSuchKeyException deleted) {
                // deleted since it was listed (while a job runs)
            }
        }
        return keys;
    }

    /** Whether a store read by {@link #store} holds the key deleted: absent, or (atomic class) a tombstone. */
    private static boolean deleted(Map<String, State> store, String key) {
        return !store.containsKey(key) || store.get(key).tombstone();
    }

    private static State live(String body, long token) {
        return new State(body, Long.toString(token), false);
    }

    // ---- the failure with a per-object fence, and the same zombie against a prefix scope ----

    /** The numbers: four keys written by job 6; job 8 changed only s1; a zombie of job 7 syncs after it. */
    private static final Map<String, String> SEED = Map.of("s1", "s1 from job 6", "s2", "s2 from job 6",
            "s3", "s3 from job 6", "s4", "s4 from job 6");
    private static final Map<String, String> ZOMBIE = Map.of("s1", "s1 as the zombie job 7 has it",
            "s3", "s3 as the zombie job 7 has it", "s4", "s4 as the zombie job 7 has it");

    /**
     * The per-object fence (the atomic class) and a sync job: job 8's {@code aws s3 sync} uploads only s1, the one
     * file it changed; a zombie of job 7 then runs {@code aws s3 sync --delete} with its own, older view. s1 is
     * refused (job 8 wrote it), but s3 and s4, which job 8 did not rewrite, carry job 6's token, below 7: the zombie
     * rewrites them, and deletes s2. Demonstrated, not wanted: this is why a job's lease over a prefix needs
     * {@code fence-scope: prefix} (docs/s3.md, "Which scope fits which lock").
     */
    @Test
    void withAPerObjectFenceAZombieSyncRewritesWhatTheNewerSyncSkipped() throws Exception {
        URI endpoint = object.uri("");
        String target = "s3://" + OBJECT + "/cli/";
        Path seed = seedDir("obj-cli-6", SEED);
        upload6(endpoint, OBJECT, "cli/", seed);
        Result newer = ok(aws(endpoint, config, 8, "s3", "sync", copy(seed, "obj-cli-8", Map.of("s1",
                "s1 changed by job 8")).toString(), target));
        assertEquals(1, newer.out().lines().filter(l -> l.startsWith("upload:")).count(), newer.toString());
        Result zombie = stale(aws(endpoint, config, 7, "s3", "sync", dir("obj-cli-7", ZOMBIE).toString(), target,
                "--delete"));
        assertEquals(1, zombie.stale(), zombie.toString());
        assertEquals(Map.of(
                "s1", live("s1 changed by job 8", 8),
                "s2", new State(store(OBJECT, "cli/").get("s2").body(), "7", true),
                "s3", live("s3 as the zombie job 7 has it", 7),
                "s4", live("s4 as the zombie job 7 has it", 7)), store(OBJECT, "cli/"));

        // rclone the same: its sync rewrites s3 and s4 (it skips its deletes after the refused upload of s1)
        URI rcloneEndpoint = object.uri("");
        Path rseed = seedDir("obj-rclone-6", SEED);
        ok(rclone(rcloneEndpoint, 6, "sync", rseed.toString(), "stk:" + OBJECT + "/rclone"));
        ok(rclone(rcloneEndpoint, 8, "sync", copy(rseed, "obj-rclone-8", Map.of("s1", "s1 changed by job 8"))
                .toString(), "stk:" + OBJECT + "/rclone"));
        stale(rclone(rcloneEndpoint, 7, "sync", dir("obj-rclone-7", ZOMBIE).toString(),
                "stk:" + OBJECT + "/rclone"));
        assertEquals(Map.of(
                "s1", live("s1 changed by job 8", 8),
                "s2", live("s2 from job 6", 6),
                "s3", live("s3 as the zombie job 7 has it", 7),
                "s4", live("s4 as the zombie job 7 has it", 7)), store(OBJECT, "rclone/"));
    }

    /** The same three jobs against {@code fence-scope: prefix}: job 8's one write fences the whole prefix. */
    @Test
    void withAPrefixScopeTheSameZombieSyncChangesNothing() throws Exception {
        URI endpoint = fixture.proxyUri();
        String target = "s3://" + PREFIX + "/seq/";
        Path seed = seedDir("pfx-cli-6", SEED);
        upload6(endpoint, PREFIX, "seq/", seed);
        ok(aws(endpoint, config, 8, "s3", "sync", copy(seed, "pfx-cli-8", Map.of("s1", "s1 changed by job 8"))
                .toString(), target));
        Map<String, State> expected = Map.of(
                "s1", live("s1 changed by job 8", 8),
                "s2", live("s2 from job 6", 6),
                "s3", live("s3 from job 6", 6),
                "s4", live("s4 from job 6", 6));
        assertEquals(expected, store(PREFIX, "seq/"));
        Result zombie = stale(aws(endpoint, config, 7, "s3", "sync", dir("pfx-cli-7", ZOMBIE).toString(), target,
                "--delete"));
        // every write of the zombie refused: three uploads and the delete of s2
        assertEquals(4, zombie.stale(), zombie.toString());
        assertEquals(expected, store(PREFIX, "seq/"));
        assertFenceIs(fixture.proxyUri(), PREFIX, "seq/", 8);
    }

    /**
     * The prefix's fence read through the proxy: a write with {@code token - 1} is refused (nothing stored) and one
     * with {@code token} accepted, so the refusals before did not move it.
     */
    private static void assertFenceIs(URI endpoint, String bucket, String prefix, long token) {
        String key = prefix + "fence-probe";
        try (S3Client client = S3Fixture.client(endpoint, S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            S3Exception stale = assertThrows(S3Exception.class, () -> client.putObject(b -> b.bucket(bucket).key(key)
                    .overrideConfiguration(S3Fixture.token(token - 1)), RequestBody.fromString("below")));
            assertEquals(412, stale.statusCode());
            assertTrue(direct.listObjectsV2(b -> b.bucket(bucket).prefix(key)).contents().isEmpty());
            client.putObject(b -> b.bucket(bucket).key(key).overrideConfiguration(S3Fixture.token(token)),
                    RequestBody.fromString("at"));
        }
    }

    // ---- whole-job zombies racing a newer job on a prefix scope ----

    /** What a race left: the store when the zombie was held, after the newer job, after the zombie ended. */
    record Race(Map<String, State> held, Map<String, State> afterNewer, Map<String, State> end, Result zombie) {
    }

    /** Starts a job against the endpoint it is given. */
    @FunctionalInterface
    interface Job {
        Running start(URI endpoint) throws Exception;
    }

    /**
     * The race. The zombie job runs through a relay in front of {@code proxy} that holds its requests starting with
     * one of {@code holds} (its writes of s10, s11, s12: on the wire, not yet at the proxy, as a network delay or a
     * pause would leave them); the rest of its job runs and lands ({@code landed} says when the store shows it all).
     * Then the newer job runs to its end, directly; then the held requests go on and the zombie finishes. Asserts
     * that nothing under {@code prefix} changed from the end of the newer job to the end of the zombie: every key's
     * bytes and token, and which keys exist.
     */
    private static Race race(int proxy, String bucket, String prefix, List<String> holds,
                             Predicate<Map<String, State>> landed, Job zombie, Job newer, URI newerEndpoint)
            throws Exception {
        try (TcpRelay relay = TcpRelay.to(proxy)) {
            relay.holdRequestsStartingWith(holds.toArray(String[]::new));
            Running z = zombie.start(URI.create("http://127.0.0.1:" + relay.port()));
            boolean held = relay.awaitHeld(Duration.ofSeconds(60));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (held && !landed.test(store(bucket, prefix)) && z.process().isAlive()
                    && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            Map<String, State> atHold = store(bucket, prefix);
            if (!held || !landed.test(atHold)) {
                relay.release();
                throw new AssertionError("the zombie was not held mid-job: held " + held + ", the store " + atHold
                        + "\n" + z.await());
            }
            ok(newer.start(newerEndpoint));
            Map<String, State> afterNewer = store(bucket, prefix);
            relay.release();
            Result result = stale(z);
            Map<String, State> end = store(bucket, prefix);
            assertEquals(afterNewer, end, "the zombie changed the prefix after the newer job's writes\n" + result);
            return new Race(atHold, afterNewer, end, result);
        }
    }

    private static Map<String, String> files(String what) {
        Map<String, String> files = new TreeMap<>();
        KEYS.forEach(k -> files.put(k + ".txt", k + " " + what));
        return files;
    }

    private static Map<String, String> without(Map<String, String> files, String... keys) {
        Map<String, String> left = new TreeMap<>(files);
        for (String k : keys) {
            left.remove(k);
        }
        return left;
    }

    /** The start of a request of s10, s11 or s12 under {@code path}: what the relay holds. */
    private static String lastThree(String method, String path) {
        return method + " " + path + "s1";
    }

    private static int number(String key) {
        return Integer.parseInt(key.substring(1, 3));
    }

    /**
     * What a race must end with when the newer job is a sync of job 6's files with s01 changed: s01 as job 8 changed
     * it, every other key the zombie changed or deleted before the hold (s02 to s09) written back by job 8, and
     * s10 to s12, which the zombie tried after the newer job's writes, still job 6's.
     */
    private static Map<String, State> writtenBackUpTo(int last, String pathPrefix, Map<String, State> untouched) {
        Map<String, State> expected = new TreeMap<>(untouched);
        for (String k : KEYS) {
            int n = number(k);
            if (n <= last) {
                expected.put(pathPrefix + k + ".txt", live(n == 1 ? "s01 changed by job 8" : k + " from job 6", 8));
            }
        }
        return expected;
    }

    private static Map<String, State> seedState(String pathPrefix) {
        Map<String, State> state = new TreeMap<>();
        KEYS.forEach(k -> state.put(pathPrefix + k + ".txt", live(k + " from job 6", 6)));
        return state;
    }

    /**
     * {@code aws s3 sync --delete}: the zombie (7) has uploaded its s01 to s09 and deleted s05 when its writes of s10
     * to s12 (uploads of s10 and s12, the delete of s11) are held; the newer job's sync (8) writes back what changed
     * since its checkout (s01, and everything the zombie wrote); then none of the zombie's held writes lands.
     */
    @Test
    void aZombieSyncDeleteLandsNothingAfterTheNewerJobsFirstWrite() throws Exception {
        String target = "s3://" + PREFIX + "/sync/";
        Path seed = seedDir("sync-6", files("from job 6"));
        upload6(fixture.proxyUri(), PREFIX, "sync/", seed);
        Path zombie = dir("sync-7", without(files("as the zombie job 7 has it"), "s05.txt", "s11.txt"));
        Path newer = copy(seed, "sync-8", Map.of("s01.txt", "s01 changed by job 8"));
        List<String> holds = List.of(lastThree("PUT", "/" + PREFIX + "/sync/"),
                lastThree("DELETE", "/" + PREFIX + "/sync/"));
        Race race = race(fixture.proxy.server().port(), PREFIX, "sync/", holds,
                store -> KEYS.stream().filter(k -> number(k) <= 9).allMatch(k -> number(k) == 5
                        ? deleted(store, k + ".txt")
                        : live(k + " as the zombie job 7 has it", 7).equals(store.get(k + ".txt"))),
                at -> aws(at, config, 7, "s3", "sync", zombie.toString(), target, "--delete"),
                at -> aws(at, config, 8, "s3", "sync", newer.toString(), target), fixture.proxyUri());
        assertEquals(writtenBackUpTo(9, "", seedState("")), race.end());
        // refused: the uploads of s10 and s12, the delete of s11
        assertEquals(3, race.zombie().stale(), race.zombie().toString());
        assertFenceIs(fixture.proxyUri(), PREFIX, "sync/", 8);
    }

    /**
     * {@code aws s3 mv --recursive} within the prefix (an inbox moved to done/): CopyObject then DeleteObject per
     * key, the delete of the source needing the hook. The zombie has moved s01 to s09 when its copies (and deletes)
     * of s10 to s12 are held; the newer job (8) syncs its checkout of the inbox back; then no copy of the zombie
     * lands in done/ and no source of the inbox is deleted.
     */
    @Test
    void aZombieMoveLandsNothingAfterTheNewerJobsFirstWrite() throws Exception {
        String inbox = "s3://" + PREFIX + "/mv/in/";
        Path seed = seedDir("mv-6", files("from job 6"));
        upload6(fixture.proxyUri(), PREFIX, "mv/in/", seed);
        Path newer = copy(seed, "mv-8", Map.of("s01.txt", "s01 changed by job 8"));
        List<String> holds = List.of(lastThree("PUT", "/" + PREFIX + "/mv/done/"),
                lastThree("DELETE", "/" + PREFIX + "/mv/in/"));
        Race race = race(fixture.proxy.server().port(), PREFIX, "mv/", holds,
                store -> KEYS.stream().filter(k -> number(k) <= 9).allMatch(k -> !store.containsKey("in/" + k + ".txt")
                        && store.containsKey("done/" + k + ".txt")),
                at -> aws(at, config, 7, "s3", "mv", "--recursive", inbox, "s3://" + PREFIX + "/mv/done/"),
                at -> aws(at, config, 8, "s3", "sync", newer.toString(), inbox), fixture.proxyUri());
        // the zombie's copies made before the hold stay in done/ (they landed before the newer job's first write);
        // a serialized CopyObject is relayed as it is, so a copy keeps its source's metadata and token
        Map<String, State> done = new TreeMap<>();
        KEYS.stream().filter(k -> number(k) <= 9).forEach(k -> done.put("done/" + k + ".txt",
                new State(k + " from job 6", race.held().get("done/" + k + ".txt").token(), false)));
        Map<String, State> untouched = new TreeMap<>(seedState("in/"));
        untouched.putAll(done);
        assertEquals(writtenBackUpTo(9, "in/", untouched), race.end());
        assertTrue(race.zombie().stale() >= 3, race.zombie().toString());
        assertFenceIs(fixture.proxyUri(), PREFIX, "mv/", 8);
    }

    /**
     * {@code aws s3 mv} of an object needs the hook: without it, the token as metadata
     * ({@code --metadata fencing-token=N}) reaches the copy, but the delete of the source carries no metadata and is
     * refused, so the move is left half done.
     */
    @Test
    void aMoveWithoutTheHookCannotDeleteItsSource() throws Exception {
        Path seed = seedDir("mvmeta-6", Map.of("a.txt", "a from job 6"));
        upload6(fixture.proxyUri(), PREFIX, "mvmeta/", seed);
        Result r = aws(fixture.proxyUri(), plainConfig, 7, "s3", "mv", "s3://" + PREFIX + "/mvmeta/a.txt",
                "s3://" + PREFIX + "/mvmeta/b.txt", "--metadata", "fencing-token=7").await();
        assertNotEquals(0, r.code(), r.toString());
        assertTrue(r.err().contains("(MissingFencingToken) when calling the DeleteObject operation"), r.toString());
        // the refusal points a delete at the header the hook sends, not at metadata a delete cannot carry
        assertTrue(r.err().contains("stockade_fencing.py") && r.err().contains("cannot be its token"),
                r.toString());
        assertEquals(Map.of("a.txt", live("a from job 6", 6), "b.txt", live("a from job 6", 7)),
                store(PREFIX, "mvmeta/"));
    }

    /**
     * {@code aws s3 rm --recursive}: the zombie has deleted s01 to s09 when its deletes of s10 to s12 are held; the
     * newer job (8) syncs its checkout back; then none of the held deletes lands.
     */
    @Test
    void aZombieRecursiveRemoveLandsNothingAfterTheNewerJobsFirstWrite() throws Exception {
        String target = "s3://" + PREFIX + "/rm/";
        Path seed = seedDir("rm-6", files("from job 6"));
        upload6(fixture.proxyUri(), PREFIX, "rm/", seed);
        Path newer = copy(seed, "rm-8", Map.of("s01.txt", "s01 changed by job 8"));
        Race race = race(fixture.proxy.server().port(), PREFIX, "rm/",
                List.of(lastThree("DELETE", "/" + PREFIX + "/rm/")),
                store -> KEYS.stream().filter(k -> number(k) <= 9).noneMatch(k -> store.containsKey(k + ".txt")),
                at -> aws(at, config, 7, "s3", "rm", "--recursive", target),
                at -> aws(at, config, 8, "s3", "sync", newer.toString(), target), fixture.proxyUri());
        assertEquals(writtenBackUpTo(9, "", seedState("")), race.end());
        assertEquals(3, race.zombie().stale(), race.zombie().toString());
        assertFenceIs(fixture.proxyUri(), PREFIX, "rm/", 8);
    }

    /**
     * {@code rclone sync} (the token as its header, policy {@code signed-token: false}): the zombie has uploaded s01
     * to s09 when its uploads of s10 and s12 are held (rclone deletes after its transfers, and not at all after an
     * error: s05 and s11 stay); the newer job's rclone sync (8) writes back what changed; then nothing of the
     * zombie's lands.
     */
    @Test
    void aZombieRcloneSyncLandsNothingAfterTheNewerJobsFirstWrite() throws Exception {
        URI endpoint = rclonePrefix.uri("");
        String target = "stk:" + RCLONE + "/sync";
        Path seed = seedDir("rclone-6", files("from job 6"));
        ok(rclone(endpoint, 6, "sync", seed.toString(), target));
        Path zombie = dir("rclone-7", without(files("as the zombie job 7 has it"), "s05.txt", "s11.txt"));
        Path newer = copy(seed, "rclone-8", Map.of("s01.txt", "s01 changed by job 8"));
        List<String> holds = List.of(lastThree("PUT", "/" + RCLONE + "/sync/"),
                lastThree("DELETE", "/" + RCLONE + "/sync/"));
        Race race = race(rclonePrefix.server().port(), RCLONE, "sync/", holds,
                store -> KEYS.stream().filter(k -> number(k) <= 9 && number(k) != 5).allMatch(k ->
                        live(k + " as the zombie job 7 has it", 7).equals(store.get(k + ".txt"))),
                at -> rclone(at, 7, "sync", zombie.toString(), target),
                at -> rclone(at, 8, "sync", newer.toString(), target), endpoint);
        Map<String, State> expected = writtenBackUpTo(9, "", seedState(""));
        expected.put("s05.txt", live("s05 from job 6", 6));
        assertEquals(expected, race.end());
        assertFenceIs(endpoint, RCLONE, "sync/", 8);
    }
}
