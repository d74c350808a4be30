package io.stockade.policy.yaml;

import java.io.IOException;
import java.io.InputStream;
import java.util.List;
import java.util.Map;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.TokenVerification;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.yaml.snakeyaml.Yaml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/** The JSON schema editors use must describe the same file the loader reads. */
class PolicySchemaTest {
    private static Map<String, Object> schema;

    @BeforeAll
    static void loadSchema() throws IOException {
        try (InputStream in = PolicySchemaTest.class.getResourceAsStream(
                "/io/stockade/policy/stockade-policy.schema.json")) {
            assertNotNull(in, "stockade-policy.schema.json is not on the class path in io/stockade/policy");
            schema = new Yaml().load(in); // JSON is YAML
        }
    }

    /** The value at a slash-separated path of keys and list indexes, e.g. {@code $defs/policy/properties}. */
    @SuppressWarnings("unchecked")
    private static <T> T at(String path) {
        Object node = schema;
        for (String step : path.split("/")) {
            node = node instanceof List<?> list
                    ? list.get(Integer.parseInt(step))
                    : ((Map<String, Object>) node).get(step);
            assertNotNull(node, "schema has nothing at " + path);
        }
        return (T) node;
    }

    private static List<String> keys(String path) {
        Map<String, Object> properties = at(path + "/properties");
        return List.copyOf(properties.keySet());
    }

    @Test
    void schemaIsDraft202012AndRequiresStoreAndPoliciesOrSql() {
        assertEquals("https://json-schema.org/draft/2020-12/schema", at("$schema"));
        assertEquals(List.of("store"), at("required"));
        assertEquals(List.of("policies"), at("anyOf/0/required"));
        assertEquals(List.of("sql"), at("anyOf/1/required"));
    }

    @Test
    void keywordEnumsListExactlyTheValuesTheLoaderAccepts() {
        String fence = "$defs/policy/properties/fence/properties/";
        assertEquals(List.copyOf(Vocabulary.MODES.keySet()), at(fence + "mode/enum"));
        assertEquals(List.copyOf(Vocabulary.MISSING.keySet()), at(fence + "missing/enum"));
        assertEquals(List.copyOf(Vocabulary.EQUAL.keySet()), at(fence + "equal/enum"));
        assertEquals(List.copyOf(Vocabulary.CONDITIONALS.keySet()),
                at("$defs/httpBackend/properties/conditional/enum"));
        assertEquals(List.copyOf(Vocabulary.FENCE_MODES.keySet()), at("$defs/postgresBackend/properties/fence/enum"));
        assertEquals(List.copyOf(Vocabulary.PARAM_SOURCES.keySet()),
                at("$defs/postgresBackend/properties/params/additionalProperties/anyOf/0/enum"));
        assertEquals(List.copyOf(Vocabulary.PARAM_TYPES.keySet()),
                at("$defs/postgresBackend/properties/params/additionalProperties/anyOf/1/properties/type/enum"));
        assertEquals("^" + Vocabulary.METHOD_TOKEN.pattern() + "$", at("$defs/methods/items/pattern"));
        assertEquals(List.copyOf(Vocabulary.S3_AUTH.keySet()), at("$defs/s3Backend/properties/auth/enum"));
        assertEquals(List.copyOf(Vocabulary.S3_FENCE_SCOPES.keySet()),
                at("$defs/s3Backend/properties/fence-scope/enum"));
        assertEquals(List.copyOf(Vocabulary.S3_UNSIGNED_READS.keySet()),
                at("$defs/s3Backend/properties/unsigned-reads/enum"));
        assertEquals(BackendConfig.S3.BUCKET_WRITES, at("$defs/s3Backend/properties/bucket-writes/items/enum"));
    }

    @Test
    void storeAlternativesAreExactlyTheStoreTypes() {
        String store = "properties/store/oneOf/";
        assertEquals(List.of("#/$defs/memoryStore", "#/$defs/postgresStore", "#/$defs/etcdStore"),
                List.of(at(store + "0/$ref"), at(store + "1/$ref"), at(store + "2/$ref")));
        assertEquals(Vocabulary.STORE_TYPES, List.of(at("$defs/memoryStore/properties/type/const"),
                at("$defs/postgresStore/properties/type/const"), at("$defs/etcdStore/properties/type/const")));
    }

    @Test
    void backendAlternativesAreExactlyTheBackendTypes() {
        String backend = "$defs/policy/properties/backend/oneOf/";
        assertEquals(List.of("#/$defs/fileBackend", "#/$defs/httpBackend", "#/$defs/postgresBackend",
                        "#/$defs/s3Backend"),
                List.of(at(backend + "0/$ref"), at(backend + "1/$ref"), at(backend + "2/$ref"),
                        at(backend + "3/$ref")));
        assertEquals(Vocabulary.BACKEND_TYPES, List.of(at("$defs/fileBackend/properties/type/const"),
                at("$defs/httpBackend/properties/type/const"), at("$defs/postgresBackend/properties/type/const"),
                at("$defs/s3Backend/properties/type/const")));
    }

    @Test
    void everyObjectAllowsExactlyTheKeysTheLoaderAccepts() {
        assertEquals(Vocabulary.ROOT_KEYS, List.copyOf(((Map<?, ?>) at("properties")).keySet()));
        assertEquals(Vocabulary.SERVER_KEYS, keys("properties/server"));
        assertEquals(Vocabulary.SERVER_TLS_KEYS, keys("properties/server/properties/tls"));
        assertEquals(Vocabulary.SERVER_LIMITS_KEYS, keys("properties/server/properties/limits"));
        assertEquals(List.copyOf(Vocabulary.CLIENT_AUTH.keySet()),
                at("properties/server/properties/tls/properties/client-auth/enum"));
        assertEquals(Vocabulary.MEMORY_STORE_KEYS, keys("$defs/memoryStore"));
        assertEquals(Vocabulary.POSTGRES_STORE_KEYS, keys("$defs/postgresStore"));
        assertEquals(Vocabulary.DATASOURCE_KEYS, keys("$defs/datasource"));
        assertEquals(Vocabulary.POSTGRES_BACKEND_KEYS, keys("$defs/postgresBackend"));
        assertEquals(Vocabulary.PARAM_KEYS,
                keys("$defs/postgresBackend/properties/params/additionalProperties/anyOf/1"));
        assertEquals(Vocabulary.STATEMENT_KEYS, keys("$defs/sqlStatement/anyOf/1"));
        assertEquals(Vocabulary.ETCD_STORE_KEYS, keys("$defs/etcdStore"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/etcdStore/properties/tls"));
        assertEquals(Vocabulary.CACHE_KEYS, keys("$defs/cache"));
        assertEquals(Vocabulary.ADMIN_KEYS, keys("properties/admin"));
        assertEquals(Vocabulary.POLICY_KEYS, keys("$defs/policy"));
        assertEquals(Vocabulary.MATCH_KEYS, keys("$defs/policy/properties/match"));
        assertEquals(Vocabulary.FENCE_KEYS, keys("$defs/policy/properties/fence"));
        assertEquals(Vocabulary.POLICY_LIMITS_KEYS, keys("$defs/policy/properties/limits"));
        assertEquals(Vocabulary.FILE_BACKEND_KEYS, keys("$defs/fileBackend"));
        assertEquals(Vocabulary.HTTP_BACKEND_KEYS, keys("$defs/httpBackend"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/httpBackend/properties/tls"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/s3Backend/properties/tls"));
        assertEquals(Vocabulary.S3_BACKEND_KEYS, keys("$defs/s3Backend"));
        assertEquals(Vocabulary.S3_CLIENT_KEYS, keys("$defs/s3Backend/properties/clients/items"));
        assertEquals(Vocabulary.ETCD_VERIFY_KEYS, keys("$defs/etcdVerify"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/etcdVerify/properties/tls"));
        assertEquals(Vocabulary.POSTGRES_VERIFY_KEYS, keys("$defs/postgresVerify"));
        assertEquals(Vocabulary.KUBERNETES_VERIFY_KEYS, keys("$defs/kubernetesVerify"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/kubernetesVerify/properties/tls"));
        assertEquals(Vocabulary.HMAC_VERIFY_KEYS, keys("$defs/hmacVerify"));
        assertEquals(Vocabulary.HMAC_KEY_KEYS, keys("$defs/hmacVerify/properties/keys/items"));
        assertEquals(Vocabulary.VERIFY_CACHE_KEYS, keys("$defs/verifyCache"));
        assertEquals(Vocabulary.REDIS_VERIFY_KEYS, keys("$defs/redisVerify"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/redisVerify/properties/tls"));
        assertEquals(Vocabulary.ZOOKEEPER_VERIFY_KEYS, keys("$defs/zookeeperVerify"));
        assertEquals(Vocabulary.CONSUL_VERIFY_KEYS, keys("$defs/consulVerify"));
        assertEquals(Vocabulary.TLS_KEYS, keys("$defs/consulVerify/properties/tls"));
        assertEquals(Vocabulary.DYNAMODB_VERIFY_KEYS, keys("$defs/dynamodbVerify"));
        assertEquals(Vocabulary.SQL_KEYS, keys("properties/sql"));
        assertEquals(Vocabulary.SQL_LISTEN_KEYS, keys("properties/sql/properties/listen"));
        assertEquals(Vocabulary.SQL_DATABASE_KEYS, keys("properties/sql/properties/database"));
        assertEquals(Vocabulary.SQL_POLICY_KEYS, keys("$defs/sqlPolicy"));
        assertEquals(Vocabulary.SQL_TABLE_KEYS, keys("$defs/sqlPolicy/properties/tables/items"));
        assertEquals(Vocabulary.SQL_FENCE_KEYS, keys("$defs/sqlPolicy/properties/fence"));
        assertEquals(List.copyOf(Vocabulary.DIRECT_CLIENTS.keySet()),
                at("properties/sql/properties/direct-clients/enum"));
        assertEquals((Object) at("$defs/policy/properties/fence/properties/verify"),
                at("$defs/sqlPolicy/properties/fence/properties/verify"));
        assertEquals(Vocabulary.VERIFY_KINDS, List.of(at("$defs/etcdVerify/properties/kind/const"),
                at("$defs/postgresVerify/properties/kind/const"), at("$defs/kubernetesVerify/properties/kind/const"),
                at("$defs/redisVerify/properties/kind/const"), at("$defs/zookeeperVerify/properties/kind/const"),
                at("$defs/consulVerify/properties/kind/const"), at("$defs/dynamodbVerify/properties/kind/const"),
                at("$defs/hmacVerify/properties/kind/const")));
        String verify = "$defs/policy/properties/fence/properties/verify/oneOf/";
        assertEquals(List.of("#/$defs/etcdVerify", "#/$defs/postgresVerify", "#/$defs/kubernetesVerify",
                "#/$defs/redisVerify", "#/$defs/zookeeperVerify", "#/$defs/consulVerify", "#/$defs/dynamodbVerify",
                "#/$defs/hmacVerify"),
                List.of(at(verify + "0/$ref"), at(verify + "1/$ref"), at(verify + "2/$ref"), at(verify + "3/$ref"),
                        at(verify + "4/$ref"), at(verify + "5/$ref"), at(verify + "6/$ref"), at(verify + "7/$ref")));
    }

    /**
     * The schema's bounds on {@code fence.verify} values are the loader's: a written prefix is not empty (none is
     * the default; the loader refuses {@code prefix: ""}), and a key written in the file has at least the loader's
     * minimum length unless it is an environment reference (whose value the loader checks).
     */
    @Test
    void verifyBoundsAreTheLoaders() {
        assertEquals(1, (Integer) at("$defs/etcdVerify/properties/prefix/minLength"));
        assertEquals(1, (Integer) at("$defs/postgresVerify/properties/prefix/minLength"));
        assertEquals(1, (Integer) at("$defs/redisVerify/properties/prefix/minLength"));
        assertEquals("^/", at("$defs/zookeeperVerify/properties/prefix/pattern"));
        assertEquals("^[^/]", at("$defs/consulVerify/properties/prefix/pattern"));
        assertEquals(1, (Integer) at("$defs/dynamodbVerify/properties/prefix/minLength"));
        // the loader's patterns (VerifyReader) for a DynamoDB table name and an AWS region
        assertEquals("^[A-Za-z0-9_.-]{3,255}$", at("$defs/dynamodbVerify/properties/table/pattern"));
        assertEquals("^[a-z]{2,}(-[a-z0-9]+)+$", at("$defs/dynamodbVerify/properties/region/pattern"));
        // the loader's patterns (VerifyReader) for a Kubernetes namespace and Lease name prefix
        assertEquals("^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$", at("$defs/kubernetesVerify/properties/namespace/pattern"));
        assertEquals("^[a-z0-9][-a-z0-9.]{0,251}$", at("$defs/kubernetesVerify/properties/prefix/pattern"));
        String key = "$defs/hmacVerify/properties/keys/items/properties/key/anyOf/";
        assertEquals("string", at(key + "0/type"));
        assertEquals(TokenVerification.SharedKey.MIN_LENGTH, (Integer) at(key + "0/minLength"));
        assertEquals("#/$defs/envReference", at(key + "1/$ref"));
    }

    @Test
    void everyObjectRefusesKeysItDoesNotList() {
        assertEquals(false, schema.get("additionalProperties"));
        for (String path : List.of("properties/server", "properties/server/properties/tls", "$defs/memoryStore",
                "$defs/postgresStore", "$defs/datasource", "$defs/postgresBackend", "$defs/etcdStore",
                "$defs/etcdStore/properties/tls", "$defs/cache", "properties/admin", "$defs/policy",
                "$defs/policy/properties/match", "$defs/policy/properties/fence", "$defs/fileBackend",
                "$defs/httpBackend", "$defs/httpBackend/properties/tls", "$defs/s3Backend",
                "$defs/s3Backend/properties/tls", "$defs/s3Backend/properties/clients/items",
                "$defs/etcdVerify", "$defs/etcdVerify/properties/tls", "$defs/postgresVerify", "$defs/hmacVerify",
                "$defs/kubernetesVerify", "$defs/kubernetesVerify/properties/tls",
                "$defs/redisVerify", "$defs/redisVerify/properties/tls", "$defs/zookeeperVerify",
                "$defs/consulVerify", "$defs/consulVerify/properties/tls", "$defs/dynamodbVerify",
                "$defs/hmacVerify/properties/keys/items", "$defs/verifyCache", "properties/sql",
                "properties/sql/properties/listen", "properties/sql/properties/database", "$defs/sqlPolicy",
                "$defs/sqlPolicy/properties/tables/items", "$defs/sqlPolicy/properties/fence")) {
            assertEquals(false, at(path + "/additionalProperties"), path);
        }
    }
}
