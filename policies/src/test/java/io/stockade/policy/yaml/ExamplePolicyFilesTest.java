package io.stockade.policy.yaml;

import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

import io.stockade.policy.BackendConfig;
import io.stockade.policy.Policy;
import io.stockade.policy.ServerConfig;
import io.stockade.policy.StockadeConfig;
import io.stockade.policy.StoreConfig;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The files in {@code policies/examples} are what users copy first: each must load. */
class ExamplePolicyFilesTest {
    private static final Path EXAMPLES = Path.of("examples");

    static Stream<Path> exampleFiles() throws IOException {
        List<Path> files;
        try (Stream<Path> listing = Files.list(EXAMPLES)) {
            files = listing.filter(p -> p.toString().endsWith(".yaml")).sorted().toList();
        }
        assertFalse(files.isEmpty(), "no examples in " + EXAMPLES.toAbsolutePath());
        return files.stream();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("exampleFiles")
    void everyExampleLoadsWithoutEnvironment(Path file) throws Exception {
        StockadeConfig config = PolicyLoader.parse(Files.readString(file), file, Map.of());
        assertFalse(config.policies().isEmpty() && config.sql() == null, file + " fences nothing");
    }

    /**
     * The first-hour report: the examples shared ./stockade-data/journal, so trying one leaked its fences into the
     * next.
     */
    @Test
    void everyExampleKeepsItsFencesInAJournalOfItsOwn() throws Exception {
        List<Path> files = exampleFiles().toList();
        Set<Path> journals = new java.util.HashSet<>();
        for (Path file : files) {
            StockadeConfig config = PolicyLoader.parse(Files.readString(file), file, Map.of());
            switch (config.store()) {
                case StoreConfig.Memory memory ->
                        assertTrue(journals.add(memory.journal().normalize()), file + " shares " + memory.journal());
                // the replicas example: its own etcd (scripts/example.sh starts one), under its own prefix
                case StoreConfig.Etcd etcd -> assertTrue(etcd.prefix().contains("example"), file.toString());
                default -> throw new AssertionError(file + ": a store the examples do not use " + config.store());
            }
        }
        assertTrue(journals.size() >= files.size() - 1, "journals: " + journals);
    }

    @Test
    void quickstartFencesPutAndDeleteOfFilesUnderALocalDirectory() throws Exception {
        StockadeConfig config = PolicyLoader.load(EXAMPLES.resolve("quickstart.yaml"));

        assertEquals(new ServerConfig("127.0.0.1", 8080), config.server());
        assertEquals(new StoreConfig.Memory(Path.of("./stockade-data/journal"), 64L << 20), config.store());
        Policy files = config.policies().getFirst();
        assertEquals("files", files.name());
        assertEquals("/files/{path...}", files.match().path().toString());
        assertEquals(Set.of("GET", "HEAD", "PUT", "DELETE"), files.match().methods());
        assertEquals("files/{path}", files.scope().toString());
        assertEquals(new Policy.Fence("Fencing-Token", Set.of("PUT", "DELETE"), Policy.MissingToken.REJECT,
                Policy.EqualToken.ACCEPT, Policy.Mode.ENFORCE), files.fence());
        assertEquals(new BackendConfig.File(Path.of("./stockade-data/files")), files.backend());
        assertEquals("files/notes/today.txt", config.route("PUT", "/files/notes/today.txt").orElseThrow().scope());
    }

    @Test
    void httpUpstreamTakesItsUrlFromTheEnvironmentWhenSet() throws Exception {
        Path file = EXAMPLES.resolve("http-upstream.yaml");
        StockadeConfig config = PolicyLoader.parse(Files.readString(file), file,
                Map.of("DOCS_URL", "https://docs.internal", "STOCKADE_PORT", "9090"));

        assertEquals(9090, config.server().port());
        var documents = (BackendConfig.Http) config.policies().get(0).backend();
        assertEquals(URI.create("https://docs.internal"), documents.url());
        assertEquals(BackendConfig.Conditional.NONE, documents.conditional());
        assertEquals(Duration.ofSeconds(60), documents.settle());
        var objects = (BackendConfig.Http) config.policies().get(1).backend();
        assertEquals(BackendConfig.Conditional.IF_MATCH, objects.conditional());
        assertEquals(Policy.EqualToken.REJECT, config.policies().get(1).fence().equal());
    }

    @Test
    void observeExampleForwardsEverythingAndAllowsTokenlessWriters() throws Exception {
        Policy reports = PolicyLoader.load(EXAMPLES.resolve("observe.yaml")).policies().getFirst();

        assertEquals(Policy.Mode.OBSERVE, reports.fence().mode());
        assertEquals(Policy.MissingToken.ALLOW, reports.fence().missing());
        assertTrue(reports.match().methods().isEmpty());
        assertEquals(Policy.Fence.DEFAULT_METHODS, reports.fence().methods());
    }
}
