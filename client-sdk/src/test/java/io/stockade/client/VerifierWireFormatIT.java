package io.stockade.client;

import java.net.URI;
import java.net.http.HttpClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;
import io.stockade.proxy.verify.TokenVerifier;
import io.stockade.proxy.verify.TokenVerifier.Claim;
import io.stockade.proxy.verify.TokenVerifier.Genuine;
import io.stockade.proxy.verify.TokenVerifier.Refused;
import io.stockade.proxy.verify.registry.TokenVerifiers;
import io.stockade.testing.ConsulStandIn;
import io.stockade.testing.Dynalite;
import io.stockade.testing.EtcdServer;
import io.stockade.testing.RedisServer;
import io.stockade.testing.RequiresTools;
import io.stockade.testing.Tools;

import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import software.amazon.awssdk.services.dynamodb.DynamoDbClient;

import static org.junit.jupiter.api.Assertions.assertInstanceOf;

/**
 * The one check of the wire format between the SDK's lease providers (the writers of a lock's state) and the proxy's
 * {@code fence.verify} verifiers (its readers), on each lock service: a lease taken with the SDK's real provider is
 * read by the proxy's real verifier, opened from a policy as the proxy opens it. The holder's token is genuine; the
 * next token up and the token of a released lease are refused. The two sides share no code (the SDK depends on nothing
 * of Stockade's), so a change of the Redis value, the DynamoDB attribute names, the etcd lock key, the ZooKeeper node
 * names, the Consul key, the Kubernetes Lease or the PostgreSQL lease table on either side fails here. This module is
 * the one that sees both: its tests have the proxy on their class path, and the proxy's tests cannot have the SDK
 * (that would be a cycle). The proxy's own verifier tests write the lock state in the reader's format directly.
 */
@RequiresTools({Tools.Tool.REDIS, Tools.Tool.DYNALITE, Tools.Tool.ETCD})
class VerifierWireFormatIT {
    private static final Duration TTL = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    @Test
    void redis() throws Exception {
        try (RedisServer redis = RedisServer.start(RedisServer.options());
             LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1").redis(redis.url())) {
            check(sdk, "{kind: redis, url: \"" + redis.url() + "\", prefix: \"locks:\", cache: {enabled: false}}",
                    "locks:");
        }
    }

    @Test
    void dynamodb() throws Exception {
        try (Dynalite dynalite = Dynalite.start();
             DynamoDbClient db = dynalite.client()) {
            DynamoDbLockTable.create(db, "locks");
            try (LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1").dynamodb(db, "locks", "locks/")) {
                check(sdk, "{kind: dynamodb, table: locks, prefix: locks/, region: " + Dynalite.REGION
                        + ", endpoint: \"" + dynalite.endpoint() + "\", access-key: " + Dynalite.ACCESS_KEY
                        + ", secret-key: " + Dynalite.SECRET_KEY + ", cache: {enabled: false}}", "");
            }
        }
    }

    @Test
    void etcd() throws Exception {
        try (EtcdServer etcd = EtcdServer.single();
             LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1").etcd(etcd.endpoints().split(","))) {
            check(sdk, "{kind: etcd, endpoints: \"" + etcd.endpoints() + "\", prefix: locks/, cache: {enabled: false}}",
                    "locks/");
        }
    }

    @Test
    void zookeeper() throws Exception {
        try (TestingServer zk = new TestingServer(true);
             LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1").zookeeper(zk.getConnectString(),
                     "/locks/")) {
            check(sdk, "{kind: zookeeper, servers: \"" + zk.getConnectString() + "\", prefix: /locks/,"
                    + " cache: {enabled: false}}", "");
        }
    }

    @Test
    void consul() throws Exception {
        try (ConsulStandIn consul = new ConsulStandIn();
             LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1").consul(URI.create(consul.url()), "locks/",
                     null)) {
            check(sdk, "{kind: consul, url: \"" + consul.url() + "\", prefix: locks/, cache: {enabled: false}}", "",
                    "files/" + UUID.randomUUID());
        }
    }

    /** A Lease's name is a DNS subdomain: the scope here has no '/'. */
    @Test
    void kubernetes() throws Exception {
        Path token = Files.writeString(dir.resolve("token"), "verifier-token");
        try (LeaseApiServer api = new LeaseApiServer();
             LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1").kubernetes(api.uri(), "jobs", "w1-token",
                     HttpClient.newHttpClient())) {
            check(sdk, "{kind: kubernetes, api-server: \"" + api.uri() + "\", namespace: jobs, prefix: lease-,"
                    + " token-file: \"" + token + "\", cache: {enabled: false}}", "lease-", "job-" + UUID.randomUUID());
        }
    }

    @Test
    void postgres() throws Exception {
        try (LeaseProvider sdk = Leases.newBuilder().holderIdentity("w1")
                .postgres("jdbc:postgresql://127.0.0.1:5432/test?user=postgres")) {
            check(sdk, "{kind: postgres, datasource: {url: \"jdbc:postgresql://127.0.0.1:5432/test\", user: postgres},"
                    + " cache: {enabled: false}}", "");
        }
    }

    /**
     * Takes a lease on a fresh scope with {@code sdk} and asks the verifier of a policy with {@code verify} about
     * it. {@code namePrefix} goes before the scope in the lease's name where the SDK takes no prefix of its own
     * (Redis, etcd, Kubernetes: the lease's name is the key).
     */
    private void check(LeaseProvider sdk, String verify, String namePrefix) throws Exception {
        check(sdk, verify, namePrefix, "files/" + UUID.randomUUID());
    }

    private void check(LeaseProvider sdk, String verify, String namePrefix, String scope) throws Exception {
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: "%s"}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    fence:
                      verify: %s
                    backend: {type: file, root: "%s"}
                """.formatted(dir.resolve("journal"), verify, dir), dir.resolve("policy.yaml"), Map.of());
        try (TokenVerifiers verifiers = new TokenVerifiers(Clock.systemUTC())) {
            verifiers.open(config.policies());
            TokenVerifier verifier = verifiers.of(config.policies().get(0));
            Lease lease = sdk.acquire(namePrefix + scope, TTL, Duration.ofSeconds(10));
            long token = lease.token();
            assertInstanceOf(Genuine.class, verifier.verify(claim(scope, token)), "the holder's token");
            assertInstanceOf(Refused.class, verifier.verify(claim(scope, token + 1)), "a token above the holder's");
            lease.close();
            assertInstanceOf(Refused.class, verifier.verify(claim(scope, token)), "the token of a released lease");
        }
    }

    private static Claim claim(String scope, long token) {
        return new Claim(scope, token, header -> List.of());
    }
}
