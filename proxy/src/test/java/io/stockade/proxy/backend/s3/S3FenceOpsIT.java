package io.stockade.proxy.backend.s3;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.net.http.HttpRequest;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import io.stockade.proxy.ProxyFixture;
import io.stockade.proxy.S3Fixture;
import io.stockade.proxy.admin.FenceCommand;
import io.stockade.proxy.fence.FenceAdmin;
import io.stockade.proxy.store.FenceStores;
import io.stockade.testing.Http;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.core.sync.RequestBody;
import software.amazon.awssdk.services.s3.S3Client;
import software.amazon.awssdk.services.s3.model.NoSuchKeyException;
import software.amazon.awssdk.services.s3.model.S3Exception;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The fence-state operations on s3 policies (s3proxy, the AWS SDK v2). The atomic class keeps each object's token in
 * the object's metadata, checked by the store's conditional write: the proxy has no fence of it to raise, so show,
 * raise, floors and retire on its scopes are refused (501 {@code not-supported}, saying where the token is and what
 * to do) and nothing moves — the object's token read straight from s3proxy is unchanged, nothing lands in the
 * proxy's store, and the object's fence judges writes as before. What the refusal advises works: a write with a
 * higher token fences the older writer out; with {@code fence-scope: prefix} the proxy's store keeps the fence and
 * a floor refuses the writes under it.
 */
class S3FenceOpsIT {
    static final String TOKEN = "s3-fence-ops-admin";
    static final String BUCKET = "ops";

    @TempDir
    Path dir;

    ProxyFixture adminProxy(S3Fixture fixture, String fenceScope) throws Exception {
        return ProxyFixture.start(dir.resolve("admin-j"), S3Fixture.POLICY + "admin: {token: " + TOKEN + "}\n",
                Map.of("S3PORT", Integer.toString(fixture.directUri().getPort()), "FENCE_SCOPE", fenceScope));
    }

    static Http.Response admin(ProxyFixture p, String method, String path, String body) throws Exception {
        return Http.send(method, p.uri(path), body == null ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(body), Map.of("Authorization", "Bearer " + TOKEN));
    }

    static void put(S3Client client, String key, long token, String body) {
        client.putObject(b -> b.bucket(BUCKET).key(key).overrideConfiguration(S3Fixture.token(token)),
                RequestBody.fromString(body));
    }

    static String tokenAtTheStore(S3Client direct, String key) {
        return direct.headObject(b -> b.bucket(BUCKET).key(key)).metadata().get("fencing-token");
    }

    static String content(S3Client direct, String key) {
        return direct.getObjectAsBytes(b -> b.bucket(BUCKET).key(key)).asUtf8String();
    }

    @Test
    void theAtomicClassRefusesRaiseAndFloorsAndNothingMoves() throws Exception {
        try (S3Fixture fixture = S3Fixture.start(dir.resolve("j"));
             ProxyFixture p = adminProxy(fixture, "object");
             S3Client direct = fixture.direct();
             S3Client client = S3Fixture.client(p.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            direct.createBucket(b -> b.bucket(BUCKET));
            put(client, "k", 5, "v5");
            FenceAdmin store = FenceStores.admin(p.server().store()).orElseThrow();

            Http.Response raise = admin(p, "POST", "/admin/fences/raise", "{\"scope\":\"s3/ops/k\",\"token\":1000}");
            assertEquals(501, raise.status(), raise.body());
            assertTrue(raise.body().contains("not-supported") && raise.body().contains("metadata")
                    && raise.body().contains("with a token above the writer's"), raise.body());
            Http.Response floor = admin(p, "POST", "/admin/fences/raise", "{\"prefix\":\"s3/ops/\",\"token\":1000}");
            assertEquals(501, floor.status(), floor.body());
            assertTrue(floor.body().contains("fence-scope: prefix"), floor.body());
            assertEquals(501, admin(p, "GET", "/admin/fences/scope?name=s3/ops/k", null).status());
            assertEquals(501, admin(p, "POST", "/admin/fences/retire", "{\"scope\":\"s3/ops/k\"}").status());
            assertEquals(501, admin(p, "POST", "/admin/fences/import",
                    "{\"kind\":\"scope\",\"scope\":\"s3/ops/k\",\"token\":1000}\n").status());
            Http.Response list = admin(p, "GET", "/admin/fences/scopes?prefix=s3/", null);
            assertTrue(list.body().contains("\"notCovered\":[{\"policy\":\"s3\""), list.body());

            Path config = dir.resolve("s3.yaml");
            Files.writeString(config, S3Fixture.POLICY.replace("${S3PORT}",
                    Integer.toString(fixture.directUri().getPort())).replace("${JOURNAL}",
                    dir.resolve("command-j").toString()));
            Run command = cli(config, "raise", "--scope", "s3/ops/k", "--token", "1000");
            assertEquals(3, command.code(), command.out());
            assertTrue(command.err().contains("not-supported") && command.err().contains("metadata"), command.err());

            // nothing moved: the object's token at the store, the store's fences, and how writes are judged
            assertEquals("5", tokenAtTheStore(direct, "k"));
            assertEquals(Optional.empty(), store.scope("s3/ops/k"));
            assertTrue(store.floors().isEmpty());
            S3Exception stale = assertThrows(S3Exception.class, () -> put(client, "k", 4, "zombie"));
            assertEquals(412, stale.statusCode());
            assertEquals("v5", content(direct, "k"));
            // what the refusal advises: a write with a higher token fences the older writer out
            put(client, "k", 1000, "v1000");
            assertEquals("1000", tokenAtTheStore(direct, "k"));
            assertEquals(412, assertThrows(S3Exception.class, () -> put(client, "k", 999, "zombie")).statusCode());
            assertEquals("v1000", content(direct, "k"));
        }
    }

    @Test
    void withAPrefixScopeTheStoreKeepsTheFenceAndAFloorHolds() throws Exception {
        try (S3Fixture fixture = S3Fixture.start(dir.resolve("j"));
             ProxyFixture p = adminProxy(fixture, "prefix");
             S3Client direct = fixture.direct();
             S3Client client = S3Fixture.client(p.uri(""), S3Fixture.APP_KEY, S3Fixture.APP_SECRET)) {
            direct.createBucket(b -> b.bucket(BUCKET));
            Http.Response floor = admin(p, "POST", "/admin/fences/raise",
                    "{\"prefix\":\"s3/ops/tenant/\",\"token\":100}");
            assertEquals(200, floor.status(), floor.body());
            S3Exception stale = assertThrows(S3Exception.class, () -> put(client, "tenant/a.txt", 50, "zombie"));
            assertEquals(412, stale.statusCode());
            assertThrows(NoSuchKeyException.class, () -> content(direct, "tenant/a.txt"));
            put(client, "tenant/a.txt", 100, "v100");
            assertEquals("v100", content(direct, "tenant/a.txt"));
            assertTrue(floor.body().contains("\"keeper\":\"store\""), floor.body());
        }
    }

    record Run(int code, String out, String err) {
    }

    static Run cli(Path config, String... args) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        List<String> all = new java.util.ArrayList<>(List.of("--config", config.toString()));
        all.addAll(List.of(args));
        int code = FenceCommand.run(all, new ByteArrayInputStream(new byte[0]),
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString(StandardCharsets.UTF_8));
    }
}
