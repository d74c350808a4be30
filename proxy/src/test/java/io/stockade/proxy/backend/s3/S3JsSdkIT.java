package io.stockade.proxy.backend.s3;

import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.zip.CRC32;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.testing.AwsSdkJs;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.ToolRun;
import io.stockade.testing.Tools;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.HeadObjectResponse;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The AWS SDK for JavaScript v3 as users run it ({@code @aws-sdk/client-s3}, {@code @aws-sdk/lib-storage},
 * {@code @aws-sdk/s3-request-presigner}, installed by {@code ./test.sh} into {@code .tools/aws-sdk-js}), in Node.js
 * scripts through the proxy to an in-process s3proxy, with the SDK's defaults: PutObject with its default checksums
 * (a file stream goes as aws-chunked with a CRC32 trailer), lib-storage's multipart {@code Upload}, DeleteObjects,
 * and a {@code getSignedUrl} presigned PutObject, whose {@code x-amz-meta-*}, {@code x-amz-checksum-crc32} and
 * {@code x-amz-sdk-checksum-algorithm} the presigner hoists into the query. The token goes as the SDK's user
 * metadata ({@code Metadata: {"fencing-token": "N"}}, policy {@code token-from-metadata: true}) or as a
 * {@code Fencing-Token} header added by a build-step middleware before signing (the JS counterpart of the botocore
 * hook). After each script, what reached s3proxy is read directly: bytes and {@code x-amz-meta-fencing-token}.
 */
@RequiresTools(Tools.Tool.AWS_SDK_JS)
class S3JsSdkIT {
    private static final String BUCKET = "jssdk";
    private static final Duration TIMEOUT = Duration.ofSeconds(90);
    @TempDir
    static Path journal;
    @TempDir
    static Path plainJournal;
    @TempDir
    static Path work;
    /** token-from-metadata: true */
    private static S3Fixture fixture;
    /** the same s3proxy behind a policy with token-from-metadata: false (the default) */
    private static ProxyFixture plain;
    private static S3Client direct;

    /**
     * What every script starts with: a client through the proxy with the SDK's defaults (one attempt per call), an
     * optional {@code Fencing-Token} header added before signing, and a record of what each request carried on the
     * wire (read after signing).
     */
    private static final String PRELUDE = """
            "use strict";
            const fs = require("node:fs");
            const { S3Client, PutObjectCommand, DeleteObjectsCommand } = require("@aws-sdk/client-s3");
            const { Upload } = require("@aws-sdk/lib-storage");
            const { getSignedUrl } = require("@aws-sdk/s3-request-presigner");
            const [endpoint, plainEndpoint, accessKeyId, secretAccessKey] = process.argv.slice(2);
            const wire = [];
            function header(h, name) {
                const k = Object.keys(h).find((n) => n.toLowerCase() === name);
                return k === undefined ? null : h[k];
            }
            function client(token, at) {
                const c = new S3Client({ endpoint: at ?? endpoint, region: "us-east-1", forcePathStyle: true,
                    credentials: { accessKeyId, secretAccessKey }, maxAttempts: 1 });
                if (token !== undefined) {
                    c.middlewareStack.add((next) => async (args) => {
                        args.request.headers["fencing-token"] = String(token);
                        return next(args);
                    }, { step: "build", name: "stockadeFencingToken" });
                }
                c.middlewareStack.add((next, context) => async (args) => {
                    const h = args.request.headers;
                    wire.push({ op: context.commandName, encoding: header(h, "content-encoding"),
                        trailer: header(h, "x-amz-trailer"), sha256: header(h, "x-amz-content-sha256"),
                        crc32: header(h, "x-amz-checksum-crc32") !== null });
                    return next(args);
                }, { step: "deserialize", priority: "low", name: "stockadeWire" });
                return c;
            }
            function out(o) {
                console.log(JSON.stringify(o));
            }
            async function attempt(step, call) {
                wire.length = 0;
                try {
                    const r = await call();
                    out({ step, ok: true });
                    return r;
                } catch (e) {
                    out({ step, ok: false, code: e.Code ?? e.name, status: e.$metadata?.httpStatusCode ?? null });
                    return null;
                }
            }
            """;

    @BeforeAll
    static void start() throws Exception {
        fixture = S3Fixture.start(journal, Map.of("TOKEN_FROM_METADATA", "true"));
        plain = fixture.anotherProxy(plainJournal, Map.of());
        direct = fixture.direct();
        direct.createBucket(b -> b.bucket(BUCKET));
    }

    @AfterAll
    static void stop() throws Exception {
        if (plain != null) {
            plain.close();
        }
        if (fixture != null) {
            fixture.close();
        }
    }

    /** Runs {@code body} after the prelude with Node.js, in the work directory. */
    private static ToolRun node(String name, String body) throws Exception {
        Path script = Files.writeString(work.resolve(name + ".cjs"), PRELUDE + "(async () => {\n" + body
                + "\n})().catch((e) => { console.error(e); process.exit(2); });\n");
        List<String> command = new ArrayList<>(List.of(AwsSdkJs.node().toString(), script.toString(),
                fixture.proxyUri().toString(), plain.uri("").toString(), S3Fixture.APP_KEY, S3Fixture.APP_SECRET));
        Map<String, String> env = new HashMap<>();
        env.put("NODE_PATH", AwsSdkJs.nodeModules().toString());
        env.put("HOME", work.toString());
        env.put("AWS_CONFIG_FILE", work.resolve("none").toString());
        env.put("AWS_SHARED_CREDENTIALS_FILE", work.resolve("none").toString());
        env.put("AWS_EC2_METADATA_DISABLED", "true");
        ToolRun r = ToolRun.run(command, work, work, k -> k.startsWith("AWS_") || k.startsWith("NODE_"), env, TIMEOUT);
        assertEquals(0, r.code(), r.toString());
        return r;
    }

    private static HeadObjectResponse stored(String key) {
        return direct.headObject(b -> b.bucket(BUCKET).key(key));
    }

    private static byte[] storedBytes(String key) {
        return direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asByteArray();
    }

    private static void assertStored(String key, byte[] bytes, long token) {
        assertArrayEquals(bytes, storedBytes(key), key);
        assertEquals(Long.toString(token), stored(key).metadata().get("fencing-token"), key);
        assertNull(stored(key).metadata().get("fencing-deleted"), key);
    }

    private static byte[] file(String name, int size, long seed) throws Exception {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        Files.write(work.resolve(name), data);
        return data;
    }

    /** The base64 CRC32 S3 takes as {@code x-amz-checksum-crc32}. */
    private static String crc32(byte[] data) {
        CRC32 crc = new CRC32();
        crc.update(data);
        return Base64.getEncoder().encodeToString(ByteBuffer.allocate(4).putInt((int) crc.getValue()).array());
    }

    private static String text(String key) {
        return new String(storedBytes(key), java.nio.charset.StandardCharsets.UTF_8);
    }

    /**
     * PutObject with the SDK's default checksums: a file stream goes aws-chunked with a trailing CRC32
     * ({@code STREAMING-UNSIGNED-PAYLOAD-TRAILER}), a string with an {@code x-amz-checksum-crc32} header. Fenced by
     * the header and by the metadata; a stale writer of either kind and a writer without a token change nothing.
     */
    @Test
    void putObjectWithTheDefaultChecksumsIsFenced() throws Exception {
        byte[] a = file("put-a.bin", 200_000, 1);
        file("put-b.bin", 150_000, 2);
        byte[] c = file("put-c.bin", 90_000, 3);
        ToolRun r = node("put", """
                const B = "jssdk";
                const put = (s3, Key, Body, Metadata) => s3.send(new PutObjectCommand({ Bucket: B, Key, Body,
                    Metadata }));
                await attempt("stream10", () => put(client(10), "put/stream", fs.createReadStream("put-a.bin")));
                out(wire);
                await attempt("string10", () => put(client(10), "put/string", "a string from 10"));
                out(wire);
                await attempt("stream9", () => put(client(9), "put/stream", fs.createReadStream("put-b.bin")));
                await attempt("string9", () => put(client(9), "put/string", "a zombie's string"));
                await attempt("meta11", () => put(client(), "put/meta", fs.createReadStream("put-c.bin"),
                    { "fencing-token": "11" }));
                out(wire);
                await attempt("meta10", () => put(client(), "put/meta", fs.createReadStream("put-b.bin"),
                    { "fencing-token": "10" }));
                await attempt("none", () => put(client(), "put/none", fs.createReadStream("put-b.bin")));
                """);
        String chunked = "[{\"op\":\"PutObjectCommand\",\"encoding\":\"aws-chunked\",\"trailer\":"
                + "\"x-amz-checksum-crc32\",\"sha256\":\"STREAMING-UNSIGNED-PAYLOAD-TRAILER\",\"crc32\":false}]";
        List<String> lines = r.lines();
        assertEquals(List.of(
                "{\"step\":\"stream10\",\"ok\":true}",
                chunked,
                "{\"step\":\"string10\",\"ok\":true}",
                lines.size() > 3 ? lines.get(3) : "",
                "{\"step\":\"stream9\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}",
                "{\"step\":\"string9\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}",
                "{\"step\":\"meta11\",\"ok\":true}",
                chunked,
                "{\"step\":\"meta10\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}",
                "{\"step\":\"none\",\"ok\":false,\"code\":\"MissingFencingToken\",\"status\":400}"),
                lines, r.toString());
        // the string went with its CRC32 as a header, signed in the payload hash
        assertTrue(lines.get(3).contains("\"encoding\":null") && lines.get(3).contains("\"crc32\":true"),
                lines.get(3));
        assertStored("put/stream", a, 10);
        assertEquals("a string from 10", text("put/string"));
        assertEquals("10", stored("put/string").metadata().get("fencing-token"));
        assertStored("put/meta", c, 11);
        assertThrows(NoSuchKeyException.class, () -> stored("put/none"));
    }

    /**
     * lib-storage's {@code Upload} (multipart: CreateMultipartUpload, UploadPart with CRC32 headers,
     * CompleteMultipartUpload): fenced by the header (on every request) or by the metadata (on the creation only). A
     * stale upload is refused at its creation; a zombie whose upload began under its token and stalled before its
     * Complete while a newer holder wrote is refused at the Complete.
     */
    @Test
    void libStorageMultipartUploadsAreFenced() throws Exception {
        byte[] u20 = file("mpu-20.bin", 6 * 1024 * 1024 + 3, 20);
        file("mpu-19.bin", 6 * 1024 * 1024 + 5, 19);
        file("mpu-21.bin", 6 * 1024 * 1024 + 7, 21);
        byte[] u23 = file("mpu-23.bin", 6 * 1024 * 1024 + 11, 23);
        String upload = """
                const upload = (s3, Body, Metadata) => new Upload({ client: s3, params: { Bucket: "jssdk",
                    Key: "mpu/big", Body, Metadata } }).done();
                const ops = () => out({ ops: wire.map((w) => w.op.replace("Command", "")) });
                """;
        ToolRun first = node("mpu-1", upload + """
                await attempt("upload20", () => upload(client(20), fs.createReadStream("mpu-20.bin")));
                ops();
                await attempt("upload19", () => upload(client(19), fs.createReadStream("mpu-19.bin")));
                ops();
                """);
        assertEquals(List.of(
                "{\"step\":\"upload20\",\"ok\":true}",
                "{\"ops\":[\"CreateMultipartUpload\",\"UploadPart\",\"UploadPart\",\"CompleteMultipartUpload\"]}",
                "{\"step\":\"upload19\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}",
                "{\"ops\":[\"CreateMultipartUpload\"]}"), first.lines(), first.toString());
        assertStored("mpu/big", u20, 20);

        ToolRun zombie = node("mpu-2", upload + """
                // the zombie's upload is created under 21 (the highest); before its Complete goes out, the next
                // holder writes the object with 22
                const z = client(21);
                z.middlewareStack.add((next, context) => async (args) => {
                    if (context.commandName === "CompleteMultipartUploadCommand") {
                        await client(22).send(new PutObjectCommand({ Bucket: "jssdk", Key: "mpu/big",
                            Body: "written by 22 while the zombie stalled" }));
                        out({ step: "put22", ok: true });
                    }
                    return next(args);
                }, { step: "build", name: "stall" });
                await attempt("upload21", () => upload(z, fs.createReadStream("mpu-21.bin")));
                """);
        assertEquals(List.of(
                "{\"step\":\"put22\",\"ok\":true}",
                "{\"step\":\"upload21\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}"),
                zombie.lines(), zombie.toString());
        assertEquals("written by 22 while the zombie stalled", text("mpu/big"));
        assertEquals("22", stored("mpu/big").metadata().get("fencing-token"));

        ToolRun meta = node("mpu-3", upload + """
                await attempt("meta21", () => upload(client(), fs.createReadStream("mpu-19.bin"),
                    { "fencing-token": "21" }));
                await attempt("meta23", () => upload(client(), fs.createReadStream("mpu-23.bin"),
                    { "fencing-token": "23" }));
                ops();
                """);
        assertEquals(List.of(
                "{\"step\":\"meta21\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}",
                "{\"step\":\"meta23\",\"ok\":true}",
                "{\"ops\":[\"CreateMultipartUpload\",\"UploadPart\",\"UploadPart\",\"CompleteMultipartUpload\"]}"),
                meta.lines(), meta.toString());
        assertStored("mpu/big", u23, 23);
    }

    /** DeleteObjects (its body's CRC32 as a header): a stale one deletes no key, the holder's leaves tombstones. */
    @Test
    void deleteObjectsIsFencedPerKey() throws Exception {
        String delete = """
                const del = (s3, keys) => s3.send(new DeleteObjectsCommand({ Bucket: "jssdk",
                    Delete: { Objects: keys.map((k) => ({ Key: k })) } }));
                const result = (r) => out({ deleted: (r?.Deleted ?? []).map((d) => d.Key).sort(),
                    errors: (r?.Errors ?? []).map((e) => e.Key + " " + e.Code).sort() });
                """;
        ToolRun stale = node("del-1", delete + """
                for (const k of ["del/a", "del/b", "del/c"]) {
                    await client(30).send(new PutObjectCommand({ Bucket: "jssdk", Key: k, Body: k + " from 30" }));
                }
                result(await attempt("delete29", () => del(client(29), ["del/a", "del/b"])));
                out(wire);
                """);
        assertEquals(List.of(
                "{\"step\":\"delete29\",\"ok\":true}",
                "{\"deleted\":[],\"errors\":[\"del/a PreconditionFailed\",\"del/b PreconditionFailed\"]}"),
                stale.lines().subList(0, 2), stale.toString());
        assertTrue(stale.lines().get(2).contains("\"crc32\":true"), stale.toString());
        for (String k : List.of("del/a", "del/b", "del/c")) {
            assertEquals(k + " from 30", text(k));
            assertEquals("30", stored(k).metadata().get("fencing-token"), k);
        }

        ToolRun holder = node("del-2", delete + """
                result(await attempt("delete30", () => del(client(30), ["del/a", "del/b"])));
                await attempt("put29", () => client(29).send(new PutObjectCommand({ Bucket: "jssdk", Key: "del/a",
                    Body: "recreated by 29" })));
                """);
        assertEquals(List.of(
                "{\"step\":\"delete30\",\"ok\":true}",
                "{\"deleted\":[\"del/a\",\"del/b\"],\"errors\":[]}",
                "{\"step\":\"put29\",\"ok\":false,\"code\":\"PreconditionFailed\",\"status\":412}"),
                holder.lines(), holder.toString());
        for (String k : List.of("del/a", "del/b")) {
            assertEquals("true", stored(k).metadata().get("fencing-deleted"), k);
            assertEquals("30", stored(k).metadata().get("fencing-token"), k);
        }
        assertEquals("del/c from 30", text("del/c"));
    }

    /** What a script uses to presign a PutObject with its token as metadata and to PUT to the URL with fetch. */
    private static final String PRESIGN = """
            const presign = (s3, Key, token, ChecksumCRC32) => getSignedUrl(s3, new PutObjectCommand({
                Bucket: "jssdk", Key, Metadata: { "fencing-token": token }, ChecksumCRC32 }), { expiresIn: 300 });
            const query = (url) => {
                const q = new URL(url).searchParams;
                return { hoisted: [...q.keys()].filter((k) => k.startsWith("x-amz-")).sort(),
                    token: q.get("x-amz-meta-fencing-token"), crc32: q.get("x-amz-checksum-crc32") };
            };
            const send = async (step, url, body) => {
                const r = await fetch(url, { method: "PUT", body });
                const t = await r.text();
                out({ step, status: r.status, code: t.includes("<Code>") ? t.split("<Code>")[1].split("</Code>")[0]
                    : null });
            };
            """;

    /**
     * A {@code getSignedUrl} presigned PutObject with {@code Metadata: {"fencing-token": "N"}}, PUT with
     * {@code fetch}: the presigner hoists the token (and the default CRC32 of the body it was given, none) into the
     * signed query. With {@code token-from-metadata: true} it is the token: accepted, a stale one 412, an altered
     * one 403. Without it the request is refused 400 and nothing is forwarded.
     */
    @Test
    void aPresignedPutCarriesItsTokenInTheSignedQuery() throws Exception {
        byte[] u40 = file("url-40.bin", 120_000, 40);
        file("url-other.bin", 80_000, 39);
        // the command given the body's CRC32: with none, the presigner signs the empty body's (AAAAAA==, below),
        // which AWS S3 holds against the body uploaded (s3proxy does not check it)
        ToolRun first = node("url-1", PRESIGN + "const crc = \"" + crc32(u40) + "\";\n" + """
                const url = await presign(client(), "url/k", "40", crc);
                out(query(url));
                await send("url40", url, fs.readFileSync("url-40.bin"));
                """);
        assertEquals(List.of(
                "{\"hoisted\":[\"x-amz-checksum-crc32\",\"x-amz-meta-fencing-token\"],\"token\":\"40\",\"crc32\":\""
                        + crc32(u40) + "\"}",
                "{\"step\":\"url40\",\"status\":200,\"code\":null}"), first.lines(), first.toString());
        assertStored("url/k", u40, 40);

        ToolRun refused = node("url-2", PRESIGN + """
                const stale = await presign(client(), "url/k", "39");
                out(query(stale));
                await send("url39", stale, fs.readFileSync("url-other.bin"));
                // whoever holds the URL cannot pick another token: the signature covers the query
                const url = await presign(client(), "url/k", "40");
                await send("altered", url.replace("x-amz-meta-fencing-token=40", "x-amz-meta-fencing-token=41"),
                    fs.readFileSync("url-other.bin"));
                // a policy without token-from-metadata does not read the query token: refused, never relayed
                await send("plain50", await presign(client(undefined, plainEndpoint), "url/k", "50"),
                    fs.readFileSync("url-other.bin"));
                """);
        assertEquals(List.of(
                "{\"hoisted\":[\"x-amz-checksum-crc32\",\"x-amz-meta-fencing-token\",\"x-amz-sdk-checksum-algorithm\"],"
                        + "\"token\":\"39\",\"crc32\":\"AAAAAA==\"}",
                "{\"step\":\"url39\",\"status\":412,\"code\":\"PreconditionFailed\"}",
                "{\"step\":\"altered\",\"status\":403,\"code\":\"SignatureDoesNotMatch\"}",
                "{\"step\":\"plain50\",\"status\":400,\"code\":\"InvalidArgument\"}"),
                refused.lines(), refused.toString());
        assertStored("url/k", u40, 40);

        // nothing moved the object's token past 40: a URL signed for 41 (by a client that adds no checksum) lands
        ToolRun next = node("url-3", PRESIGN + """
                const s3 = new S3Client({ endpoint, region: "us-east-1", forcePathStyle: true,
                    credentials: { accessKeyId, secretAccessKey }, requestChecksumCalculation: "WHEN_REQUIRED" });
                const url = await presign(s3, "url/k", "41");
                out(query(url));
                await send("url41", url, "written with 41");
                """);
        assertEquals(List.of(
                "{\"hoisted\":[\"x-amz-meta-fencing-token\"],\"token\":\"41\",\"crc32\":null}",
                "{\"step\":\"url41\",\"status\":200,\"code\":null}"), next.lines(), next.toString());
        assertEquals("written with 41", text("url/k"));
        assertEquals("41", stored("url/k").metadata().get("fencing-token"));
    }
}
