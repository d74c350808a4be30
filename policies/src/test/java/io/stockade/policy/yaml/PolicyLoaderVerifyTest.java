package io.stockade.policy.yaml;

import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import io.stockade.policy.ClientTls;
import io.stockade.policy.Datasource;
import io.stockade.policy.PolicyError;
import io.stockade.policy.PolicyException;
import io.stockade.policy.TokenVerification;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertDoesNotThrow;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** {@code fence.verify}: each kind with its defaults, secrets from the environment, located errors. */
class PolicyLoaderVerifyTest {
    private static final Path SOURCE = Path.of("test.yaml");
    private static final String KEY = "0123456789abcdef0123456789abcdef-k1";

    private static String policy(String verify) {
        return """
                store:
                  type: memory
                  journal: /var/lib/stockade
                policies:
                  - name: files
                    match:
                      path: /files/{path...}
                    scope: files/{path}
                    fence:
                      verify:
                %s
                    backend:
                      type: file
                      root: /srv/files
                """.formatted(verify.indent(8).stripTrailing());
    }

    private static TokenVerification verify(String verify, Map<String, String> env) throws PolicyException {
        return PolicyLoader.parse(policy(verify), SOURCE, env).policies().get(0).fence().verify();
    }

    @Test
    void withoutVerifyEveryTokenIsTakenAsSent() throws Exception {
        String yaml = policy("kind: hmac\nkeys: [{id: k1, key: " + KEY + "}]").replaceAll("(?s)      verify:.*?"
                + "    backend:", "      mode: enforce\n    backend:");
        assertNull(PolicyLoader.parse(yaml, SOURCE, Map.of()).policies().get(0).fence().verify());
    }

    @Test
    void etcdTakesEndpointsAndDefaults() throws Exception {
        TokenVerification v = verify("kind: etcd\nendpoints: ${ETCD}", Map.of("ETCD",
                "http://127.0.0.1:2379,http://127.0.0.1:2380"));
        assertEquals(new TokenVerification.Etcd(List.of(URI.create("http://127.0.0.1:2379"),
                URI.create("http://127.0.0.1:2380")), "", TokenVerification.Etcd.DEFAULT_TIMEOUT,
                TokenVerification.Cache.DEFAULT), v);
    }

    @Test
    void etcdWithPrefixTimeoutAndCache() throws Exception {
        TokenVerification v = verify("""
                kind: etcd
                endpoints: [http://127.0.0.1:2379]
                prefix: locks/
                timeout: 500ms
                cache: {ttl: 1m, max-entries: 10}""", Map.of());
        assertEquals(new TokenVerification.Etcd(List.of(URI.create("http://127.0.0.1:2379")), "locks/",
                Duration.ofMillis(500), new TokenVerification.Cache(true, Duration.ofMinutes(1), 10)), v);
    }

    @Test
    void etcdTakesTheStoresConnectionOptions() throws Exception {
        TokenVerification v = verify("""
                kind: etcd
                endpoints: https://etcd-0:2379,https://etcd-1:2379
                username: stockade
                password: ${ETCD_PASSWORD}
                tls: {ca: /etc/hostname, cert: /etc/hostname, key: /etc/hostname}""", Map.of("ETCD_PASSWORD", "pw"));
        TokenVerification.Etcd etcd = (TokenVerification.Etcd) v;
        assertEquals("stockade", etcd.username());
        assertEquals("pw", etcd.password());
        assertNull(etcd.passwordFile());
        assertEquals(new ClientTls(Path.of("/etc/hostname"), Path.of("/etc/hostname"), Path.of("/etc/hostname")),
                etcd.tls());
        assertFalse(etcd.toString().contains("pw,"), etcd.toString());

        TokenVerification.Etcd fromFile = (TokenVerification.Etcd) verify("""
                kind: etcd
                endpoints: [http://127.0.0.1:2379]
                username: stockade
                password-file: /run/secrets/etcd""", Map.of());
        assertEquals(Path.of("/run/secrets/etcd"), fromFile.passwordFile());
        assertNull(fromFile.password());
        assertNull(fromFile.tls());
    }

    @Test
    void postgresTakesADatasourceAndTheSdkLeaseTable() throws Exception {
        TokenVerification v = verify("""
                kind: postgres
                datasource: {url: "jdbc:postgresql://127.0.0.1:5432/test", password: "${PGPASSWORD}"}
                cache: {enabled: false}""", Map.of("PGPASSWORD", "pw"));
        TokenVerification.Postgres pg = (TokenVerification.Postgres) v;
        assertEquals("stockade_leases", pg.table());
        assertEquals("", pg.prefix());
        assertEquals("pw", pg.datasource().password());
        assertFalse(pg.cache().enabled());
        assertFalse(pg.toString().contains("pw,"), pg.toString());
    }

    /** A datasource's statements: auto unless said, the three words, anything else refused naming them and where. */
    @Test
    void aDatasourcesStatementsAreAutoUnlessSaidAndAnUnknownWordIsRefused() throws Exception {
        String ds = "kind: postgres\ndatasource: {url: \"jdbc:postgresql://127.0.0.1:5432/test\"%s}";
        assertEquals(Datasource.Statements.AUTO,
                ((TokenVerification.Postgres) verify(ds.formatted(""), Map.of())).datasource().statements());
        assertEquals(Datasource.Statements.UNNAMED, ((TokenVerification.Postgres) verify(
                ds.formatted(", statements: unnamed"), Map.of())).datasource().statements());
        assertEquals(Datasource.Statements.NAMED, ((TokenVerification.Postgres) verify(
                ds.formatted(", statements: named"), Map.of())).datasource().statements());
        PolicyException e = assertThrows(PolicyException.class,
                () -> verify(ds.formatted(", statements: prepared"), Map.of()));
        assertTrue(e.getMessage().contains("policies[0].fence.verify.datasource.statements")
                && e.getMessage().contains("auto") && e.getMessage().contains("unnamed"), e.getMessage());
    }

    @Test
    void kubernetesTakesANamespaceAndInClusterDefaults() throws Exception {
        TokenVerification.Kubernetes k8s = (TokenVerification.Kubernetes) verify("""
                kind: kubernetes
                namespace: jobs""", Map.of());
        assertEquals(URI.create("https://kubernetes.default.svc"), k8s.apiServer());
        assertEquals("jobs", k8s.namespace());
        assertEquals("", k8s.prefix());
        assertEquals(Path.of("/var/run/secrets/kubernetes.io/serviceaccount/token"), k8s.tokenFile());
        assertNull(k8s.tls());
        assertEquals(Duration.ofSeconds(2), k8s.timeout());
        assertEquals(Duration.ofSeconds(5), k8s.clockSkew());
        assertEquals(TokenVerification.Cache.DEFAULT, k8s.cache());
    }

    @Test
    void kubernetesWithEveryOption() throws Exception {
        TokenVerification.Kubernetes k8s = (TokenVerification.Kubernetes) verify("""
                kind: kubernetes
                api-server: https://10.0.0.1:6443
                namespace: stockade-jobs
                prefix: lock-
                token-file: /run/secrets/k8s-token
                tls: {ca: /etc/hostname}
                timeout: 500ms
                clock-skew: 2s
                cache: {ttl: 3s}""", Map.of());
        assertEquals(URI.create("https://10.0.0.1:6443"), k8s.apiServer());
        assertEquals("lock-", k8s.prefix());
        assertEquals(Path.of("/run/secrets/k8s-token"), k8s.tokenFile());
        assertEquals(Path.of("/etc/hostname"), k8s.tls().ca());
        assertEquals(Duration.ofMillis(500), k8s.timeout());
        assertEquals(Duration.ofSeconds(2), k8s.clockSkew());
        assertEquals(Duration.ofSeconds(3), k8s.cache().ttl());
    }

    @Test
    void kubernetesErrorsAreLocatedAtTheValue() {
        PolicyException e = assertThrows(PolicyException.class, () -> verify("""
                kind: kubernetes
                api-server: http://127.0.0.1:8080
                namespace: Jobs_1
                prefix: Lock/
                tls: {ca: /etc/hostname}
                timeout: 0s""", Map.of()));
        List<String> errors = e.errors().stream().map(PolicyError::toString).toList();
        assertEquals(4, errors.size(), errors.toString());
        assertTrue(errors.get(0).startsWith("test.yaml:13:20: policies[0].fence.verify.namespace: 'Jobs_1' is not a"
                + " namespace"), errors.toString());
        assertTrue(errors.get(1).startsWith("test.yaml:14:17: policies[0].fence.verify.prefix: 'Lock/' cannot start"
                + " a Lease name"), errors.toString());
        assertTrue(errors.get(2).startsWith("test.yaml:15:14: policies[0].fence.verify.tls: tls applies to an"
                + " https:// api-server"), errors.toString());
        assertTrue(errors.get(3).startsWith("test.yaml:16:18: policies[0].fence.verify.timeout: a duration must be"
                + " positive"), errors.toString());
    }

    @Test
    void kubernetesNeedsANamespace() {
        PolicyException e = assertThrows(PolicyException.class, () -> verify("kind: kubernetes", Map.of()));
        assertTrue(e.getMessage().contains("policies[0].fence.verify: missing required key 'namespace'"),
                e.getMessage());
    }

    @Test
    void redisTakesAUrlAndDefaults() throws Exception {
        TokenVerification v = verify("kind: redis\nurl: ${REDIS}", Map.of("REDIS", "redis://127.0.0.1:6380"));
        assertEquals(new TokenVerification.Redis(URI.create("redis://127.0.0.1:6380"), "",
                TokenVerification.Redis.DEFAULT_TIMEOUT, TokenVerification.Cache.DEFAULT), v);
        TokenVerification.Redis redis = (TokenVerification.Redis) v;
        assertFalse(redis.secure());
        assertEquals(6380, redis.port());
        assertEquals(0, redis.database());
        TokenVerification.Redis defaults = (TokenVerification.Redis) verify("kind: redis\nurl: redis://cache/3",
                Map.of());
        assertEquals(6379, defaults.port());
        assertEquals(3, defaults.database());
    }

    @Test
    void zookeeperTakesServersAPrefixAndDefaults() throws Exception {
        assertEquals(new TokenVerification.ZooKeeper(List.of("127.0.0.1:2181"), "/", Duration.ofSeconds(2),
                TokenVerification.Cache.DEFAULT), verify("kind: zookeeper\nservers: 127.0.0.1", Map.of()));
        TokenVerification.ZooKeeper zk = (TokenVerification.ZooKeeper) verify("""
                kind: zookeeper
                servers: ${ZK}
                prefix: /locks/
                timeout: 500ms
                cache: {enabled: false}""", Map.of("ZK", "zk1:2181, zk2:2182,[::1]:2183"));
        assertEquals(List.of("zk1:2181", "zk2:2182", "[::1]:2183"), zk.servers());
        assertEquals("zk1:2181,zk2:2182,[::1]:2183", zk.connectString());
        assertEquals("/locks/", zk.prefix());
        assertEquals(Duration.ofMillis(500), zk.timeout());
        assertFalse(zk.cache().enabled());
        assertEquals(List.of("a:2181", "b:1"), ((TokenVerification.ZooKeeper) verify(
                "kind: zookeeper\nservers: [a, \"b:1\"]\nprefix: /x", Map.of())).servers());
    }

    /**
     * A zxid's epoch (its high 32 bits) rises at every leader election, and elections add up while a scope is
     * idle: any max-advance would lock the scope out, so the combination is refused where max-advance is written.
     */
    @Test
    void maxAdvanceBesideAZooKeeperVerifierIsRefusedWithTheReason() {
        String yaml = policy("kind: zookeeper\nservers: 127.0.0.1").replace("      verify:\n",
                "      max-advance: 4294967296000\n      verify:\n");
        PolicyException e = assertThrows(PolicyException.class, () -> PolicyLoader.parse(yaml, SOURCE, Map.of()));
        List<String> errors = e.errors().stream().map(PolicyError::toString).toList();
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.get(0).startsWith("test.yaml:10:20: policies[0].fence.max-advance: cannot be used with"
                + " verify kind zookeeper: a ZooKeeper token is a zxid, raised by 2^32 at every leader election"),
                errors.toString());
        // other kinds keep it (an etcd revision rises by one per write)
        assertDoesNotThrow(() -> PolicyLoader.parse(policy("kind: etcd\nendpoints: http://127.0.0.1:2379")
                .replace("      verify:\n", "      max-advance: 1000\n      verify:\n"), SOURCE, Map.of()));
    }

    @Test
    void consulTakesAUrlAPrefixAnAclTokenAndDefaults() throws Exception {
        assertEquals(new TokenVerification.Consul(URI.create("http://127.0.0.1:8500"), "", Duration.ofSeconds(2),
                TokenVerification.Cache.DEFAULT), verify("kind: consul\nurl: http://127.0.0.1:8500", Map.of()));
        TokenVerification.Consul consul = (TokenVerification.Consul) verify("""
                kind: consul
                url: ${CONSUL}
                prefix: locks/
                token: ${CONSUL_HTTP_TOKEN}
                timeout: 500ms
                cache: {enabled: false}""", Map.of("CONSUL", "http://consul.internal:8500",
                "CONSUL_HTTP_TOKEN", "9a5a8d4c-acl"));
        assertEquals(URI.create("http://consul.internal:8500"), consul.url());
        assertEquals("locks/", consul.prefix());
        assertEquals("9a5a8d4c-acl", consul.token());
        assertFalse(consul.toString().contains("9a5a8d4c-acl"), consul.toString());
        assertEquals(Duration.ofMillis(500), consul.timeout());
        assertFalse(consul.cache().enabled());
        assertEquals(Path.of("/run/secrets/consul"), ((TokenVerification.Consul) verify(
                "kind: consul\nurl: https://c:8501\ntoken-file: /run/secrets/consul", Map.of())).tokenFile());
    }

    @Test
    void dynamodbTakesATableARegionAnEndpointKeysAndDefaults() throws Exception {
        assertEquals(new TokenVerification.DynamoDb("locks", "", "eu-west-1", null, null, null, Duration.ofSeconds(2),
                TokenVerification.Cache.DEFAULT), verify("kind: dynamodb\ntable: locks\nregion: eu-west-1", Map.of()));
        TokenVerification.DynamoDb dynamo = (TokenVerification.DynamoDb) verify("""
                kind: dynamodb
                table: Stockade.Locks-1
                prefix: locks/
                region: us-gov-east-1
                endpoint: ${DYNAMODB_ENDPOINT}
                access-key: AKIDEXAMPLE
                secret-key: ${AWS_SECRET_ACCESS_KEY}
                timeout: 750ms
                cache: {enabled: false}""", Map.of("DYNAMODB_ENDPOINT", "http://127.0.0.1:8000",
                "AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI-secret"));
        assertEquals("Stockade.Locks-1", dynamo.table());
        assertEquals("locks/", dynamo.prefix());
        assertEquals("us-gov-east-1", dynamo.region());
        assertEquals(URI.create("http://127.0.0.1:8000"), dynamo.endpoint());
        assertEquals("AKIDEXAMPLE", dynamo.accessKey());
        assertEquals("wJalrXUtnFEMI-secret", dynamo.secretKey());
        assertFalse(dynamo.toString().contains("wJalrXUtnFEMI-secret"), dynamo.toString());
        assertEquals(Duration.ofMillis(750), dynamo.timeout());
        assertFalse(dynamo.cache().enabled());
    }

    @Test
    void redisTakesAnAclUserAPasswordTlsAndACache() throws Exception {
        TokenVerification.Redis redis = (TokenVerification.Redis) verify("""
                kind: redis
                url: rediss://redis.internal:6380/2
                prefix: "locks:"
                username: stockade-verifier
                password: ${REDIS_PASSWORD}
                tls: {ca: /etc/hostname, cert: /etc/hostname, key: /etc/hostname}
                timeout: 300ms
                cache: {ttl: 1m}""", Map.of("REDIS_PASSWORD", "pw-xyz"));
        assertTrue(redis.secure());
        assertEquals(2, redis.database());
        assertEquals("locks:", redis.prefix());
        assertEquals("stockade-verifier", redis.username());
        assertEquals("pw-xyz", redis.password());
        assertEquals(Path.of("/etc/hostname"), redis.tls().ca());
        assertEquals(Duration.ofMillis(300), redis.timeout());
        assertEquals(Duration.ofMinutes(1), redis.cache().ttl());
        assertFalse(redis.toString().contains("pw-xyz"), redis.toString());

        TokenVerification.Redis fromFile = (TokenVerification.Redis) verify("""
                kind: redis
                url: redis://127.0.0.1
                password-file: /run/secrets/redis""", Map.of());
        assertNull(fromFile.username(), "no username: the default user (requirepass)");
        assertEquals(Path.of("/run/secrets/redis"), fromFile.passwordFile());
    }

    @Test
    void redisErrorsAreLocatedAtTheValue() {
        PolicyException e = assertThrows(PolicyException.class, () -> verify("""
                kind: redis
                url: redis://app:secret@127.0.0.1:6379
                password: other""", Map.of()));
        List<String> errors = e.errors().stream().map(PolicyError::toString).toList();
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.get(0).startsWith("test.yaml:12:14: policies[0].fence.verify.url: URL 'redis://…@127.0.0.1"
                + ":6379' carries credentials"), errors.toString());
        assertFalse(e.getMessage().contains("secret"), "the password must not reach a message: " + e.getMessage());

        e = assertThrows(PolicyException.class, () -> verify("""
                kind: redis
                url: redis://127.0.0.1:6379
                username: stockade
                tls: {ca: /etc/hostname}""", Map.of()));
        errors = e.errors().stream().map(PolicyError::toString).toList();
        assertEquals(2, errors.size(), errors.toString());
        assertTrue(errors.get(0).startsWith("test.yaml:13:19: policies[0].fence.verify.username: a Redis user"
                + " authenticates with a password"), errors.toString());
        assertTrue(errors.get(1).startsWith("test.yaml:14:14: policies[0].fence.verify.tls: tls applies to a"
                + " rediss:// url"), errors.toString());

    }

    @Test
    void hmacTakesSeveralKeysFromTheEnvironmentOrAFile() throws Exception {
        TokenVerification v = verify("""
                kind: hmac
                keys:
                  - {id: k2, key: "${FENCE_KEY}"}
                  - {id: k1, key-file: /run/secrets/k1}""", Map.of("FENCE_KEY", KEY));
        TokenVerification.Hmac hmac = (TokenVerification.Hmac) v;
        assertEquals(List.of(new TokenVerification.SharedKey("k2", KEY, null),
                new TokenVerification.SharedKey("k1", null, Path.of("/run/secrets/k1"))), hmac.shared());
        assertEquals("Fencing-Token-Signature", hmac.header());
        assertEquals(Duration.ofSeconds(5), hmac.clockSkew());
        assertFalse(hmac.toString().contains(KEY), "the key must not reach a log: " + hmac);
    }

    @Test
    void errorsAreLocatedAtTheValue() {
        PolicyException e = assertThrows(PolicyException.class, () -> verify("""
                kind: hmac
                keys: []
                header: "Fencing Signature\"""", Map.of()));
        List<String> errors = e.errors().stream().map(PolicyError::toString).toList();
        assertEquals(2, errors.size(), errors.toString());
        assertTrue(errors.get(0).startsWith("test.yaml:12:15: policies[0].fence.verify.keys: list at least one key"),
                errors.toString());
        assertTrue(errors.get(1).startsWith("test.yaml:13:17: policies[0].fence.verify.header: 'Fencing Signature'"
                + " is not a valid header name"), errors.toString());
    }

    @Test
    void anUnsetKeyVariableIsAnErrorNotAnEmptyKey() {
        PolicyException e = assertThrows(PolicyException.class, () -> verify("""
                kind: hmac
                keys: [{id: k1, key: "${FENCE_KEY}"}]""", Map.of()));
        assertTrue(e.getMessage().contains("policies[0].fence.verify.keys[0].key"), e.getMessage());
        assertTrue(e.getMessage().contains("FENCE_KEY"), e.getMessage());
    }

    /** The default is no prefix; written, a prefix must not be empty (as the schema's minLength 1 says). */
    @Test
    void anEmptyPrefixIsRefusedAsTheSchemaSays() {
        for (String kind : List.of("kind: etcd\nendpoints: http://127.0.0.1:2379",
                "kind: postgres\ndatasource: {url: \"jdbc:postgresql://127.0.0.1:5432/test\"}",
                "kind: redis\nurl: redis://127.0.0.1:6379")) {
            for (String prefix : List.of("prefix: \"\"", "prefix: \"${LOCK_PREFIX}\"")) {
                PolicyException e = assertThrows(PolicyException.class,
                        () -> verify(kind + "\n" + prefix, Map.of("LOCK_PREFIX", "")));
                assertTrue(e.getMessage().contains("policies[0].fence.verify.prefix: must not be empty"),
                        e.getMessage());
            }
        }
    }

    @Test
    void aMissingKindListsTheKinds() {
        PolicyException e = assertThrows(PolicyException.class, () -> verify("prefix: x", Map.of()));
        assertTrue(e.getMessage().contains("policies[0].fence.verify: missing required key 'kind'"), e.getMessage());
    }
}
