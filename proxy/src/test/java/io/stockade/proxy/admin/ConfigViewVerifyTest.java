package io.stockade.proxy.admin;

import java.nio.file.Path;
import java.util.Map;

import io.stockade.policy.StockadeConfig;
import io.stockade.policy.yaml.PolicyLoader;

import org.junit.jupiter.api.Test;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The policy view ({@code GET /admin/policies}) never shows a {@code fence.verify} secret, but shows the rest. */
class ConfigViewVerifyTest {
    private static final String KEY = "0123456789abcdef0123456789abcdef-secret";

    @Test
    void hmacKeysAndVerifierPasswordsAreRedacted() throws Exception {
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: signed
                    match: {path: "/s/{id}"}
                    scope: "s/{id}"
                    fence:
                      verify:
                        kind: hmac
                        keys: [{id: k1, key: "${KEY}"}, {id: k0, key-file: /run/secrets/k0}]
                    backend: {type: file, root: ./r}
                  - name: leased
                    match: {path: "/l/{id}"}
                    scope: "l/{id}"
                    fence:
                      verify:
                        kind: postgres
                        datasource: {url: "jdbc:postgresql://db/app", user: app, password: "${PW}"}
                    backend: {type: file, root: ./r}
                """, Path.of("p.yaml"), Map.of("KEY", KEY, "PW", "db-password-xyz"));
        String json = ConfigView.json(config);
        assertFalse(json.contains(KEY), json);
        assertFalse(json.contains("db-password-xyz"), json);
        assertTrue(json.contains("\"id\":\"k1\""), json);
        assertTrue(json.contains("/run/secrets/k0"), json);
        assertTrue(json.contains("stockade_leases"), json);
    }

    @Test
    void theEtcdVerifiersPasswordIsRedactedItsUserFileAndTlsShown() throws Exception {
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: locked
                    match: {path: "/k/{id}"}
                    scope: "k/{id}"
                    fence:
                      verify:
                        kind: etcd
                        endpoints: https://etcd-0:2379
                        username: stockade-verifier
                        password: "${PW}"
                        tls: {ca: /etc/hostname}
                    backend: {type: file, root: ./r}
                  - name: filed
                    match: {path: "/f/{id}"}
                    scope: "f/{id}"
                    fence:
                      verify:
                        kind: etcd
                        endpoints: https://etcd-0:2379
                        username: stockade-verifier
                        password-file: /run/secrets/etcd-password
                    backend: {type: file, root: ./r}
                """, Path.of("p.yaml"), Map.of("PW", "etcd-password-xyz"));
        String json = ConfigView.json(config);
        assertFalse(json.contains("etcd-password-xyz"), json);
        assertTrue(json.contains("\"password\":\"" + ConfigView.REDACTED + "\""), json);
        assertTrue(json.contains("stockade-verifier"), json);
        assertTrue(json.contains("/run/secrets/etcd-password"), json);
        assertTrue(json.contains("\"ca\":\"/etc/hostname\""), json);
    }

    /** The Kubernetes verifier's bearer token is in a file the proxy reads per lookup: the view shows the path only. */
    @Test
    void theKubernetesVerifiersTokenFileIsShownAsAPathNeverItsContents() throws Exception {
        java.nio.file.Path tokenFile = java.nio.file.Files.createTempFile("sa-token", "");
        try {
            java.nio.file.Files.writeString(tokenFile, "eyJ-service-account-token-xyz");
            StockadeConfig config = PolicyLoader.parse("""
                    store: {type: memory, journal: ./j}
                    policies:
                      - name: leased
                        match: {path: "/k/{id}"}
                        scope: "k-{id}"
                        fence:
                          verify: {kind: kubernetes, namespace: jobs, prefix: lease-, token-file: "${TF}"}
                        backend: {type: file, root: ./r}
                    """, Path.of("p.yaml"), Map.of("TF", tokenFile.toString()));
            String json = ConfigView.json(config);
            assertFalse(json.contains("eyJ-service-account-token-xyz"), json);
            assertTrue(json.contains(tokenFile.toString()), json);
            assertTrue(json.contains("https://kubernetes.default.svc"), json);
            assertTrue(json.contains("\"namespace\":\"jobs\""), json);
        } finally {
            java.nio.file.Files.delete(tokenFile);
        }
    }

    @Test
    void theRedisVerifiersPasswordIsRedactedItsUrlUserAndTlsShown() throws Exception {
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: locked
                    match: {path: "/k/{id}"}
                    scope: "k/{id}"
                    fence:
                      verify:
                        kind: redis
                        url: rediss://redis.internal:6380/2
                        username: stockade-verifier
                        password: "${PW}"
                        tls: {ca: /etc/hostname}
                    backend: {type: file, root: ./r}
                """, Path.of("p.yaml"), Map.of("PW", "redis-password-xyz"));
        String json = ConfigView.json(config);
        assertFalse(json.contains("redis-password-xyz"), json);
        assertTrue(json.contains("\"password\":\"" + ConfigView.REDACTED + "\""), json);
        assertTrue(json.contains("rediss://redis.internal:6380/2"), json);
        assertTrue(json.contains("stockade-verifier"), json);
    }

    @Test
    void theConsulVerifiersAclTokenIsRedactedItsUrlPrefixAndTokenFileShown() throws Exception {
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: locked
                    match: {path: "/k/{id}"}
                    scope: "k/{id}"
                    fence:
                      verify: {kind: consul, url: "http://consul.internal:8500", prefix: locks/, token: "${T}"}
                    backend: {type: file, root: ./r}
                  - name: filed
                    match: {path: "/f/{id}"}
                    scope: "f/{id}"
                    fence:
                      verify: {kind: consul, url: "http://consul.internal:8500", token-file: /run/secrets/consul}
                    backend: {type: file, root: ./r}
                """, Path.of("p.yaml"), Map.of("T", "consul-acl-token-xyz"));
        String json = ConfigView.json(config);
        assertFalse(json.contains("consul-acl-token-xyz"), json);
        assertTrue(json.contains("\"token\":\"" + ConfigView.REDACTED + "\""), json);
        assertTrue(json.contains("http://consul.internal:8500"), json);
        assertTrue(json.contains("\"prefix\":\"locks/\""), json);
        assertTrue(json.contains("/run/secrets/consul"), json);
    }

    @Test
    void theDynamoDbVerifiersKeysAreRedactedItsTableRegionAndEndpointShown() throws Exception {
        StockadeConfig config = PolicyLoader.parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: locked
                    match: {path: "/k/{id}"}
                    scope: "k/{id}"
                    fence:
                      verify: {kind: dynamodb, table: stockade-locks, region: eu-west-1,
                               endpoint: "http://127.0.0.1:8000", access-key: AKIDEXAMPLE, secret-key: "${S}"}
                    backend: {type: file, root: ./r}
                """, Path.of("p.yaml"), Map.of("S", "wJalrXUtnFEMI-dynamo-secret"));
        String json = ConfigView.json(config);
        assertFalse(json.contains("wJalrXUtnFEMI-dynamo-secret"), json);
        assertTrue(json.contains("\"secretKey\":\"" + ConfigView.REDACTED + "\""), json);
        assertTrue(json.contains("stockade-locks"), json);
        assertTrue(json.contains("eu-west-1"), json);
        assertTrue(json.contains("http://127.0.0.1:8000"), json);
    }
}
