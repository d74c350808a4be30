package io.stockade.policy.yaml;

import java.io.IOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.ClientTls;
import io.stockade.policy.Policy;
import io.stockade.policy.PolicyError;
import io.stockade.policy.PolicyException;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

class PolicyLoaderTest {
    private static final Path SOURCE = Path.of("test.yaml");

    private static final String MINIMAL = """
            store:
              type: memory
              journal: /var/lib/stockade
            policies:
              - name: files
                match:
                  path: /files/{path...}
                scope: files/{path}
                backend:
                  type: file
                  root: /srv/files
            """;

    private static StockadeConfig parse(String yaml) throws PolicyException {
        return PolicyLoader.parse(yaml, SOURCE, Map.of());
    }

    private static List<PolicyError> errors(String yaml, Map<String, String> env) {
        return assertThrows(PolicyException.class, () -> PolicyLoader.parse(yaml, SOURCE, env)).errors();
    }

    /** An s3 policy whose backend block ends the text, so that a test can append backend keys to it. */
    private static final String S3_POLICY = """
            store: {type: memory, journal: /tmp/j}
            policies:
              - name: s3
                match: {path: "/{path...}"}
                scope: s3
                backend:
                  type: s3
                  endpoint: http://127.0.0.1:9000
                  access-key: a
                  secret-key: b
                  auth: sigv4
                  clients: [{access-key: c, secret-key: d}]
            """;

    /**
     * S3 fences operations, not methods: {@code fence: {methods: [PUT, DELETE]}} read as "fence the writes" left the
     * multipart steps and DeleteObjects (POST) unfenced; it is refused where it is written, saying what to do.
     */
    @Test
    void anS3PolicyNamingFencedMethodsIsRefusedWhereItNamesThem() {
        String yaml = S3_POLICY.replace("    scope: s3\n",
                "    scope: s3\n    fence: {missing: reject, methods: [PUT, DELETE]}\n");
        List<PolicyError> errors = errors(yaml, Map.of());
        assertEquals(1, errors.size(), errors.toString());
        String message = errors.getFirst().toString();
        assertTrue(message.contains("policies[0].fence.methods"), message);
        assertTrue(message.contains("S3 fences operations, not HTTP methods"), message);
        assertTrue(message.contains(":6:"), "the line of the list: " + message);
    }

    @Test
    void anS3TokenMustBeSignedUnlessThePolicySaysOtherwise() throws Exception {
        String yaml = S3_POLICY;
        BackendConfig.S3 signed = (BackendConfig.S3) parse(yaml).policies().getFirst().backend();
        assertTrue(signed.signedToken());
        BackendConfig.S3 unsigned = (BackendConfig.S3) parse(yaml + "      signed-token: false\n").policies()
                .getFirst().backend();
        assertFalse(unsigned.signedToken());
        assertFalse(signed.tokenFromMetadata());
        BackendConfig.S3 metadata = (BackendConfig.S3) parse(yaml + "      token-from-metadata: true\n").policies()
                .getFirst().backend();
        assertTrue(metadata.tokenFromMetadata());
        List<PolicyError> bad = errors(yaml + "      token-from-metadata: sometimes\n", Map.of());
        assertEquals(1, bad.size(), bad.toString());
        assertTrue(bad.getFirst().toString().contains("token-from-metadata"), bad.toString());
    }

    @Test
    void theS3EtagCacheIsOffUnlessAskedForAndOnlyForTheAtomicClass() throws Exception {
        String yaml = S3_POLICY;
        assertEquals(0, ((BackendConfig.S3) parse(yaml).policies().getFirst().backend()).etagCache());
        assertEquals(50_000, ((BackendConfig.S3) parse(yaml + "      etag-cache: 50000\n").policies().getFirst()
                .backend()).etagCache());
        for (String other : List.of("      fence-scope: prefix\n", "      conditional-writes: false\n")) {
            List<PolicyError> bad = errors(yaml + other + "      etag-cache: 10\n", Map.of());
            assertEquals(1, bad.size(), bad.toString());
            assertTrue(bad.getFirst().toString().contains("etag-cache")
                    && bad.getFirst().toString().contains("atomic class"), bad.toString());
        }
        assertEquals(0, ((BackendConfig.S3) parse(yaml + "      fence-scope: prefix\n      etag-cache: 0\n")
                .policies().getFirst().backend()).etagCache());
        List<PolicyError> negative = errors(yaml + "      etag-cache: -1\n", Map.of());
        assertEquals(1, negative.size(), negative.toString());
        assertTrue(negative.getFirst().toString().contains("etag-cache"), negative.toString());
    }

    @Test
    void s3BucketWritesAreRefusedUnlessThePolicyNamesThem() throws Exception {
        String yaml = S3_POLICY;
        BackendConfig.S3 none = (BackendConfig.S3) parse(yaml).policies().getFirst().backend();
        assertEquals(java.util.Set.of(), none.bucketWrites());
        assertFalse(none.distinctKeys());
        BackendConfig.S3 some = (BackendConfig.S3) parse(yaml + "      bucket-writes: [delete, cors, lifecycle]\n"
                + "      distinct-keys: true\n").policies().getFirst().backend();
        assertEquals(java.util.Set.of("delete", "cors", "lifecycle"), some.bucketWrites());
        assertTrue(some.distinctKeys());
        List<PolicyError> unknown = errors(yaml + "      bucket-writes: [delete, lifecyle, everything]\n", Map.of());
        assertEquals(2, unknown.size(), unknown.toString());
        assertEquals(13, unknown.getFirst().line(), unknown.toString());
        assertEquals(31, unknown.getFirst().column(), unknown.toString());
        assertTrue(unknown.getFirst().message().contains("unknown bucket write 'lifecyle'; did you mean 'lifecycle'?")
                && unknown.getFirst().message().contains("valid: create, delete, abac"), unknown.toString());
        List<PolicyError> twice = errors(yaml + "      bucket-writes: [delete, delete]\n", Map.of());
        assertEquals(1, twice.size(), twice.toString());
        assertTrue(twice.getFirst().message().contains("listed twice"), twice.toString());
        List<PolicyError> notAList = errors(yaml + "      bucket-writes: delete\n", Map.of());
        assertEquals(1, notAList.size(), notAList.toString());
    }

    @Test
    void unsignedS3ReadsAreRefusedUnlessThePolicyForwardsThem() throws Exception {
        String yaml = S3_POLICY;
        assertEquals(BackendConfig.UnsignedReads.REFUSE,
                ((BackendConfig.S3) parse(yaml).policies().getFirst().backend()).unsignedReads());
        assertEquals(BackendConfig.UnsignedReads.FORWARD, ((BackendConfig.S3) parse(yaml
                + "      unsigned-reads: forward\n").policies().getFirst().backend()).unsignedReads());
        List<PolicyError> bad = errors(yaml + "      unsigned-reads: public\n", Map.of());
        assertEquals(1, bad.size(), bad.toString());
        assertTrue(bad.getFirst().toString().contains("refuse") && bad.getFirst().toString().contains("forward"),
                bad.toString());
    }

    @Test
    void leftOutKeysTakeTheDefaultsOfTheModel() throws Exception {
        StockadeConfig config = parse(MINIMAL);

        assertEquals(SOURCE, config.source());
        assertEquals(new ServerConfig(ServerConfig.DEFAULT_HOST, ServerConfig.DEFAULT_PORT), config.server());
        assertEquals(new StoreConfig.Memory(Path.of("/var/lib/stockade"),
                StoreConfig.Memory.DEFAULT_COMPACT_AFTER_BYTES), config.store());
        Policy policy = config.policies().getFirst();
        assertEquals(Set.of(), policy.match().methods());
        assertEquals(Policy.Fence.defaults(), policy.fence());
        assertEquals(Policy.Limits.defaults(), policy.limits());
        assertEquals(ServerConfig.Limits.defaults(), config.server().limits());
    }

    @Test
    void everyLimitIsRead() throws Exception {
        StockadeConfig config = parse("""
                server:
                  limits: {max-request-line-bytes: 2KiB, max-header-bytes: 4KiB, max-body-bytes: 1GiB,
                           header-timeout: 2s, idle-timeout: 20s, read-timeout: 5s}
                store: {type: memory, journal: ./j}
                policies:
                  - name: files
                    match: {path: "/files/{path...}"}
                    scope: files/{path}
                    backend: {type: file, root: ./f}
                    limits: {max-header-bytes: 1KiB, max-body-bytes: 10MiB, body-timeout: 30s,
                             max-concurrent-per-scope: 4}
                """);
        assertEquals(new ServerConfig.Limits(2048, 4096, 1L << 30, Duration.ofSeconds(2), Duration.ofSeconds(20),
                Duration.ofSeconds(5)), config.server().limits());
        assertEquals(new Policy.Limits(1024, 10L << 20, Duration.ofSeconds(30), 4),
                config.policies().getFirst().limits());
    }

    @Test
    void everyHttpBackendKeyIsRead() throws Exception {
        StockadeConfig config = parse("""
                store: {type: memory, journal: ./j, compact-after: 512KiB}
                policies:
                  - name: docs
                    match: {path: "/docs/{id}", methods: [GET, PUT]}
                    scope: docs/{id}
                    fence: {header: X-Token, methods: [PUT], missing: allow, equal: reject, mode: off}
                    backend:
                      type: http
                      url: https://upstream.example:8443/base
                      conditional: if-match
                      connect-timeout: 250ms
                      timeout: 2m
                      settle: 1h
                      max-connections: 10000
                """);

        assertEquals(512L * 1024, ((StoreConfig.Memory) config.store()).compactAfterBytes());
        Policy docs = config.policies().getFirst();
        assertEquals(Set.of("GET", "PUT"), docs.match().methods());
        assertEquals(new Policy.Fence("X-Token", Set.of("PUT"), Policy.MissingToken.ALLOW, Policy.EqualToken.REJECT,
                Policy.Mode.OFF), docs.fence());
        assertEquals(new BackendConfig.Http(URI.create("https://upstream.example:8443/base"),
                BackendConfig.Conditional.IF_MATCH, Duration.ofMillis(250), Duration.ofMinutes(2), Duration.ofHours(1),
                10_000), docs.backend());
    }

    /** Issue 46, item 5: a scope's first token is bounded; by default by max-advance, none with verify. */
    @Test
    void theFirstTokenIsBoundedByFirstTokenMaxByDefaultMaxAdvance() throws Exception {
        Policy.Fence capped = parse(MINIMAL.replace("scope: files/{path}",
                "scope: files/{path}\n    fence: {max-advance: 100}")).policies().getFirst().fence();
        assertEquals(100, capped.firstTokenMax());
        assertTrue(capped.tooFar(101, -1));
        assertFalse(capped.tooFar(100, -1));
        assertTrue(capped.tooFar(206, 105));
        assertFalse(capped.tooFar(205, 105));
        Policy.Fence explicit = parse(MINIMAL.replace("scope: files/{path}",
                "scope: files/{path}\n    fence: {max-advance: 100, first-token-max: 5000000}")).policies().getFirst()
                .fence();
        assertEquals(5_000_000, explicit.firstTokenMax());
        assertFalse(explicit.tooFar(5_000_000, -1));
        assertTrue(explicit.tooFar(5_000_001, -1));
        Policy.Fence open = parse(MINIMAL).policies().getFirst().fence();
        assertEquals(Policy.Fence.UNLIMITED, open.firstTokenMax(), "no max-advance: no scope is bounded anyway");
        assertFalse(open.mayBeTooFar(Long.MAX_VALUE));
        assertTrue(explicit.mayBeTooFar(1));
    }

    /** Issue 46: a serialized policy's settle shorter than its timeout is advised against (logged at load). */
    @Test
    void aSerializedSettleShorterThanTheTimeoutIsAdvisedAgainst() {
        URI url = URI.create("http://upstream.example");
        BackendConfig.Http shortSettle = new BackendConfig.Http(url, BackendConfig.Conditional.NONE,
                Duration.ofSeconds(2), Duration.ofSeconds(30), Duration.ofSeconds(5), 8);
        assertTrue(shortSettle.settleAdvice().orElseThrow().startsWith(
                "settle (5000 ms) is shorter than timeout (30000 ms)"), shortSettle.settleAdvice().toString());
        assertTrue(new BackendConfig.Http(url, BackendConfig.Conditional.NONE, Duration.ofSeconds(2),
                Duration.ofSeconds(30), Duration.ofSeconds(30), 8).settleAdvice().isEmpty());
        assertTrue(new BackendConfig.Http(url, BackendConfig.Conditional.IF_MATCH, Duration.ofSeconds(2),
                Duration.ofSeconds(30), Duration.ofMillis(1), 8).settleAdvice().isEmpty(), "a late if-match write"
                + " cannot land");
    }

    @Test
    void upstreamTlsNamesPemFilesThatExist(@TempDir Path dir) throws Exception {
        for (String name : List.of("ca.pem", "cert.pem", "key.pem")) {
            Files.writeString(dir.resolve(name), "PEM\n");
        }
        StockadeConfig config = parse(MINIMAL.replace("type: file\n      root: /srv/files", """
                type: http
                      url: https://upstream.example
                      tls: {ca: %1$s/ca.pem, cert: %1$s/cert.pem, key: %1$s/key.pem}""".formatted(dir)));

        assertEquals(new ClientTls(dir.resolve("ca.pem"), dir.resolve("cert.pem"), dir.resolve("key.pem")),
                ((BackendConfig.Http) config.policies().getFirst().backend()).tls());
    }

    @Test
    void defaultFencedMethodsAreThoseTheMatchTakes() throws Exception {
        Policy policy = parse(MINIMAL.replace("path: /files/{path...}", "path: /files/{path...}\n"
                + "      methods: [GET, PUT, DELETE]")).policies().getFirst();

        assertEquals(Set.of("PUT", "DELETE"), policy.fence().methods());
    }

    @Test
    void anyMethodTokenCanBeNamedAndEveryMethodNamedButTheSafeOnesIsFencedByDefault() throws Exception {
        Policy policy = parse(MINIMAL.replace("path: /files/{path...}", "path: /files/{path...}\n"
                + "      methods: [GET, HEAD, PUT, MKCOL, PROPFIND, PROPPATCH, PURGE, VERSION-CONTROL, OPTIONS]"))
                .policies().getFirst();

        assertEquals(Set.of("GET", "HEAD", "PUT", "MKCOL", "PROPFIND", "PROPPATCH", "PURGE", "VERSION-CONTROL",
                "OPTIONS"), policy.match().methods());
        assertEquals(Set.of("PUT", "MKCOL", "PROPPATCH", "PURGE", "VERSION-CONTROL"), policy.fence().methods());
    }

    @Test
    void withoutMatchMethodsTheDefaultFenceStaysTheFourWriteMethods() throws Exception {
        assertEquals(Set.of("PUT", "POST", "PATCH", "DELETE"), parse(MINIMAL).policies().getFirst().fence().methods());
    }

    @Test
    void methodsAreMatchedAndFencedExactlyAsSpelled() throws Exception {
        StockadeConfig config = parse(MINIMAL.replace("path: /files/{path...}", "path: /files/{path...}\n"
                + "      methods: [GET, PUT]"));
        Policy policy = config.policies().getFirst();

        assertTrue(config.route("PUT", "/files/a").isPresent());
        assertTrue(config.route("put", "/files/a").isEmpty(), "put is another method than PUT");
        assertTrue(policy.fences("PUT"));
        assertFalse(policy.fences("put"));
        assertFalse(policy.fences("Put"));
    }

    @Test
    void policiesOnOnePathSplitByMethodsOutsideTheOldSevenStillOverlapWhenTheyShareOne() {
        List<PolicyError> errors = errors("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: a
                    match: {path: "/x/{id}", methods: [GET, PURGE]}
                    scope: x/{id}
                    backend: {type: http, url: http://127.0.0.1:9000}
                  - name: b
                    match: {path: "/x/{id}", methods: [PURGE, MKCOL]}
                    scope: x/{id}
                    backend: {type: http, url: http://127.0.0.1:9000}
                """, Map.of());

        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.getFirst().message().contains("(paths /x/{id} and /x/{id}; methods PURGE)"),
                errors.toString());
    }

    @Test
    void copyAndMoveWithPerResourceScopesOverATemplateWithoutAGreedyVariableAreTaken() throws Exception {
        Policy policy = parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: dav
                    match: {path: "/dav/{dir}/{name}", methods: [GET, HEAD, PUT, DELETE, COPY, MOVE]}
                    scope: dav/{dir}/{name}
                    backend: {type: http, url: http://127.0.0.1:9000/}
                  - name: other
                    match: {path: "/other/{name}"}
                    scope: other/{name}
                    backend: {type: http, url: http://127.0.0.1:9000/}
                """).policies().getFirst();

        assertEquals(Set.of("PUT", "DELETE", "COPY", "MOVE"), policy.fence().methods());
    }

    @Test
    void sizesTakeBinarySuffixes() throws Exception {
        for (var size : Map.of("1", 1L, "3KiB", 3L << 10, "64MiB", 64L << 20, "2GiB", 2L << 30).entrySet()) {
            StockadeConfig config = parse(MINIMAL.replace("journal: /var/lib/stockade",
                    "journal: /var/lib/stockade\n  compact-after: " + size.getKey()));
            assertEquals(size.getValue(), ((StoreConfig.Memory) config.store()).compactAfterBytes(), size.getKey());
        }
    }

    @Test
    void relativePathsAreKeptAsWrittenForTheWorkingDirectoryToResolve() throws Exception {
        StockadeConfig config = parse(MINIMAL.replace("/var/lib/stockade", "./data/journal")
                .replace("/srv/files", "files"));

        assertEquals(Path.of("./data/journal"), ((StoreConfig.Memory) config.store()).journal());
        assertEquals(Path.of("files"), ((BackendConfig.File) config.policies().getFirst().backend()).root());
    }

    @Test
    void environmentIsSubstitutedBeforeTypeConversion() throws Exception {
        String yaml = "server: {host: '${HOST:-0.0.0.0}', port: '${PORT}'}\n" + MINIMAL.replace("/srv/files",
                "${DATA}/files-$${literal}");

        StockadeConfig config = PolicyLoader.parse(yaml, SOURCE, Map.of("PORT", "9000", "DATA", "/data"));

        assertEquals(new ServerConfig("0.0.0.0", 9000), config.server());
        assertEquals(Path.of("/data/files-${literal}"),
                ((BackendConfig.File) config.policies().getFirst().backend()).root());
    }

    @Test
    void substitutedValueIsValidatedLikeAWrittenOne() {
        List<PolicyError> errors = errors("server: {port: '${PORT}'}\n" + MINIMAL, Map.of("PORT", "eighty"));

        assertEquals("test.yaml:1:16: server.port: expected a port number 0..65535, got 'eighty'",
                errors.getFirst().toString());
    }

    @Test
    void unknownKeySuggestsClosestValidKey() {
        List<PolicyError> errors = errors(MINIMAL.replace("journal:", "jornal:"), Map.of());

        assertEquals(List.of(
                "test.yaml:2:3: store: missing required key 'journal'",
                "test.yaml:3:3: store.jornal: unknown key 'jornal'; did you mean 'journal'? valid: type, journal,"
                        + " compact-after, max-scopes, max-scope-memory, heal-within"),
                errors.stream().map(PolicyError::toString).toList());
    }

    @Test
    void snakeCaseAndCamelCaseKeysAreSteeredToKebabCase() {
        String yaml = MINIMAL.replace("journal: /var/lib/stockade", "journal: /j\n  compactAfter: 1GiB");

        assertEquals("unknown key 'compactAfter'; did you mean 'compact-after'? valid: type, journal, compact-after,"
                + " max-scopes, max-scope-memory, heal-within", errors(yaml, Map.of()).getFirst().message());
    }

    @Test
    void exceptionMessageListsEveryErrorOnItsOwnLineInFileOrder() {
        String yaml = MINIMAL.replace("type: file", "type: file\n      extra: 1").replace("type: memory",
                "type: memory\n  extra: 1");

        PolicyException e = assertThrows(PolicyException.class, () -> PolicyLoader.parse(yaml, SOURCE, Map.of()));

        assertEquals("""
                test.yaml:3:3: store.extra: unknown key 'extra'; valid: type, journal, compact-after, max-scopes, \
                max-scope-memory, heal-within
                test.yaml:12:7: policies[0].backend.extra: unknown key 'extra'; valid: type, root""", e.getMessage());
    }

    /**
     * S3 round four, item 4: a policy whose path begins with more literal segments serves the requests it shares
     * with another (a bucket of its own under a catch-all); one request, one policy.
     */
    @Test
    void ofTwoPoliciesThatMatchARequestTheOneWithTheLongerLiteralBeginningServesIt() throws Exception {
        StockadeConfig config = parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: all
                    match: {path: "/{rest...}"}
                    scope: all
                    backend: {type: file, root: ./all}
                  - name: items
                    match: {path: "/items/{id}", methods: [PUT, DELETE]}
                    scope: items/{id}
                    backend: {type: file, root: ./items}
                  - name: item-seven
                    match: {path: "/items/7"}
                    scope: seven
                    fence: {mode: observe}
                    backend: {type: file, root: ./seven}
                """);

        assertEquals("items", config.route("PUT", "/items/1").orElseThrow().policy().name());
        assertEquals("all", config.route("GET", "/items/1").orElseThrow().policy().name(), "items takes no GET");
        assertEquals("all", config.route("PUT", "/items/1/x").orElseThrow().policy().name());
        assertEquals("item-seven", config.route("PUT", "/items/7").orElseThrow().policy().name());
        assertEquals("item-seven", config.route("GET", "/items/7").orElseThrow().policy().name());
        assertEquals("all", config.route("PUT", "/other").orElseThrow().policy().name());
        assertEquals("items", config.policyForRefusal("PUT", "/items/1").orElseThrow().name());
    }

    /** A bucket of its own under an s3 catch-all: its keys and its bucket path, a pair (docs/s3.md). */
    @Test
    void aBucketOfItsOwnServesItsKeysAndItsBucketPath() throws Exception {
        String yaml = S3_POLICY.replace("    backend:\n      type: s3", "    backend: &s3\n      type: s3") + """
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
        StockadeConfig config = parse(yaml);

        assertEquals("restic", config.route("PUT", "/restic/data/k").orElseThrow().policy().name());
        assertEquals("restic-bucket", config.route("POST", "/restic").orElseThrow().policy().name());
        assertEquals("s3", config.route("PUT", "/reports/k").orElseThrow().policy().name());
        assertEquals("s3", config.route("POST", "/reports").orElseThrow().policy().name());

        List<PolicyError> errors = errors(yaml.substring(0, yaml.indexOf("  - name: restic-bucket")), Map.of());
        assertEquals(1, errors.size(), errors.toString());
        assertTrue(errors.getFirst().message().contains("add a policy for the path /restic"), errors.toString());
    }

    @Test
    void policiesThatTakeDisjointMethodsOnTheSamePathDoNotOverlap() throws Exception {
        StockadeConfig config = parse("""
                store: {type: memory, journal: ./j}
                policies:
                  - name: reads
                    match: {path: "/x/{id}", methods: [GET, HEAD]}
                    scope: x/{id}
                    fence: {mode: off}
                    backend: {type: file, root: ./x}
                  - name: writes
                    match: {path: "/x/{id}", methods: [PUT]}
                    scope: x/{id}
                    backend: {type: file, root: ./x}
                """);

        assertEquals("reads", config.route("GET", "/x/1").orElseThrow().policy().name());
        assertEquals("writes", config.route("PUT", "/x/1").orElseThrow().policy().name());
    }

    @Test
    void characterYamlForbidsIsReportedWhereItIs() {
        assertEquals("test.yaml:2:4: (yaml): character U+0007 is not allowed in YAML",
                errors("a: 1\nb: \u0007\n", Map.of()).getFirst().toString());
    }

    @Test
    void aSecondDocumentIsAnError() {
        assertEquals("test.yaml:12:1: (yaml): expected a single document in the stream, but found another document",
                errors(MINIMAL + "---\nstore: {}\n", Map.of()).getFirst().toString());
    }

    @Test
    void loadReadsTheFileAndNamesItInErrors(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("stockade.yaml");
        Files.writeString(file, MINIMAL.replace("journal: /var/lib/stockade", "compact-after: 1GiB"));

        PolicyException e = assertThrows(PolicyException.class, () -> PolicyLoader.load(file));

        assertEquals(List.of(file + ":2:3: store: missing required key 'journal'"),
                e.errors().stream().map(PolicyError::toString).toList());
    }

    @Test
    void loadReportsAMissingFile(@TempDir Path dir) {
        Path file = dir.resolve("absent.yaml");

        PolicyException e = assertThrows(PolicyException.class, () -> PolicyLoader.load(file));

        assertEquals(List.of(new PolicyError(file, 1, 1, "(file)", "no such file")), e.errors());
    }

    @Test
    void loadRefusesTextThatIsNotUtf8(@TempDir Path dir) throws IOException {
        Path file = dir.resolve("latin1.yaml");
        Files.write(file, "store: caf\u00e9\n".getBytes(StandardCharsets.ISO_8859_1));

        PolicyException e = assertThrows(PolicyException.class, () -> PolicyLoader.load(file));

        assertEquals("not UTF-8 text", e.errors().getFirst().message());
    }
}
