package io.stockade.proxy.backend.s3;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

import io.stockade.proxy.RawAttempts;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.testing.DifferentialOracle;
import io.stockade.proxy.testing.MeaningGrammar;
import io.stockade.proxy.testing.MeaningOracle;
import io.stockade.proxy.testing.MeaningSeeds;
import io.stockade.testing.Http;

import net.jqwik.api.Arbitraries;
import net.jqwik.api.Arbitrary;
import net.jqwik.api.Example;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.Provide;
import net.jqwik.api.ShrinkingMode;
import net.jqwik.api.lifecycle.AfterContainer;
import net.jqwik.api.lifecycle.BeforeContainer;
import org.jclouds.blobstore.BlobStore;
import org.jclouds.blobstore.domain.BlobMetadata;
import org.jclouds.blobstore.domain.StorageMetadata;
import org.jclouds.blobstore.domain.StorageType;
import org.jclouds.blobstore.options.ListContainerOptions;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.S3Exception;

/**
 * The meaning fuzzer of the s3 backend (the default-deny issue): requests from {@link MeaningGrammar#s3()} — every
 * method, every object and bucket sub-resource of AWS's model, unknown and presign-like parameters, copy sources,
 * metadata directives, method overrides, {@code Connection} naming a significant header, keys a store folds,
 * unsigned headers and tokens of every kind — signed with SigV4 like a client's and sent to real proxies in front
 * of s3proxy, which reads them as the store it is (it ignores sub-resources it does not know, takes a copy source on
 * any PUT). Four worlds: s3proxy over jclouds' {@code transient} map and over its own {@code filesystem-nio2} store
 * (objects as files: {@code k/} and {@code k} are one), each behind the atomic class ({@code fence-scope: object},
 * {@code conditional-writes: true}: the token in the object's metadata) and the serialized class (the token in the
 * proxy's journal). {@link MeaningOracle} reads every bucket and object (bytes, user metadata, content type, ACL)
 * straight from the blob store behind s3proxy, and the fences where each class keeps them, before and after each
 * request. Each try draws a request and a world; the seeds of the issue run in every world ({@code @Example}).
 * {@code -Dstockade.meaning.s3-stores=transient,filesystem-nio2,filesystem} adds jclouds' {@code filesystem} store.
 * <p>
 * CI runs a fixed budget (300 tries per property, from {@code junit-platform.properties}); run longer on demand:
 * {@code mvn -pl policies,proxy verify -Dtest=none -Dit.test='*MeaningFuzzIT' -Djqwik.tries.default=5000}. The
 * figures of each run are written to {@code proxy/target/meaning-fuzz/}; docs/meaning-fuzz.md has the long run's.
 */
class S3MeaningFuzzIT {
    /** s3proxy's stores: jclouds' transient (a map), s3proxy's filesystem-nio2 and jclouds' filesystem (files). */
    enum Store {
        TRANSIENT("transient"), FILESYSTEM_NIO2("filesystem-nio2"), FILESYSTEM("filesystem");

        final String provider;

        Store(String provider) {
            this.provider = provider;
        }
    }

    /**
     * The configuration axis (the one-decider issue): policies drawn from the reference, each a world of both
     * classes over the transient store, beside the four worlds of the default policy. The judge holds each to its
     * policy ({@link MeaningOracle.Policy}).
     *
     * @param name   the world's suffix
     * @param vars   the fixture's variables that make the policy
     * @param judged what the judge holds the proxy to (for the serialized class; the atomic class's unfenced writes
     *               may replace the object that holds the fence)
     */
    record Config(String name, Map<String, String> vars, MeaningOracle.Policy judged) {
        MeaningOracle.Policy judged(boolean atomic) {
            return new MeaningOracle.Policy(judged.maxAdvance(), judged.missingAllowed(), judged.observe(),
                    judged.acceptEqual(), atomic && (judged.missingAllowed() || judged.observe()));
        }
    }

    private static final List<Config> CONFIGS = List.of(
            new Config("strict", Map.of("MAX_ADVANCE", "3", "EQUAL_TOKEN", "reject"),
                    new MeaningOracle.Policy(3, false, false, false, false)),
            new Config("observe", Map.of("FENCE_MODE", "observe", "MAX_ADVANCE", "3"),
                    new MeaningOracle.Policy(3, false, true, true, false)),
            new Config("allow", Map.of("MISSING_TOKEN", "allow", "MAX_ADVANCE", "3"),
                    new MeaningOracle.Policy(3, true, false, true, false)));

    /** One s3proxy, one proxy of one class in front of it, and the judge of what they do. */
    record World(String name, S3Fixture fixture, boolean atomic, MeaningOracle oracle, boolean seeded) {
        int port() {
            return fixture.proxy.server().port();
        }
    }

    private static final Map<String, World> WORLDS = new TreeMap<>();
    /**
     * The stores of this run: s3proxy's transient and filesystem-nio2 stores by default (the class stays within its
     * CI budget); {@code -Dstockade.meaning.s3-stores=transient,filesystem-nio2,filesystem} adds jclouds' filesystem
     * store.
     */
    private static final List<Store> STORES = java.util.Arrays.stream(System.getProperty(
            "stockade.meaning.s3-stores", "transient,filesystem-nio2").split(",")).map(String::trim)
            .map(p -> java.util.Arrays.stream(Store.values()).filter(s -> s.provider.equals(p)).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("no s3proxy store " + p))).toList();
    private static final List<String> WORLD_NAMES = java.util.stream.Stream.concat(STORES.stream()
            .flatMap(s -> java.util.stream.Stream.of(s.provider + "-atomic", s.provider + "-serialized")),
            CONFIGS.stream().flatMap(c -> java.util.stream.Stream.of("transient-atomic-" + c.name(),
                    "transient-serialized-" + c.name()))).toList();
    private static Path dir;

    @BeforeContainer
    static void start() throws Exception {
        dir = Files.createTempDirectory("stockade-s3-meaning");
        for (Store store : STORES) {
            for (boolean atomic : new boolean[] {true, false}) {
                world(store.provider + (atomic ? "-atomic" : "-serialized"), store, atomic, Map.of(),
                        MeaningOracle.Policy.ENFORCE, true);
            }
        }
        for (Config config : CONFIGS) {
            for (boolean atomic : new boolean[] {true, false}) {
                world("transient-" + (atomic ? "atomic-" : "serialized-") + config.name(), Store.TRANSIENT, atomic,
                        config.vars(), config.judged(atomic), false);
            }
        }
        for (World world : WORLDS.values()) {
            awaitOpen(world.fixture()); // the serialized proxies' time after their start passes meanwhile
        }
    }

    /** One world: an s3proxy over {@code store}, a proxy of one class with the policy {@code vars} make. */
    private static void world(String name, Store store, boolean atomic, Map<String, String> vars,
                              MeaningOracle.Policy judged, boolean seeded) throws Exception {
        Path root = store == Store.TRANSIENT ? null : Files.createDirectories(dir.resolve("blobs-" + name));
        Map<String, String> all = new HashMap<>(vars);
        if (!atomic) {
            all.put("CONDITIONAL_WRITES", "false");
            all.put("S3_TIMEOUT", "2s");
        }
        S3Fixture fixture = S3Fixture.start(dir.resolve("journal-" + name), all, store.provider, root);
        S3Client direct = S3Fixture.clientWithRequiredChecksumsOnly(fixture.directUri(), S3Fixture.UPSTREAM_KEY,
                S3Fixture.UPSTREAM_SECRET);
        for (String bucket : List.of(MeaningGrammar.BUCKET, MeaningGrammar.OTHER, MeaningGrammar.EMPTY)) {
            direct.createBucket(b -> b.bucket(bucket));
        }
        direct.putObject(b -> b.bucket(MeaningGrammar.OTHER).key("ov"), RequestBody.fromString("another "
                + "bucket's bytes"));
        WORLDS.put(name, new World(name, fixture, atomic, oracle(name, fixture, atomic, judged), seeded));
    }

    /** A serialized policy refuses writes for its timeout after it starts (a crashed run's write may still land). */
    private static void awaitOpen(S3Fixture fixture) throws InterruptedException {
        long deadline = System.nanoTime() + 30_000_000_000L;
        try (S3Client client = fixture.client()) {
            while (true) {
                try {
                    client.putObject(b -> b.bucket(MeaningGrammar.OTHER).key("warm-up")
                            .overrideConfiguration(S3Fixture.token(1)), RequestBody.fromString("x"));
                    return;
                } catch (S3Exception e) {
                    if (e.statusCode() != 503 || System.nanoTime() > deadline) {
                        throw e;
                    }
                    Thread.sleep(100);
                }
            }
        }
    }

    private static MeaningOracle oracle(String name, S3Fixture fixture, boolean atomic,
                                        MeaningOracle.Policy judged) {
        BlobStore blobs = fixture.blobs.getBlobStore();
        DifferentialOracle.Fences journal = RawAttempts.storeFences(fixture.proxy);
        // the judge reads the storage, then the fences: the tokens in the objects come from the same listing
        AtomicReference<Map<String, Long>> tokens = new AtomicReference<>(Map.of());
        return new MeaningOracle("s3 " + name, judged, new MeaningOracle.Storage() {
            @Override
            public Map<String, String> snapshot() throws Exception {
                Map<String, Long> inObjects = new HashMap<>();
                Map<String, String> out = objects(blobs, inObjects);
                tokens.set(inObjects);
                return out;
            }

            @Override
            public String scopeOf(String resource) {
                // the atomic class keeps the fence in the object itself; the serialized one per object in its store
                return atomic ? resource : "s3/" + resource;
            }
        }, () -> {
            Map<String, Long> out = new HashMap<>(journal.snapshot());
            if (atomic) {
                out.putAll(tokens.get());
            }
            return out;
        }, RawAttempts.decisions(fixture.proxy, "s3", "s3-root"));
    }

    /**
     * Every bucket (with its ACL) and every object (its ETag, the MD5 of its bytes in both stores; its size, user
     * metadata, content type and ACL) as the blob store behind s3proxy holds them, and into {@code tokens} the token
     * in every object's metadata, tombstones included (the atomic class's fences). Tombstones are no objects;
     * s3proxy's multipart bookkeeping ({@code .mpus-} stubs and parts, nio2's blob named by the upload ID: an upload
     * changes no object until it is completed) is left out.
     */
    static Map<String, String> objects(BlobStore blobs, Map<String, Long> tokens) {
        Map<String, String> out = new TreeMap<>();
        for (StorageMetadata container : blobs.list()) {
            String bucket = container.getName();
            out.put(bucket, "bucket, " + access(() -> blobs.getContainerAccess(bucket)));
            for (BlobMetadata blob : blobs(blobs, bucket)) {
                String name = blob.getName();
                Map<String, String> meta = new TreeMap<>(blob.getUserMetadata());
                if (meta.containsKey("fencing-token")) {
                    tokens.put(bucket + "/" + name, Long.parseLong(meta.get("fencing-token")));
                }
                if ("true".equals(meta.get("fencing-deleted"))) {
                    continue;
                }
                out.put(bucket + "/" + name, blob.getSize() + " bytes, ETag " + blob.getETag() + ", " + meta + ", "
                        + blob.getContentMetadata().getContentType() + ", "
                        + access(() -> blobs.getBlobAccess(bucket, name)));
            }
        }
        return out;
    }

    /**
     * s3proxy's filesystem-nio2 store keeps an upload in progress as a {@code .mpus-} stub and a blob named by its
     * bare upload ID (keys the grammar never writes).
     */
    private static final java.util.regex.Pattern UPLOAD_ID = java.util.regex.Pattern.compile(
            "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}");

    private static List<BlobMetadata> blobs(BlobStore blobs, String bucket) {
        List<BlobMetadata> out = new ArrayList<>();
        for (StorageMetadata m : blobs.list(bucket, ListContainerOptions.Builder.recursive())) {
            if (m.getType() != StorageType.BLOB || m.getName().startsWith(".mpus-")
                    || UPLOAD_ID.matcher(m.getName()).matches()) {
                continue;
            }
            BlobMetadata blob = blobs.blobMetadata(bucket, m.getName());
            if (blob != null) {
                out.add(blob);
            }
        }
        return out;
    }

    private static String access(java.util.concurrent.Callable<Object> read) {
        try {
            return String.valueOf(read.call());
        } catch (Exception e) {
            return "access unreadable (" + e.getClass().getSimpleName() + ")";
        }
    }

    @AfterContainer
    static void stop() throws Exception {
        for (World world : WORLDS.values()) {
            world.oracle().writeReport(Path.of("target", "meaning-fuzz", "s3-" + world.name() + ".txt"));
            world.fixture().close();
        }
    }

    @Provide
    Arbitrary<MeaningGrammar.Request> requests() {
        return MeaningGrammar.s3();
    }

    @Provide
    Arbitrary<String> worlds() {
        return Arbitraries.of(WORLD_NAMES);
    }

    /** Each try draws a request and the world it is sent to. */
    @Property(shrinking = ShrinkingMode.OFF)
    void noRequestChangesWhatItsFenceDidNotAdmit(@ForAll("requests") MeaningGrammar.Request request,
                                                 @ForAll("worlds") String world) throws Exception {
        World w = WORLDS.get(world);
        w.oracle().judge(request, (r, token) -> send(w, r, token));
    }

    /** Every request of the issue's reproductions, in order, in every world of the default policy. */
    @Example
    void theSeedsOfTheIssue() throws Exception {
        for (World world : WORLDS.values()) {
            if (!world.seeded()) {
                continue;
            }
            for (Map.Entry<String, List<MeaningGrammar.Request>> sequence : MeaningSeeds.s3Sequences().entrySet()) {
                for (MeaningGrammar.Request request : sequence.getValue()) {
                    world.oracle().judge(request.asSeed(sequence.getKey()), (r, token) -> send(world, r, token));
                }
            }
        }
    }

    /**
     * Found by the property: the serialized class planned DeleteObjects as a fenced write of the bucket's scope and
     * refused it (501) only in the write, after the token had raised that scope's fence: a refusal that moved a
     * fence. Since the one-decider issue the plan names every key's scope (and the class holds them all): the
     * bucket's scope is never a fence, and the key's rises to the token.
     */
    @Example
    void aDeleteObjectsFencesEveryKeyNeverTheBucket() throws Exception {
        for (World world : WORLDS.values()) {
            if (world.atomic() || !world.seeded()) {
                continue;
            }
            MeaningGrammar.Request deleteObjects = new MeaningGrammar.Builder("POST", "/" + MeaningGrammar.BUCKET)
                    .target("bucket").param("delete", null).body("<Delete><Object><Key>k</Key></Object></Delete>")
                    .token(MeaningGrammar.Token.HIGHER, 2).about(MeaningGrammar.BUCKET + "/k").build();
            MeaningOracle.Answer[] answer = new MeaningOracle.Answer[1];
            world.oracle().judge(deleteObjects.asSeed("DeleteObjects on the serialized class"), (r, token) -> {
                answer[0] = send(world, r, token);
                return answer[0];
            });
            org.junit.jupiter.api.Assertions.assertEquals(200, answer[0].status(), answer[0].body());
            org.junit.jupiter.api.Assertions.assertEquals(java.util.Optional.empty(), world.fixture().proxy.server()
                    .store().get("s3/" + MeaningGrammar.BUCKET), "the bucket's scope has no fence");
            org.junit.jupiter.api.Assertions.assertTrue(world.fixture().proxy.server().store()
                    .get("s3/" + MeaningGrammar.BUCKET + "/k").isPresent(), "the key's scope is fenced");
        }
    }

    /** Signs the request with the client's key as the grammar says (what is signed, presigned or not) and sends it. */
    static MeaningOracle.Answer send(World world, MeaningGrammar.Request request, Long token) throws Exception {
        S3Fixture.Raw raw = new S3Fixture.Raw(request.signedAs(), request.path()).sentAs(request.method());
        for (MeaningGrammar.Param p : request.query()) {
            raw.query(p.name(), p.value() == null ? "" : p.value());
        }
        for (MeaningGrammar.Header h : request.headers()) {
            if (h.signed()) {
                raw.header(h.name(), h.value());
            } else {
                raw.unsignedHeader(h.name(), h.value());
            }
        }
        String value = request.token() == MeaningGrammar.Token.MALFORMED ? "7x" : token == null ? null
                : token.toString();
        if (value != null && request.tokenSigned()) {
            raw.header("Fencing-Token", value);
        } else if (value != null) {
            raw.unsignedHeader("Fencing-Token", value);
        }
        if (request.presigned()) {
            raw.presigned();
        }
        Http.Response r = raw.body(request.body()).send(world.port());
        return new MeaningOracle.Answer(r.status(), r.body());
    }
}
